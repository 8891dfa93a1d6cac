// Command rpc serves a leader over the worker protocol on a loopback
// listener and reaches it as an ingester and a worker would.
package main

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/rpc"
)

func main() {
	cfg := raftfsm.DefaultConfig()
	cfg.Planner.Levels[0].MaxBlocks = 2
	fsm, err := raftfsm.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	svc := leader.New(leadertest.NewMemLog(fsm), fsm)
	defer svc.Close()
	h := rpc.NewHandler(svc)
	srv := httptest.NewUnstartedServer(h)
	srv.Config = rpc.NewServer(h)
	srv.Start()
	defer srv.Close()

	c, err := rpc.NewClient([]string{srv.URL})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.AddBlocks(ctx, []ck.BlockMeta{leadertest.Block("seg-1", "acme", 0, 0), leadertest.Block("seg-2", "acme", 0, 1e9)}); err != nil {
		log.Fatal(err)
	}
	resp, err := c.Poll(ctx, &ck.PollRequest{WorkerID: "worker-1", Seq: 1, FreeSlots: 1})
	if err != nil {
		log.Fatal(err)
	}
	if len(resp.Jobs) != 1 || resp.Jobs[0].Outcome != ck.OutcomeAssigned || len(resp.Jobs[0].Plan.Sources) != 2 {
		log.Fatalf("jobs %+v; want one job of the two segments", resp.Jobs)
	}
	fmt.Println("rpc: job assigned over the protocol:", resp.Jobs[0].Plan.Sources)
}
