package etcdrafttest_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/raft/v3"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/raftfsm/etcdraft/etcdrafttest"
)

// Three nodes on one in-process network, each serving a leader service
// over its adapter, as a host's test of its own layer above them starts
// them: the node that wins the election takes the blocks, and a worker's
// poll gets a job of them.
func Example() {
	nw := etcdrafttest.NewNetwork()
	peers := []raft.Peer{{ID: 1}, {ID: 2}, {ID: 3}}
	var nodes []*etcdrafttest.Node
	var services []*leader.Service
	for _, p := range peers {
		cfg := raftfsm.DefaultConfig()
		cfg.Planner.Levels[0].MaxBlocks = 2
		fsm, err := raftfsm.New(cfg)
		if err != nil {
			panic(err)
		}
		n, err := etcdrafttest.Start(fsm, etcdrafttest.Config{ID: p.ID, Peers: peers, Network: nw})
		if err != nil {
			panic(err)
		}
		nodes = append(nodes, n)
		services = append(services, leader.New(n.Adapter, fsm))
	}
	defer func() {
		for i, n := range nodes {
			_ = services[i].Close()
			if err := n.Stop(); err != nil {
				fmt.Println(err)
			}
		}
	}()

	ctx := context.Background()
	blocks := []ck.BlockMeta{leadertest.Block("seg-1", "acme", 0, 0), leadertest.Block("seg-2", "acme", 0, 1e9)}
	var lead *leader.Service
	for lead == nil {
		time.Sleep(10 * time.Millisecond) // an election takes about ten ticks
		for i, n := range nodes {
			if n.Adapter.Leader().Leads {
				lead = services[i]
			}
		}
		if lead == nil {
			continue
		}
		if _, err := lead.AddBlocks(ctx, blocks); errors.Is(err, leader.ErrNotLeader) {
			lead = nil // it lost the lead meanwhile
		} else if err != nil {
			panic(err)
		}
	}
	resp, err := lead.Poll(ctx, &ck.PollRequest{WorkerID: "worker-1", Seq: 1, FreeSlots: 1})
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Jobs[0].Outcome, resp.Jobs[0].Plan.Sources)
	// Output: assigned [seg-1 seg-2]
}
