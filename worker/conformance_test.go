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
	runnertest.Run(t, runnertest.Format{
		Runner: worker.RunnerFunc(func(ctx context.Context, store blockmerge.Store, plan *ck.JobPlan, token fencing.Token) ([]ck.BlockMeta, error) {
			return blockmerge.Merge(ctx, store, plan, token)
		}),
		Layout: blockmerge.ObjectLayout,
		Write: func(ctx context.Context, store blockmerge.Store, b ck.BlockMeta, records []runnertest.Record) (ck.BlockMeta, error) {
			recs := make([]blockmerge.Record, len(records))
			for i, r := range records {
				recs[i] = blockmerge.Record{Key: []byte(r.Key), Timestamp: r.Time, Value: []byte("v")}
			}
			return blockmerge.WriteBlock(ctx, store, blockmerge.BlockInfo{ID: b.ID, Tenant: b.Tenant, Shard: b.Shard, Level: b.Level},
				[]blockmerge.Dataset{{Tenant: b.Tenant, Name: "records", Records: recs}})
		},
		Read: func(ctx context.Context, store blockmerge.Store, b ck.BlockMeta) ([]runnertest.Record, error) {
			r, err := blockmerge.Open(ctx, store, b.ID)
			if err != nil {
				return nil, err
			}
			var out []runnertest.Record
			for i := range r.Datasets() {
				it, err := r.DatasetAt(ctx, i)
				if err != nil {
					return nil, err
				}
				for it.Next() {
					out = append(out, runnertest.Record{Key: string(it.Record().Key), Time: it.Record().Timestamp})
				}
				if err := it.Close(); err != nil {
					return nil, err
				}
				if err := it.Err(); err != nil {
					return nil, err
				}
			}
			return out, nil
		},
	})
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
