package blockmerge_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
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
