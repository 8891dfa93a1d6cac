package runnertest_test

import (
	"context"
	"fmt"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/worker"
	"github.com/compactkit/compactkit/worker/runnertest"
)

// A host's test runs the suite on its runner, with the functions that
// write and read its block format; for a runner that writes blockmerge's
// blocks:
//
//	func TestRunner(t *testing.T) { runnertest.Run(t, runnertest.BlockmergeFormat(runner)) }
//
// Here, the format's Write and Read, which the suite uses to write the
// sources and read the outputs back, on one block.
func ExampleRun() {
	format := runnertest.BlockmergeFormat(worker.RunnerFunc(func(ctx context.Context, store blockmerge.Store, plan *ck.JobPlan, token fencing.Token) ([]ck.BlockMeta, error) {
		return blockmerge.Merge(ctx, store, plan, token)
	}))
	ctx := context.Background()
	store := blockmerge.NewMemStore()
	b, err := format.Write(ctx, store, ck.BlockMeta{ID: "b1", Tenant: "acme", MinTime: 10, MaxTime: 20}, []runnertest.Record{{Key: "k1", Time: 10}, {Key: "k2", Time: 20}})
	if err != nil {
		fmt.Println(err)
		return
	}
	recs, err := format.Read(ctx, store, b)
	fmt.Println(b.Records(), recs, err)
	// Output:
	// 2 [{k1 10} {k2 20}] <nil>
}
