package blockmerge_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/fencing"
)

// A host with datasets of its own structure plugs in its own merger for
// them and delegates the others to the built-in record merge.
func ExampleWithDatasetMerger() {
	ctx := context.Background()
	store := blockmerge.NewMemStore()
	r := func(key string, ts int64, val string) blockmerge.Record {
		return blockmerge.Record{Key: []byte(key), Timestamp: ts, Value: []byte(val)}
	}
	for i, recs := range [][]blockmerge.Record{
		{r("cpu", 1, "10"), r("mem", 1, "5")},
		{r("cpu", 2, "12")},
	} {
		_, err := blockmerge.WriteBlock(ctx, store, blockmerge.BlockInfo{ID: fmt.Sprint("s", i), Tenant: "acme"},
			[]blockmerge.Dataset{{Name: "latest", Records: recs}, {Name: "raw", Records: recs}})
		if err != nil {
			panic(err)
		}
	}
	plan := &compactkit.JobPlan{Name: "j", Tenant: "acme", Sources: []string{"s0", "s1"}}
	outs, err := blockmerge.Merge(ctx, store, plan, 1, blockmerge.WithDatasetMerger(lastValuePerKey))
	if err != nil {
		panic(err)
	}
	for _, d := range outs[0].Datasets {
		fmt.Printf("%s: %d records\n", d.Name, d.Records)
	}
	// Output:
	// latest: 2 records
	// raw: 3 records
}

// lastValuePerKey is a [blockmerge.DatasetMerger] that keeps only the
// newest record of each key of the datasets named "latest", and merges the
// others with the built-in record merge. Inputs are small here; a real
// merger streams.
func lastValuePerKey(ctx context.Context, out *blockmerge.DatasetWriter, in []*blockmerge.DatasetIterator) error {
	if in[0].Meta().Name != "latest" {
		return blockmerge.MergeRecords(ctx, out, in)
	}
	var all []blockmerge.Record
	for _, it := range in {
		for it.Next() {
			all = append(all, it.Record().Clone())
		}
		if err := it.Err(); err != nil {
			return err
		}
	}
	slices.SortFunc(all, blockmerge.Compare)
	for i, r := range all {
		if i+1 < len(all) && bytes.Equal(all[i+1].Key, r.Key) {
			continue // a newer record of the key follows
		}
		if err := out.Append(r); err != nil {
			return err
		}
	}
	return nil
}

// The index's metadata of the sources lets Merge check that every source
// holds what the index says before it writes anything.
func ExampleWithSources() {
	ctx := context.Background()
	store := blockmerge.NewMemStore()
	meta, err := blockmerge.WriteBlock(ctx, store, blockmerge.BlockInfo{ID: "seg-1"}, []blockmerge.Dataset{
		{Tenant: "acme", Name: "api", Records: []blockmerge.Record{{Key: []byte("k"), Timestamp: 1}}},
	})
	if err != nil {
		panic(err)
	}
	// The index believes the segment also holds acme/db.
	indexed := meta.Clone()
	indexed.Datasets = append(indexed.Datasets, compactkit.DatasetMeta{Tenant: "acme", Name: "db", Size: 30, Records: 1, MinTime: 1, MaxTime: 1})
	plan := &compactkit.JobPlan{Name: "j", Sources: []string{"seg-1"}}
	_, err = blockmerge.Merge(ctx, store, plan, 1, blockmerge.WithSources(indexed))
	fmt.Println(errors.Is(err, blockmerge.ErrNotFound))
	fmt.Println(strings.Contains(err.Error(), `object "blocks/seg-1": dataset acme/db`))
	// Output:
	// true
	// true
}

// A FencedStore refuses the writes of an attempt once a newer attempt of
// the same job has written through the same Guard, in this process. The
// state machine's token check at commit is the real guarantee.
func ExampleNewFencedStore() {
	ctx := context.Background()
	store := blockmerge.NewMemStore()
	var guard fencing.Guard
	old := blockmerge.NewFencedStore(store, &guard, "job-1", 7)
	newer := blockmerge.NewFencedStore(store, &guard, "job-1", 8)

	fmt.Println(newer.Put(ctx, "blocks/job-1/8/0", strings.NewReader("new")))
	err := old.Put(ctx, "blocks/job-1/7/0", strings.NewReader("old"))
	fmt.Println(errors.Is(err, fencing.ErrStaleToken))
	// Deleting its own attempt's outputs is still allowed.
	fmt.Println(old.DeleteByPrefix(ctx, compactkit.AttemptPrefix("job-1", 7)))
	// Output:
	// <nil>
	// true
	// <nil>
}
