package index_test

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/index"
)

// seg returns a one-tenant block of one dataset over [lo, hi].
func seg(id, tenant string, shard uint32, lo, hi int64) *ck.BlockMeta {
	return &ck.BlockMeta{
		ID: id, Tenant: tenant, Shard: shard, MinTime: lo, MaxTime: hi, Size: 100,
		Datasets: []ck.DatasetMeta{{Name: "svc", Size: 100, Records: 10, MinTime: lo, MaxTime: hi}},
	}
}

func ExampleIndex_Add() {
	x, _ := index.New(index.DefaultConfig())
	b := seg("01A", "acme", 0, 0, 10)
	fmt.Println(x.Add(ck.Entry{Index: 1}, 1, b))
	// An ingest retry of the same block is refused.
	err := x.Add(ck.Entry{Index: 2}, 2, b)
	fmt.Println(errors.Is(err, index.ErrDuplicate))
	// So is malformed metadata.
	err = x.Add(ck.Entry{Index: 3}, 3, seg("01B", "acme", 0, 10, 0))
	fmt.Println(errors.Is(err, ck.ErrTimeRange))
	// Output:
	// <nil>
	// true
	// true
}

func ExampleView_Query() {
	x, _ := index.New(index.DefaultConfig())
	_ = x.Add(ck.Entry{Index: 1}, 0, seg("01B", "acme", 1, 20, 30))
	_ = x.Add(ck.Entry{Index: 2}, 0, seg("01A", "acme", 0, 0, 10))
	_ = x.Add(ck.Entry{Index: 3}, 0, seg("01C", "other", 0, 0, 10))
	// A level-0 segment holding two tenants is found through its datasets.
	_ = x.Add(ck.Entry{Index: 4}, 0, &ck.BlockMeta{ID: "01D", MinTime: 5, MaxTime: 25, Datasets: []ck.DatasetMeta{
		{Tenant: "acme", Name: "svc", MinTime: 5, MaxTime: 25},
		{Tenant: "other", Name: "svc", MinTime: 5, MaxTime: 6},
	}})
	v := x.View()
	for b := range v.Query("acme", 0, 100, nil) {
		fmt.Println(b.ID, b.MinTime, b.MaxTime)
	}
	shard := uint32(1)
	fmt.Println(v.QueryIDs("acme", 0, 100, &shard))
	fmt.Println(v.ReadAmplification("acme", 9, 21))
	// Output:
	// 01A 0 10
	// 01D 5 25
	// 01B 20 30
	// [01B]
	// 3
}

func ExampleIndex_Replace() {
	x, _ := index.New(index.DefaultConfig())
	for i, id := range []string{"a", "b", "c"} {
		_ = x.Add(ck.Entry{Index: uint64(i + 1)}, 0, seg(id, "acme", 0, int64(i*10), int64(i*10+9)))
	}
	out := *seg(ck.OutputID("job1", 7, 0), "acme", 0, 0, 19)
	out.Level = 1

	r := x.Replace(ck.Entry{Index: 10}, 100, "job1", 7, []string{"a", "b"}, []ck.BlockMeta{out})
	fmt.Println("applied:", r.Applied, "live:", x.View().Live("a"), x.View().Live(out.ID))

	// Replaying the same completion changes nothing.
	r = x.Replace(ck.Entry{Index: 11}, 100, "job1", 7, []string{"a", "b"}, []ck.BlockMeta{out})
	fmt.Println("replayed:", r.Replayed, r.Applied)

	// Retention removed a source of another job: its completion is refused,
	// and its outputs become an orphan tombstone instead of live data.
	x.DropBefore(ck.Entry{Index: 12}, 101, "acme", false, 19)
	out2 := *seg(ck.OutputID("job2", 8, 0), "acme", 0, 0, 29)
	r = x.Replace(ck.Entry{Index: 13}, 102, "job2", 8, []string{"a", "c"}, []ck.BlockMeta{out2})
	fmt.Println(r.Applied, r.Reason, r.Missing, r.Surviving, r.Orphan, x.View().Live(out2.ID))
	// Output:
	// applied: true live: false true
	// replayed: true true
	// false sources missing [a] [c] blocks/job2/8/ false
}

func ExampleIndex_Attach() {
	cfg := index.DefaultConfig()
	cfg.CleanupDelay = time.Minute
	x, _ := index.New(cfg)
	_ = x.Add(ck.Entry{Index: 1}, 0, seg("a", "acme", 0, 0, 10))
	_ = x.Add(ck.Entry{Index: 2}, 0, seg("b", "acme", 0, 0, 10))
	x.DropBefore(ck.Entry{Index: 3}, 0, "", true, 100) // two tombstones

	// Deciding: a view lists the releasable tombstones, in release order.
	now := int64(time.Minute)
	v := x.View()
	next := v.Releasable(now)
	var ts []ck.Tombstone
	for t, ok := next(); ok; t, ok = next() {
		ts = append(ts, t)
	}
	v.Close()
	// Applying: the job that carries them is created.
	fmt.Println(x.Attach(now, "job1", ts))
	fmt.Println(x.Attach(now, "job2", ts)) // a tombstone is held by one job at a time
	fmt.Println(x.Detach("job1"))          // job1 was cancelled
	fmt.Println(x.Attach(now, "job2", ts))
	fmt.Println(x.Confirm(int64(2*time.Minute), "job2"), x.Confirm(int64(2*time.Minute), "job2"))
	// The deleted block may not come back within the deduplication horizon.
	err := x.Add(ck.Entry{Index: 4}, int64(3*time.Minute), seg("a", "acme", 0, 0, 10))
	fmt.Println(errors.Is(err, index.ErrDuplicate))
	// Output:
	// [block:a block:b]
	// []
	// 2
	// [block:a block:b]
	// 2 0
	// true
}

func ExampleIndex_SetWatermark() {
	cfg := index.DefaultConfig()
	cfg.CleanupDelay = 0
	x, _ := index.New(cfg)
	_ = x.Add(ck.Entry{Index: 1}, 0, seg("a", "acme", 0, 0, 10))
	x.DropBefore(ck.Entry{Index: 2}, 100, "acme", false, 11) // tombstone created at 100
	// A query that started at 90 is still running.
	x.SetWatermark(120, 90)
	_, ok := x.View().Releasable(120)()
	fmt.Println(ok)
	// Every read in flight started after 100.
	x.SetWatermark(130, 125)
	fmt.Println(x.View().Releasable(130)())
	// Output:
	// false
	// block:a true
}

func ExampleRestore() {
	x, _ := index.New(index.DefaultConfig())
	_ = x.Add(ck.Entry{Index: 1}, 5, seg("a", "acme", 0, 0, 10))
	var snap bytes.Buffer
	_ = x.View().Snapshot(&snap)

	y, err := index.Restore(bytes.NewReader(snap.Bytes()))
	fmt.Println(err, y.View().Len(), y.View().Now())
	var again bytes.Buffer
	_ = y.View().Snapshot(&again)
	fmt.Println(bytes.Equal(snap.Bytes(), again.Bytes()))

	// Corrupt input is rejected.
	bad := bytes.Clone(snap.Bytes())
	bad[len(bad)/2] ^= 0xff
	_, err = index.Restore(bytes.NewReader(bad))
	fmt.Println(err != nil)
	// Output:
	// <nil> 1 5
	// true
	// true
}

// A view read for one purpose, then closed: the index need not preserve
// the trees it never read, so its next mutations copy nothing for it.
func ExampleView_Close() {
	x, _ := index.New(index.DefaultConfig())
	_ = x.Add(ck.Entry{Index: 1}, 0, seg("01A", "acme", 0, 0, 10))
	v := x.View()
	b, ok := v.Lookup("01A")
	fmt.Println(b.ID, ok)
	v.Close()
	_ = x.Add(ck.Entry{Index: 2}, 0, seg("01B", "acme", 0, 10, 20))
	// Another view, open while the index changes, keeps its state.
	w := x.View()
	defer w.Close()
	_ = x.Add(ck.Entry{Index: 3}, 0, seg("01C", "acme", 0, 20, 30))
	fmt.Println(w.Len(), x.View().Len())
	// Output:
	// 01A true
	// 2 3
}
