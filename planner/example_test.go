package planner_test

import (
	"bytes"
	"fmt"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/planner"
)

// The life of a compaction job, as the state machine drives the planner:
// blocks are queued at Apply, a job is planned on a view at Prepare, its
// sources are claimed when the job is created, and the claim ends when the
// job completes.
func Example() {
	p, _ := planner.New(planner.DefaultConfig())
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()

	// Apply: an ingest entry with three segments of tenant "acme".
	e := ck.Entry{Index: 1, Term: 1, Time: start}
	for i := range 3 {
		b := ck.BlockMeta{ID: fmt.Sprintf("seg-%d", i), Tenant: "acme", Shard: 4, MinTime: start - 1e9, MaxTime: start, Size: 1 << 20}
		_, _ = p.Enqueue(e, &b)
	}

	// Prepare, 10 s later: three blocks are not a full batch (20), and
	// they are not old enough (36 s).
	v := p.View()
	_, ok := v.Next(start+int64(10*time.Second), nil)
	fmt.Println("planned after 10s:", ok)

	// Prepare, a minute later: the batch is old enough.
	v = p.View()
	plan, ok := v.Next(start+int64(time.Minute), nil)
	fmt.Println("planned after 1m:", ok, plan.Sources)
	fmt.Println("job:", plan.Name[:len(plan.Name)-16]+"…")

	// Apply: the entry that creates the job claims its sources.
	if err := p.Claim(ck.Entry{Index: 2, Term: 1, Time: start + int64(time.Minute)}, &plan); err != nil {
		fmt.Println(err)
	}
	fmt.Println("queued:", p.Stats().Queued, "claimed:", p.Stats().Claimed)

	// Apply: the worker succeeded and the index replaced the sources.
	_ = p.Complete(plan.Name)
	fmt.Println("jobs:", p.Stats().Jobs)
	// Output:
	// planned after 10s: false
	// planned after 1m: true [seg-0 seg-1 seg-2]
	// job: acme.s4.l0.1.…
	// queued: 0 claimed: 3
	// jobs: 0
}

// A cancelled job's sources return to their original positions, ahead of
// newer blocks.
func ExamplePlanner_Return() {
	cfg := planner.DefaultConfig()
	cfg.Levels[0].MaxBlocks = 2
	p, _ := planner.New(cfg)
	enqueue := func(index uint64, ids ...string) {
		for _, id := range ids {
			_, _ = p.Enqueue(ck.Entry{Index: index, Time: int64(index)}, &ck.BlockMeta{ID: id, Tenant: "t"})
		}
	}
	enqueue(1, "a", "b")
	plan, _ := p.View().Next(1, nil)
	_ = p.Claim(ck.Entry{Index: 2, Time: 2}, &plan)
	enqueue(3, "c", "d")

	_ = p.Return(plan.Name, plan.Sources) // cancelled
	v := p.View()
	for {
		next, ok := v.Next(3, nil)
		if !ok {
			break
		}
		fmt.Println(next.Sources, next.Name != plan.Name)
	}
	// Output:
	// [a b] true
	// [c d] true
}

// Restore rebuilds a planner that snapshots to the same bytes.
func ExampleRestore() {
	p, _ := planner.New(planner.DefaultConfig())
	_, _ = p.Enqueue(ck.Entry{Index: 1, Time: 1}, &ck.BlockMeta{ID: "a", Tenant: "t"})

	var snap bytes.Buffer
	_ = p.Snapshot(&snap)
	r, err := planner.Restore(bytes.NewReader(snap.Bytes()))
	if err != nil {
		fmt.Println(err)
		return
	}
	var again bytes.Buffer
	_ = r.Snapshot(&again)
	fmt.Println(r.Stats().Queued, bytes.Equal(snap.Bytes(), again.Bytes()))

	_, err = planner.Restore(bytes.NewReader(snap.Bytes()[:snap.Len()-1]))
	fmt.Println(err != nil)
	// Output:
	// 1 true
	// true
}

// Paused tenants are skipped by planning; their blocks stay queued.
func ExamplePlanOptions() {
	p, _ := planner.New(planner.DefaultConfig())
	for i := range 40 {
		tenant := []string{"paused", "active"}[i%2]
		_, _ = p.Enqueue(ck.Entry{Index: 1}, &ck.BlockMeta{ID: fmt.Sprint("b", i), Tenant: tenant})
	}
	opts := &planner.PlanOptions{Skip: func(tenant string, level uint32) bool { return tenant == "paused" }}
	v := p.View()
	for {
		plan, ok := v.Next(0, opts)
		if !ok {
			break
		}
		fmt.Println(plan.Tenant, len(plan.Sources))
	}
	fmt.Println("queued:", p.Stats().Queued)
	// Output:
	// active 20
	// queued: 40
}
