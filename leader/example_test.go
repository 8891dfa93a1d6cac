package leader_test

import (
	"context"
	"fmt"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/raftfsm"
)

// Example serves a worker through the leader service over a log of the
// host's own.
func Example() {
	cfg := raftfsm.DefaultConfig()
	cfg.Planner.Levels[0].MaxBlocks = 2
	fsm, err := raftfsm.New(cfg)
	if err != nil {
		panic(err)
	}
	// The host's log: here the smallest one, single-node and in memory
	// (read leadertest.MemLog's source as a model of a leader.Log).
	log := leadertest.NewMemLog(fsm)
	svc := leader.New(log, fsm)
	ctx := context.Background()

	if _, err := svc.AddBlocks(ctx, []ck.BlockMeta{
		leadertest.Block("seg-1", "acme", 0, 0), leadertest.Block("seg-2", "acme", 0, 1e9),
	}); err != nil {
		panic(err)
	}
	resp, err := svc.Poll(ctx, &ck.PollRequest{WorkerID: "worker-1", Seq: 1, FreeSlots: 1})
	if err != nil {
		panic(err)
	}
	job := resp.Jobs[0]
	fmt.Println(job.Outcome, job.Plan.Sources)
	// The entries: the configuration and TookOffice of the first term,
	// the blocks, the poll.
	fmt.Println("entries:", log.Len())
	// Output:
	// assigned [seg-1 seg-2]
	// entries: 4
}
