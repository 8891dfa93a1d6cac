// Command prom gathers compactkit's Prometheus collectors of a state
// machine that holds three waiting level-0 blocks.
package main

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/metrics/prom"
	"github.com/compactkit/compactkit/raftfsm"
)

func main() {
	fsm, err := raftfsm.New(raftfsm.DefaultConfig())
	if err != nil {
		log.Fatal(err)
	}
	svc := leader.New(leadertest.NewMemLog(fsm), fsm)
	defer svc.Close()
	var blocks []ck.BlockMeta
	for i := range 3 {
		blocks = append(blocks, leadertest.Block(fmt.Sprint("seg-", i), "acme", 0, int64(i)*int64(time.Second)))
	}
	if _, err := svc.AddBlocks(context.Background(), blocks); err != nil {
		log.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(prom.NewFSMCollector(fsm.Stats), prom.NewLeaderCollector(svc.Metrics))
	mfs, err := reg.Gather()
	if err != nil {
		log.Fatal(err)
	}
	queued := -1.0
	for _, mf := range mfs {
		if mf.GetName() == "compactkit_planner_queued_blocks" {
			queued = mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	if queued != 3 {
		log.Fatalf("compactkit_planner_queued_blocks = %g of %d families; want 3", queued, len(mfs))
	}
	fmt.Println("prom:", len(mfs), "metric families; level-0 queued blocks", queued)
}
