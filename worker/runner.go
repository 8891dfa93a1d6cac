package worker

import (
	"context"

	"github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/fencing"
)

// Runner merges a compaction job's sources into new blocks, in the host's
// block format. The worker does everything else: polling, keeping the
// lease, fencing, deleting the job's tombstones (in [Config.Layout]),
// reporting. The default runner is blockmerge's ([blockmerge.Merge] with
// [Config.MergeOptions]).
//
// A runner's obligations:
//   - Write only under the attempt's prefix,
//     compactkit.AttemptPrefix(plan.Name, token): name the outputs
//     compactkit.OutputID(plan.Name, token, n) (or any ID starting with
//     plan.Name/token/) and write each output's objects as [Config.Layout]
//     says — the object compactkit.ObjectKey(id), or objects under
//     compactkit.ObjectKey(id)+"/". The worker refuses outputs outside the
//     prefix: the job is reported failed, with the reason. An attempt that
//     ends without its outputs committed is deleted whole by its prefix.
//   - Stop when ctx ends (the lease was lost, the leader answered "no
//     lease", or the worker is shutting down) and return an error: what it
//     wrote is then an orphan the state machine tombstones.
//   - Return the outputs' metadata (at least one output for a job with
//     sources); the worker validates it as the leader will before it
//     reports success.
//   - Read the sources through store, which is the worker's store wrapped
//     by [blockmerge.NewFencedStore] for the attempt.
type Runner interface {
	Run(ctx context.Context, store blockmerge.Store, plan *compactkit.JobPlan, token fencing.Token) ([]compactkit.BlockMeta, error)
}

// RunnerFunc adapts a function to [Runner].
type RunnerFunc func(ctx context.Context, store blockmerge.Store, plan *compactkit.JobPlan, token fencing.Token) ([]compactkit.BlockMeta, error)

// Run calls f.
func (f RunnerFunc) Run(ctx context.Context, store blockmerge.Store, plan *compactkit.JobPlan, token fencing.Token) ([]compactkit.BlockMeta, error) {
	return f(ctx, store, plan, token)
}

// mergeRunner is the default runner: blockmerge.Merge.
type mergeRunner []blockmerge.Option

func (opts mergeRunner) Run(ctx context.Context, store blockmerge.Store, plan *compactkit.JobPlan, token fencing.Token) ([]compactkit.BlockMeta, error) {
	return blockmerge.Merge(ctx, store, plan, token, opts...)
}
