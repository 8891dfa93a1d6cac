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

// writeBlock writes a block in blockmerge's format, one record per key.
func writeBlock(ctx context.Context, store blockmerge.Store, b ck.BlockMeta, records []runnertest.Record) (ck.BlockMeta, error) {
	recs := make([]blockmerge.Record, len(records))
	for i, r := range records {
		recs[i] = blockmerge.Record{Key: []byte(r.Key), Timestamp: r.Time}
	}
	return blockmerge.WriteBlock(ctx, store, blockmerge.BlockInfo{ID: b.ID, Tenant: b.Tenant, Shard: b.Shard, Level: b.Level},
		[]blockmerge.Dataset{{Name: "records", Records: recs}})
}

// readBlock reads every record of a block in blockmerge's format.
func readBlock(ctx context.Context, store blockmerge.Store, b ck.BlockMeta) ([]runnertest.Record, error) {
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
}

// A host's test runs the suite on its runner, with the functions that
// write and read its block format:
//
//	func TestRunner(t *testing.T) { runnertest.Run(t, format) }
//
// Here, the format's Write and Read, which the suite uses to write the
// sources and read the outputs back, on one block.
func ExampleRun() {
	format := runnertest.Format{
		Runner: worker.RunnerFunc(func(ctx context.Context, store blockmerge.Store, plan *ck.JobPlan, token fencing.Token) ([]ck.BlockMeta, error) {
			return blockmerge.Merge(ctx, store, plan, token)
		}),
		Layout: blockmerge.ObjectLayout,
		Write:  writeBlock,
		Read:   readBlock,
	}
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
