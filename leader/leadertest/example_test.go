package leadertest_test

import (
	"context"
	"fmt"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/raftfsm"
)

// A host's own test runs the scenario over a Cluster whose services are
// leader.Services over the host's log, one per node:
//
//	func TestScenario(t *testing.T) {
//		c := startMyCluster(t) // implements leadertest.Cluster
//		rep := leadertest.Run(t, c, leadertest.Options{LeaderChanges: 3})
//		t.Logf("%d polls, %d completed", rep.Polls, rep.Completed)
//	}
//
// Here a single node over the package's in-memory log serves one worker
// as the scenario's workers go: it polls, makes the output of the job it
// holds with Outputs (as if it had merged the sources), and reports it.
func ExampleRun() {
	cfg := raftfsm.DefaultConfig()
	cfg.Planner.Levels[0].MaxBlocks = 2 // two blocks make a job
	fsm, err := raftfsm.New(cfg)
	if err != nil {
		panic(err)
	}
	svc := leader.New(leadertest.NewMemLog(fsm), fsm)
	defer svc.Close()
	ctx := context.Background()
	if _, err := svc.AddBlocks(ctx, []ck.BlockMeta{leadertest.Block("01-a", "tenant-a", 0, 0), leadertest.Block("01-b", "tenant-a", 0, 1e9)}); err != nil {
		panic(err)
	}
	resp, err := svc.Poll(ctx, &ck.PollRequest{WorkerID: "worker-1", Seq: 1, FreeSlots: 1})
	if err != nil {
		panic(err)
	}
	job := resp.Jobs[0]
	out, ok := leadertest.Outputs(fsm, &job)
	if !ok {
		panic("a source of the job is gone")
	}
	done := ck.StatusUpdate{Job: job.Job, Token: job.Token, Status: ck.ReportSuccess, Outputs: out}
	resp, err = svc.Poll(ctx, &ck.PollRequest{WorkerID: "worker-1", Seq: 2, Updates: []ck.StatusUpdate{done}})
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Jobs[0].Outcome, "into level", out[0].Level)
	// Output: completed into level 1
}
