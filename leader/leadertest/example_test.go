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
// Here a single node over the package's in-memory log takes the scenario's
// blocks.
func ExampleRun() {
	fsm, err := raftfsm.New(raftfsm.DefaultConfig())
	if err != nil {
		panic(err)
	}
	svc := leader.New(leadertest.NewMemLog(fsm), fsm)
	defer svc.Close()
	res, err := svc.AddBlocks(context.Background(), []ck.BlockMeta{
		leadertest.Block("01-a", "tenant-a", 0, 0),
		leadertest.Block("01-a", "tenant-a", 0, 0), // a duplicate: refused per block
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(res[0].Err == nil, res[1].Err != nil)
	// Output: true true
}
