package rpc_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/rpc"
)

// Example serves a leader over the protocol and reaches it as an
// ingester and as a worker would.
func Example() {
	cfg := raftfsm.DefaultConfig()
	cfg.Planner.Levels[0].MaxBlocks = 2
	fsm, err := raftfsm.New(cfg)
	if err != nil {
		panic(err)
	}
	svc := leader.New(leadertest.NewMemLog(fsm), fsm)
	defer svc.Close()

	// The leader's endpoint: gRPC, gRPC-Web and Connect over plain-text
	// HTTP/2. A host with several nodes passes rpc.WithLeaderURL.
	h := rpc.NewHandler(svc)
	srv := httptest.NewUnstartedServer(h)
	srv.Config = rpc.NewServer(h)
	srv.Start()
	defer srv.Close()

	c, err := rpc.NewClient([]string{srv.URL})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if _, err := c.AddBlocks(ctx, []ck.BlockMeta{
		leadertest.Block("seg-1", "acme", 0, 0), leadertest.Block("seg-2", "acme", 0, 1e9),
	}); err != nil {
		panic(err)
	}
	// c is a worker.Client: worker.New(c, store, cfg) polls through it.
	resp, err := c.Poll(ctx, &ck.PollRequest{WorkerID: "worker-1", Seq: 1, FreeSlots: 1})
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Jobs[0].Outcome, resp.Jobs[0].Plan.Sources)
	// Output:
	// assigned [seg-1 seg-2]
}
