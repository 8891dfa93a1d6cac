package planner

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"
	"time"

	ck "github.com/compactkit/compactkit"
)

// benchBlocks returns n level-0 blocks of one tenant spread round-robin
// over shards, with ULID-like 26-byte IDs, and the total bytes of their
// IDs.
func benchBlocks(n, shards int) ([]ck.BlockMeta, int) {
	blocks := make([]ck.BlockMeta, n)
	idBytes := 0
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	for i := range blocks {
		id := fmt.Sprintf("01J%023d", i)
		idBytes += len(id)
		ts := t0 + int64(i)*int64(time.Millisecond)
		blocks[i] = ck.BlockMeta{ID: id, Tenant: "tenant-1", Shard: uint32(i % shards), MinTime: ts - int64(10*time.Second), MaxTime: ts, Size: 1 << 20}
	}
	return blocks, idBytes
}

func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkEnqueue queues 1,000,000 level-0 blocks over 1 tenant × 64
// shards, opening a planning view every 1,000 blocks, and reports the time
// per block (the mean over the runs) and the heap growth per queued block
// beyond the bytes of the ID strings (which the planner shares with the
// caller's metadata, so they are allocated before the measurement).
func BenchmarkEnqueue(b *testing.B) {
	blocks, _ := benchBlocks(1_000_000, 64)
	benchEnqueue(b, blocks, 1000)
}

// benchEnqueue enqueues blocks into a new planner each op, opening a view
// every viewEvery blocks (0: none), and reports ns/block and B/block, the
// heap growth per block beyond the ID strings (allocated before the
// measurement), after collection.
func benchEnqueue(b *testing.B, blocks []ck.BlockMeta, viewEvery int) {
	t0 := blocks[0].MaxTime
	var elapsed time.Duration
	var bPerBlock float64
	runs := 0
	for b.Loop() {
		b.StopTimer()
		before := heapAlloc()
		p, err := New(DefaultConfig())
		if err != nil {
			b.Fatal(err)
		}
		var v *View
		b.StartTimer()
		start := time.Now()
		for i := range blocks {
			e := ck.Entry{Index: uint64(i/10 + 1), Term: 1, Time: t0 + int64(i)*int64(time.Millisecond)}
			if _, err := p.Enqueue(e, &blocks[i]); err != nil {
				b.Fatal(err)
			}
			if viewEvery > 0 && (i+1)%viewEvery == 0 {
				v = p.View()
			}
		}
		elapsed += time.Since(start)
		runs++
		b.StopTimer()
		after := heapAlloc()
		runtime.KeepAlive(p)
		runtime.KeepAlive(v)
		bPerBlock = (float64(after) - float64(before)) / float64(len(blocks))
		b.StartTimer()
	}
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(runs*len(blocks)), "ns/block")
	b.ReportMetric(bPerBlock, "B/block")
}

// benchPlanner returns a planner with n queued level-0 blocks over 1
// tenant × 64 shards.
func benchPlanner(b *testing.B, n int) (*Planner, int64) {
	b.Helper()
	blocks, _ := benchBlocks(n, 64)
	p, err := New(DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	var now int64
	for i := range blocks {
		now = blocks[i].MaxTime
		if _, err := p.Enqueue(ck.Entry{Index: uint64(i + 1), Term: 1, Time: now}, &blocks[i]); err != nil {
			b.Fatal(err)
		}
	}
	return p, now
}

// BenchmarkPlan opens a view on a planner holding 1,000,000 queued blocks
// and plans 16 jobs.
func BenchmarkPlan(b *testing.B) {
	p, now := benchPlanner(b, 1_000_000)
	b.ResetTimer()
	for b.Loop() {
		v := p.View()
		for range 16 {
			if _, ok := v.Next(now, nil); !ok {
				b.Fatal("no plan")
			}
		}
	}
}

// BenchmarkPlannerRestore restores a planner of 1,000,000 queued blocks
// from its snapshot.
func BenchmarkPlannerRestore(b *testing.B) {
	p, _ := benchPlanner(b, 1_000_000)
	var buf bytes.Buffer
	if err := p.View().Snapshot(&buf); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	b.ResetTimer()
	for b.Loop() {
		if _, err := Restore(bytes.NewReader(buf.Bytes())); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNextHeldTenants plans one job on a fresh view (View + Next) on
// a planner of 10,000 tenants with a ready full level-0 batch each, of
// which 9,999 — all but the last in tenant order — are left out:
//
//   - held: held with SetHold, so they have no index entries;
//   - skip: passed over by PlanOptions.Skip (a map lookup), which costs a
//     B-tree seek per skipped tenant;
//   - none: not left out (the first tenant is planned).
func BenchmarkNextHeldTenants(b *testing.B) {
	const tenants = 10_000
	names, setup, run := oneBatchPerTenant(tenants)
	last := names[tenants-1]
	b.Run("held", func(b *testing.B) {
		p, now := setup(b)
		for _, tn := range names[:tenants-1] {
			p.SetHold(tn, true, p.s.holdOf(tn).levels)
		}
		run(b, p, now, nil, last)
	})
	b.Run("skip", func(b *testing.B) {
		p, now := setup(b)
		skipped := make(map[string]bool, tenants)
		for _, tn := range names[:tenants-1] {
			skipped[tn] = true
		}
		run(b, p, now, &PlanOptions{Skip: func(tenant string, _ uint32) bool { return skipped[tenant] }}, last)
	})
	b.Run("none", func(b *testing.B) {
		p, now := setup(b)
		run(b, p, now, nil, names[0])
	})
}

// BenchmarkNextRanked measures opening a view and planning one job (ns
// per View+Next) on a planner of 10,000 tenants with a ready full level-0
// batch each:
//
//   - ranked: the 9,999 first in tenant order have rank 2 and the last has
//     rank 0, which is planned;
//   - equal: every tenant has the default rank, and the first is planned;
//   - ranked-aged: as ranked, past level 0's aging threshold: every rank-2
//     batch is aged and competes at rank 0, so the first is planned.
//
// The first two should cost the same: the rank-0 tenant's entry comes
// first in the index, so no rank-2 tenant's key is visited. Aged batches
// are gathered once per view (like batches ready by age), so ranked-aged
// costs O(n) per view in the 9,999 aged batches.
func BenchmarkNextRanked(b *testing.B) {
	const tenants = 10_000
	names, setup, run := oneBatchPerTenant(tenants)
	cfg := DefaultConfig()
	b.Run("ranked", func(b *testing.B) {
		p, now := setup(b)
		for _, tn := range names[:tenants-1] {
			if err := p.SetTerms(tn, &Terms{Rank: 2}); err != nil {
				b.Fatal(err)
			}
		}
		run(b, p, now, nil, names[tenants-1])
	})
	b.Run("equal", func(b *testing.B) {
		p, now := setup(b)
		run(b, p, now, nil, names[0])
	})
	b.Run("ranked-aged", func(b *testing.B) {
		p, now := setup(b)
		for _, tn := range names[:tenants-1] {
			if err := p.SetTerms(tn, &Terms{Rank: 2}); err != nil {
				b.Fatal(err)
			}
		}
		run(b, p, now+int64(cfg.Levels[0].AgingThreshold)+1, nil, names[0])
	})
}

// oneBatchPerTenant returns the tenants of the benchmarks of views over
// many tenants, a setup that builds a planner (of the default
// configuration) with a ready full level-0 batch per tenant, and a run
// that measures opening a view and planning one job, the tenant want's.
func oneBatchPerTenant(tenants int) (names []string, setup func(*testing.B) (*Planner, int64),
	run func(b *testing.B, p *Planner, now int64, opts *PlanOptions, want string)) {
	cfg := DefaultConfig()
	names = make([]string, tenants)
	for i := range names {
		names[i] = fmt.Sprintf("tenant-%05d", i)
	}
	setup = func(b *testing.B) (*Planner, int64) {
		b.Helper()
		p, err := New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
		e := ck.Entry{Index: 1, Term: 1, Time: now}
		for i, tn := range names {
			for j := range cfg.Levels[0].MaxBlocks {
				blk := ck.BlockMeta{ID: fmt.Sprintf("01J%08d%015d", i, j), Tenant: tn, MinTime: now - int64(time.Second), MaxTime: now, Size: 1 << 20}
				if _, err := p.Enqueue(e, &blk); err != nil {
					b.Fatal(err)
				}
			}
		}
		return p, now
	}
	run = func(b *testing.B, p *Planner, now int64, opts *PlanOptions, want string) {
		b.Helper()
		b.ResetTimer()
		for b.Loop() {
			pl, ok := p.View().Next(now, opts)
			if !ok || pl.Tenant != want {
				b.Fatalf("planned %q, %v; want %q", pl.Tenant, ok, want)
			}
		}
	}
	return names, setup, run
}

// BenchmarkViewJobs measures a view planning jobs from 4,096 keys — 16
// tenants of 256 shards — 64 jobs a view and 1,024 (ns/job of View +
// Next):
//
//   - full: each key holds a full level-0 batch;
//   - aged: each key holds half a batch, ready by age at the view's time
//     but not yet at the planner's clock (no entry applied since), so
//     that the view gathers them;
//   - ripe: the same after an entry at the view's time (one block of
//     another tenant) has moved the clock past them;
//   - aged: each key holds a full level-1 batch aged at the view's time,
//     the clock moved past that time too (the batches compete at level
//     0).
//
// Planning rotates over the tenants, and each tenant's turn passes over
// the keys of it the view already took from; the cost of a job should not
// grow with the jobs a view plans.
func BenchmarkViewJobs(b *testing.B) {
	const tenants, shards = 16, 256
	cfg := DefaultConfig()
	for _, c := range []struct {
		name   string
		blocks int
		ripe   bool
		level  uint32
	}{
		{"full", cfg.Levels[0].MaxBlocks, false, 0},
		{"aged", cfg.Levels[0].MaxBlocks / 2, false, 0},
		{"ripe", cfg.Levels[0].MaxBlocks / 2, true, 0},
		{"aging", cfg.Levels[1].MaxBlocks, true, 1},
	} {
		p, err := New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
		e := ck.Entry{Index: 1, Term: 1, Time: t0}
		for i := range tenants * shards {
			for j := range c.blocks {
				blk := ck.BlockMeta{ID: fmt.Sprintf("01J%08d%015d", i, j), Tenant: fmt.Sprintf("tenant-%02d", i%tenants),
					Shard: uint32(i / tenants), Level: c.level, MinTime: t0 - int64(time.Second), MaxTime: t0, Size: 1 << 20}
				if _, err := p.Enqueue(e, &blk); err != nil {
					b.Fatal(err)
				}
			}
		}
		now := t0 + int64(cfg.Levels[0].MaxAge) + 1
		if c.level > 0 {
			now = t0 + int64(cfg.Levels[c.level].AgingThreshold) + 1
		}
		if c.ripe {
			blk := ck.BlockMeta{ID: fmt.Sprintf("01K%023d", 0), Tenant: "tenant-zz", MinTime: t0, MaxTime: t0, Size: 1 << 20}
			if _, err := p.Enqueue(ck.Entry{Index: 2, Term: 1, Time: now}, &blk); err != nil {
				b.Fatal(err)
			}
		}
		for _, jobs := range []int{64, 1024} {
			b.Run(fmt.Sprintf("%s/jobs=%d", c.name, jobs), func(b *testing.B) {
				for b.Loop() {
					v := p.View()
					for range jobs {
						if _, ok := v.Next(now, nil); !ok {
							b.Fatal("no plan")
						}
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*jobs), "ns/job")
			})
		}
	}
}
