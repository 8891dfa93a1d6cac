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
	fmt.Println("queued:", p.Stats(0).Queued, "claimed:", p.Stats(0).Claimed)

	// Apply: the worker succeeded and the index replaced the sources.
	_ = p.Complete(plan.Name)
	fmt.Println("jobs:", p.Stats(0).Jobs)
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
	_ = p.View().Snapshot(&snap)
	r, err := planner.Restore(bytes.NewReader(snap.Bytes()))
	if err != nil {
		fmt.Println(err)
		return
	}
	var again bytes.Buffer
	_ = r.View().Snapshot(&again)
	fmt.Println(r.Stats(0).Queued, bytes.Equal(snap.Bytes(), again.Bytes()))

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
	fmt.Println("queued:", p.Stats(0).Queued)
	// Output:
	// active 20
	// queued: 40
}

// An evicted job's sources are quarantined: they leave compaction and are
// listed for operators, who re-queue them once the cause is fixed.
func ExamplePlanner_Quarantine() {
	cfg := planner.DefaultConfig()
	cfg.Levels[0].MaxBlocks = 2
	p, _ := planner.New(cfg)
	for i, id := range []string{"a", "b", "c"} {
		_, _ = p.Enqueue(ck.Entry{Index: uint64(i + 1), Time: 1}, &ck.BlockMeta{ID: id, Tenant: "t"})
	}
	plan, _ := p.View().Next(1, nil)
	_ = p.Claim(ck.Entry{Index: 4, Time: 2}, &plan)

	// The job failed too often and was evicted.
	_ = p.Quarantine(ck.Entry{Index: 5, Time: 3}, plan.Name, "failed 3 times: corrupt dataset")
	blocks, _ := p.Quarantined("", 10)
	for _, b := range blocks {
		fmt.Println("quarantined:", b.ID, b.Reason)
	}
	fmt.Println("queued:", p.Stats(0).Queued)

	// The operator fixed the cause: the blocks return to their places.
	n, _ := p.Requeue([]string{"a", "b"})
	next, _ := p.View().Next(3, nil)
	fmt.Println("requeued:", n, "next job:", next.Sources)
	// Output:
	// quarantined: a failed 3 times: corrupt dataset
	// quarantined: b failed 3 times: corrupt dataset
	// queued: 1
	// requeued: 2 next job: [a b]
}

// Age-based flush is judged at the planning time: a quiet key is planned
// once its oldest block is older than the level's max age, without waiting
// for another block.
func ExampleView_Next() {
	cfg := planner.DefaultConfig() // level 0: 20 blocks or 36 s
	p, _ := planner.New(cfg)
	start := int64(1_000_000_000_000)
	_, _ = p.Enqueue(ck.Entry{Index: 1, Time: start}, &ck.BlockMeta{ID: "lonely", Tenant: "quiet"})

	// Nothing else arrives; the leader plans at its own time.
	for _, after := range []time.Duration{30 * time.Second, 37 * time.Second} {
		plan, ok := p.View().Next(start+int64(after), nil)
		fmt.Println(after, ok, plan.Sources)
	}
	// Output:
	// 30s false []
	// 37s true [lonely]
}

// Retention removes the blocks the index dropped; a job that claims one of
// them is named, so that the state machine cancels it and returns the
// sources that are still live.
func ExamplePlanner_Drop() {
	cfg := planner.DefaultConfig()
	cfg.Levels[0].MaxBlocks = 2
	p, _ := planner.New(cfg)
	for i, id := range []string{"a", "b", "c"} {
		_, _ = p.Enqueue(ck.Entry{Index: uint64(i + 1), Time: 1}, &ck.BlockMeta{ID: id, Tenant: "t"})
	}
	plan, _ := p.View().Next(1, nil)
	_ = p.Claim(ck.Entry{Index: 4, Time: 1}, &plan)

	// Retention dropped a (claimed) and c (queued).
	jobs := p.Drop([]ck.BlockMeta{{ID: "a", Tenant: "t"}, {ID: "c", Tenant: "t"}})
	fmt.Println("cancel:", len(jobs) == 1 && jobs[0] == plan.Name)
	_ = p.Return(plan.Name, []string{"b"}) // the live source goes back
	fmt.Println("queued:", p.Stats(0).Queued, "dropped:", p.Stats(0).Counters.Dropped)
	// Output:
	// cancel: true
	// queued: 1 dropped: 1
}

// Stats reports the backlog per level: queued blocks, ready batches, the
// compaction lag and debt.
func ExamplePlanner_Stats() {
	p, _ := planner.New(planner.DefaultConfig())
	start := int64(1_000_000_000_000)
	for i := range 25 {
		_, _ = p.Enqueue(ck.Entry{Index: 1, Time: start}, &ck.BlockMeta{ID: fmt.Sprint("b", i), Tenant: "t"})
	}
	_, _ = p.Enqueue(ck.Entry{Index: 2, Time: start + int64(10*time.Second)}, &ck.BlockMeta{ID: "late", Tenant: "u"})
	l0 := p.Stats(0).Levels[0]
	fmt.Println("queued:", l0.Queued, "ready batches:", l0.ReadyBatches, "lag:", l0.Lag, "debt:", l0.Debt, "block-seconds")
	// Output:
	// queued: 26 ready batches: 1 lag: 10s debt: 250 block-seconds
}

// A tenant's hold leaves its batches out of planning — at no cost per
// poll — until it is released; its blocks stay queued. The state machine
// sets both parts of a tenant's hold from its policy in one call: every
// level (a run window closes them, say) and some levels only (a level's
// window).
func ExamplePlanner_SetHold() {
	p, _ := planner.New(planner.DefaultConfig())
	for i := range 60 {
		tenant, level := "capped", uint32(i%2)
		if i >= 40 {
			tenant, level = "other", 0
		}
		_, _ = p.Enqueue(ck.Entry{Index: 1}, &ck.BlockMeta{ID: fmt.Sprint("b", i), Tenant: tenant, Level: level})
	}
	plans := func() {
		v := p.View()
		for {
			plan, ok := v.Next(0, nil)
			if !ok {
				break
			}
			fmt.Println("  ", plan.Tenant, "level", plan.Level, len(plan.Sources))
		}
	}
	p.SetHold("capped", true, 1<<1)
	all, levels := p.Hold("capped")
	fmt.Println("capped held:", all, "levels:", levels)
	plans()
	fmt.Println("queued:", p.Stats(0).Queued)

	p.SetHold("capped", false, 1<<1)
	fmt.Println("capped's level 1 held:")
	plans()

	p.SetHold("capped", false, 0)
	fmt.Println("released:")
	plans()
	// Output:
	// capped held: true levels: 2
	//    other level 0 20
	// queued: 60
	// capped's level 1 held:
	//    capped level 0 20
	//    other level 0 20
	// released:
	//    capped level 0 20
	//    other level 0 20
	//    capped level 1 10
	//    capped level 1 10
}

// An operator's "compact now": the tenant's batches that arrived before
// the command are planned although they are neither full nor old.
func ExampleForce() {
	p, _ := planner.New(planner.DefaultConfig())
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	for i := range 3 {
		_, _ = p.Enqueue(ck.Entry{Index: 1, Time: start}, &ck.BlockMeta{ID: fmt.Sprint("b", i), Tenant: "acme"})
	}
	now := start + int64(time.Second)
	_, ok := p.View().Next(now, nil)
	fmt.Println("planned:", ok)

	opts := &planner.PlanOptions{Force: []planner.Force{{Tenant: "acme", AllLevels: true, Before: now}}}
	plan, ok := p.View().Next(now, opts)
	fmt.Println("forced:", ok, plan.Sources)
	// Output:
	// planned: false
	// forced: true [b0 b1 b2]
}

// Priority classes as ranks: with one job to start, the High tenant's
// ready batch goes first although the Low tenant is next in rotation; the
// Low tenant's batch follows. Terms are not in snapshots: the state
// machine sets them again after a restore.
func ExamplePlanner_SetTerms() {
	const high, low = 0, 2
	p, _ := planner.New(planner.DefaultConfig())
	for i := range 40 {
		tenant := []string{"batch", "web"}[i%2]
		_, _ = p.Enqueue(ck.Entry{Index: 1}, &ck.BlockMeta{ID: fmt.Sprint("b", i), Tenant: tenant})
	}
	_ = p.SetTerms("web", &planner.Terms{Rank: high})
	_ = p.SetTerms("batch", &planner.Terms{Rank: low})
	v := p.View()
	for {
		plan, ok := v.Next(0, nil)
		if !ok {
			break
		}
		fmt.Println(plan.Tenant, len(plan.Sources))
	}

	var b bytes.Buffer
	_ = p.View().Snapshot(&b)
	r, _ := planner.Restore(&b)
	first := func() string {
		plan, _ := r.View().Next(0, nil)
		return plan.Tenant
	}
	fmt.Println("restored:", first())
	_ = r.SetTerms("web", &planner.Terms{Rank: high})
	_ = r.SetTerms("batch", &planner.Terms{Rank: low})
	fmt.Println("with its terms again:", first())
	// Output:
	// web 20
	// batch 20
	// restored: batch
	// with its terms again: web
}
