package leader_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/policy"
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
	last, _, _ := fsm.LastApplied()
	fmt.Println("entries:", last)
	// Output:
	// assigned [seg-1 seg-2]
	// entries: 4
}

// ExampleService_Propose sets a tenant's scheduling policy through the
// leader: low priority, at most two jobs at once, new jobs only off-peak.
// At noon its window is closed.
func ExampleService_Propose() {
	fsm, err := raftfsm.New(raftfsm.DefaultConfig())
	if err != nil {
		panic(err)
	}
	noon := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	svc := leader.New(leadertest.NewMemLog(fsm), fsm, leader.WithClock(func() time.Time { return noon }))
	ctx := context.Background()

	p := policy.Tenant{
		Class:         policy.Low,
		MaxInProgress: 2,
		Run:           policy.RunPolicy{Mode: policy.OnlyIn, Windows: []policy.Window{{Days: policy.EveryDay, Start: 22 * 60, End: 6 * 60}}},
	}
	if _, err := svc.Propose(ctx, &raftfsm.Command{Policy: &raftfsm.PolicyCommand{Action: raftfsm.PolicySet, Tenant: "acme", Policy: &p, By: "alice"}}); err != nil {
		panic(err)
	}
	fsm, err = svc.Read(ctx) // linearizable
	if err != nil {
		panic(err)
	}
	for _, t := range fsm.Policies().Tenants {
		fmt.Println(t.Tenant, t.Policy.Class, t.Policy.MaxInProgress, t.Policy.Run.Mode, t.Policy.Run.Windows, "open:", t.Open)
	}

	// A freeze that never lifts is refused.
	always := policy.Tenant{Run: policy.RunPolicy{Mode: policy.NeverIn, Windows: []policy.Window{{Days: policy.EveryDay, Start: 0, End: 24 * 60}}}}
	_, err = svc.Propose(ctx, &raftfsm.Command{Policy: &raftfsm.PolicyCommand{Action: raftfsm.PolicySet, Tenant: "acme", Policy: &always}})
	fmt.Println(errors.Is(err, policy.ErrNeverOpens))
	// Output:
	// acme low 2 only-in [Sun,Mon,Tue,Wed,Thu,Fri,Sat 22:00-06:00 UTC+00:00] open: false
	// true
}
