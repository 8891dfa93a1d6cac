package prom_test

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/metrics/prom"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/worker"
)

// A state machine has ingested three level-0 blocks that wait for a
// fuller batch; 90 seconds later, the compaction lag and debt of level 0
// are what an autoscaler would read.
func Example() {
	fsm, err := raftfsm.New(raftfsm.DefaultConfig())
	if err != nil {
		panic(err)
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var bs []ck.BlockMeta
	for i := range 3 {
		minT := start.Add(-time.Minute).UnixNano()
		maxT := start.UnixNano()
		bs = append(bs, ck.BlockMeta{
			ID: fmt.Sprintf("seg-%d", i), Tenant: "acme", Shard: 1, MinTime: minT, MaxTime: maxT, Size: 1000,
			Datasets: []ck.DatasetMeta{{Name: "cpu", Size: 1000, Records: 50, MinTime: minT, MaxTime: maxT}},
		})
	}
	cmd := &raftfsm.Command{Time: start.UnixNano(), AddBlocks: &raftfsm.AddBlocks{Blocks: bs}}
	data, err := cmd.MarshalVersion(raftfsm.CommandVersion)
	if err != nil {
		panic(err)
	}
	if _, err := fsm.Apply(ck.Entry{Index: 1, Term: 1, Time: start.UnixNano()}, data); err != nil {
		panic(err)
	}

	reg := prometheus.NewRegistry()
	// A real deployment passes time.Now; a fixed clock keeps the output stable.
	clock := func() time.Time { return start.Add(90 * time.Second) }
	reg.MustRegister(prom.NewFSMCollector(fsm.Stats, prom.WithClock(clock)))

	mfs, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, mf := range mfs {
		switch mf.GetName() {
		case "compactkit_planner_queued_blocks", "compactkit_planner_compaction_lag_seconds", "compactkit_planner_compaction_debt_block_seconds":
			m := mf.GetMetric()[0] // level 0
			fmt.Printf("%s{%s=%q} %g\n", mf.GetName(), m.GetLabel()[0].GetName(), m.GetLabel()[0].GetValue(), m.GetGauge().GetValue())
		}
	}
	// Output:
	// compactkit_planner_compaction_debt_block_seconds{level="0"} 270
	// compactkit_planner_compaction_lag_seconds{level="0"} 90
	// compactkit_planner_queued_blocks{level="0"} 3
}

// A process that hosts a replica and runs workers serves their metrics
// at /metrics on its own registry: one collector for the state machine,
// one per worker labelled with the worker's ID.
func ExampleNewWorkerCollector() {
	var (
		fsm    *raftfsm.FSM  // the replica this process hosts
		client worker.Client // the transport to the leader (HTTP in the examples)
		store  blockmerge.Store
	)
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		prom.NewFSMCollector(fsm.Stats, prom.WithClock(time.Now)),
	)
	for range 2 {
		w, err := worker.New(client, store, worker.Config{})
		if err != nil {
			panic(err)
		}
		reg.MustRegister(prom.NewWorkerCollector(w.Stats, prom.WithConstLabels(prometheus.Labels{"worker": w.ID()})))
		go func() { _ = w.Run(context.Background()) }()
	}
	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	_ = http.ListenAndServe("127.0.0.1:9100", nil)
}
