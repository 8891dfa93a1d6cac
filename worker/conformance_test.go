package worker_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/worker"
	"github.com/compactkit/compactkit/worker/runnertest"
)

// The worker's default runner, blockmerge's merge, keeps the Runner
// contract in blockmerge's format.
func TestMergeRunnerConformance(t *testing.T) {
	runnertest.Run(t, runnertest.BlockmergeFormat(worker.RunnerFunc(func(ctx context.Context, store blockmerge.Store, plan *ck.JobPlan, token fencing.Token) ([]ck.BlockMeta, error) {
		return blockmerge.Merge(ctx, store, plan, token)
	})))
}

// The directory format of TestRunnerOwnFormat — two objects per block —
// with its runner keeps the Runner contract.
func TestDirRunnerConformance(t *testing.T) {
	runnertest.Run(t, runnertest.Format{
		Runner: worker.RunnerFunc(dirRunner),
		Layout: blockmerge.PrefixLayout,
		Write: func(ctx context.Context, store blockmerge.Store, b ck.BlockMeta, records []runnertest.Record) (ck.BlockMeta, error) {
			lines := make([]string, len(records))
			for i, r := range records {
				lines[i] = fmt.Sprintf("%d %s", r.Time, r.Key)
			}
			return b, putDirBlock(ctx, store, b, lines)
		},
		Read: func(ctx context.Context, store blockmerge.Store, b ck.BlockMeta) ([]runnertest.Record, error) {
			d, err := readObject(ctx, store, ck.ObjectKey(b.ID)+"/data")
			if err != nil {
				return nil, err
			}
			var out []runnertest.Record
			for _, line := range strings.Split(strings.TrimSuffix(string(d), "\n"), "\n") {
				ts, key, ok := strings.Cut(line, " ")
				n, err := strconv.ParseInt(ts, 10, 64)
				if !ok || err != nil {
					return nil, fmt.Errorf("block %s: malformed record %q", b.ID, line)
				}
				out = append(out, runnertest.Record{Key: key, Time: n})
			}
			return out, nil
		},
	})
}
