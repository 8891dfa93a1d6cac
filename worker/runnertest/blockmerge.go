package runnertest

import (
	"context"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/worker"
)

// BlockmergeFormat is blockmerge's block format — one object per block,
// [blockmerge.ObjectLayout], the records in one dataset named "records" —
// with the runner under test: for a host that writes blockmerge's blocks
// with a runner of its own (blockmerge.Merge with its own options, say).
func BlockmergeFormat(r worker.Runner) Format {
	return Format{Runner: r, Layout: blockmerge.ObjectLayout, Write: writeBlockmerge, Read: readBlockmerge}
}

func writeBlockmerge(ctx context.Context, store blockmerge.Store, b ck.BlockMeta, records []Record) (ck.BlockMeta, error) {
	recs := make([]blockmerge.Record, len(records))
	for i, r := range records {
		recs[i] = blockmerge.Record{Key: []byte(r.Key), Timestamp: r.Time}
	}
	return blockmerge.WriteBlock(ctx, store, blockmerge.BlockInfo{ID: b.ID, Tenant: b.Tenant, Shard: b.Shard, Level: b.Level},
		[]blockmerge.Dataset{{Name: "records", Records: recs}})
}

func readBlockmerge(ctx context.Context, store blockmerge.Store, b ck.BlockMeta) ([]Record, error) {
	r, err := blockmerge.Open(ctx, store, b.ID)
	if err != nil {
		return nil, err
	}
	var out []Record
	for _, d := range r.Meta().Datasets {
		it, err := r.Dataset(ctx, d.Tenant, d.Name)
		if err != nil {
			return nil, err
		}
		for it.Next() {
			out = append(out, Record{Key: string(it.Record().Key), Time: it.Record().Timestamp})
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
