package blockmerge_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/fencing"
)

// Ingest writes a level-0 segment holding the datasets of two tenants.
func ExampleWriteBlock() {
	ctx := context.Background()
	store := blockmerge.NewMemStore()
	meta, err := blockmerge.WriteBlock(ctx, store, blockmerge.BlockInfo{ID: "01SEGMENT", Shard: 1}, []blockmerge.Dataset{
		{Tenant: "acme", Name: "api", Records: []blockmerge.Record{
			{Key: []byte("GET /"), Timestamp: 20, Value: []byte("12ms")},
			{Key: []byte("GET /"), Timestamp: 10, Value: []byte("15ms")},
		}},
		{Tenant: "globex", Name: "db", Records: []blockmerge.Record{
			{Key: []byte("select"), Timestamp: 15, Value: []byte("3ms")},
		}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("block %s: tenants %q, level %d, time [%d, %d], %d records\n",
		meta.ID, meta.Tenants(), meta.Level, meta.MinTime, meta.MaxTime, meta.Records())
	for _, d := range meta.Datasets {
		fmt.Printf("  %s/%s: %d records in [%d, %d]\n", d.Tenant, d.Name, d.Records, d.MinTime, d.MaxTime)
	}
	// Output:
	// block 01SEGMENT: tenants ["acme" "globex"], level 0, time [10, 20], 3 records
	//   acme/api: 2 records in [10, 20]
	//   globex/db: 1 records in [15, 15]
}

// A worker runs a job: the level-0 segments are merged and split by
// tenant, one output per tenant under the attempt's prefix.
func ExampleMerge() {
	ctx := context.Background()
	store := blockmerge.NewMemStore()
	write := func(id string, datasets ...blockmerge.Dataset) {
		if _, err := blockmerge.WriteBlock(ctx, store, blockmerge.BlockInfo{ID: id}, datasets); err != nil {
			panic(err)
		}
	}
	r := func(key string, ts int64) blockmerge.Record {
		return blockmerge.Record{Key: []byte(key), Timestamp: ts, Value: []byte("v")}
	}
	write("seg-1",
		blockmerge.Dataset{Tenant: "acme", Name: "api", Records: []blockmerge.Record{r("a", 1), r("b", 2)}},
		blockmerge.Dataset{Tenant: "globex", Name: "db", Records: []blockmerge.Record{r("x", 5)}})
	write("seg-2",
		blockmerge.Dataset{Tenant: "acme", Name: "api", Records: []blockmerge.Record{r("b", 2), r("c", 3)}})

	plan := &compactkit.JobPlan{Name: "job-7", Sources: []string{"seg-1", "seg-2"}}
	outputs, err := blockmerge.Merge(ctx, store, plan, 42)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, o := range outputs {
		fmt.Printf("%s: tenant %s, level %d, %d records\n", compactkit.ObjectKey(o.ID), o.Tenant, o.Level, o.Records())
	}
	// Output:
	// blocks/job-7/42/0: tenant acme, level 1, 3 records
	// blocks/job-7/42/1: tenant globex, level 1, 1 records
}

// A reader fetches the footer, then streams one dataset.
func ExampleOpen() {
	ctx := context.Background()
	store := blockmerge.NewMemStore()
	_, err := blockmerge.WriteBlock(ctx, store, blockmerge.BlockInfo{ID: "b1", Tenant: "acme", Level: 1}, []blockmerge.Dataset{
		{Name: "api", Records: []blockmerge.Record{
			{Key: []byte("k2"), Timestamp: 1, Value: []byte("second")},
			{Key: []byte("k1"), Timestamp: 9, Value: []byte("first")},
		}},
	})
	if err != nil {
		panic(err)
	}
	r, err := blockmerge.Open(ctx, store, "b1")
	if err != nil {
		panic(err)
	}
	it, err := r.Dataset(ctx, "", "api")
	if err != nil {
		panic(err)
	}
	defer it.Close()
	for it.Next() {
		rec := it.Record()
		fmt.Printf("%s@%d = %s\n", rec.Key, rec.Timestamp, rec.Value)
	}
	if err := it.Err(); err != nil {
		fmt.Println(err)
	}
	// Output:
	// k1@9 = first
	// k2@1 = second
}

// The filesystem store is the embedded default; objects are files under
// the root, published atomically.
func ExampleNewFileStore() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "blockmerge-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	store, err := blockmerge.NewFileStore(dir)
	if err != nil {
		panic(err)
	}
	defer store.Close()

	if err := store.Put(ctx, "blocks/a", strings.NewReader("hello")); err != nil {
		panic(err)
	}
	err = store.Put(ctx, "../escape", strings.NewReader("x"))
	fmt.Println(err)
	_ = store.List(ctx, "", func(key string) error {
		fmt.Println("object:", key)
		return nil
	})
	// Output:
	// blockmerge: invalid key or range: "../escape": segment ".." not allowed
	// object: blocks/a
}

// A worker deletes what the tombstones of its job name, idempotently,
// and reports those deleted as confirmed.
func ExampleLayout_DeleteTombstones() {
	ctx := context.Background()
	store := blockmerge.NewMemStore()
	for _, key := range []string{"blocks/old-1", "blocks/job-3/5/0", "blocks/job-3/5/1", "blocks/keep"} {
		_ = store.Put(ctx, key, strings.NewReader("x"))
	}
	confirmed, err := blockmerge.ObjectLayout.DeleteTombstones(ctx, store, []compactkit.Tombstone{
		{Kind: compactkit.TombstoneBlock, Target: "old-1"},
		{Kind: compactkit.TombstoneBlock, Target: "already-gone"},
		{Kind: compactkit.TombstonePrefix, Target: compactkit.AttemptPrefix("job-3", 5)},
	})
	fmt.Println(len(confirmed), "confirmed, error:", err)
	_ = store.List(ctx, "", func(key string) error {
		fmt.Println("left:", key)
		return nil
	})
	// Output:
	// 3 confirmed, error: <nil>
	// left: blocks/keep
}

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
