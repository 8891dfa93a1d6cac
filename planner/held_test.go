package planner_test

import (
	"bytes"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/planner"
)

// drain plans on one view at now until nothing is ready and returns the
// plans' "tenant/shard/level" keys.
func drain(t *testing.T, v *planner.View, now int64, opts *planner.PlanOptions) []string {
	t.Helper()
	var got []string
	for {
		pl, ok := v.Next(now, opts)
		if !ok {
			return got
		}
		got = append(got, fmt.Sprint(pl.Tenant, "/", pl.Shard, "/", pl.Level))
	}
}

// TestTenantsListsKeys: Tenants lists the tenants with queued blocks, in
// order, held or not.
func TestTenantsListsKeys(t *testing.T) {
	f := newFixture(t, planner.DefaultConfig())
	names := func() []string {
		var out []string
		for _, ts := range f.p.Tenants(f.now) {
			out = append(out, ts.Tenant)
		}
		return slices.Compact(out)
	}
	require.Empty(t, names())
	f.add("C", 0, 0, 3)
	f.add("A", 0, 0, 20)
	f.add("A", 5, 1, 2)
	f.add("", 0, 0, 1)
	f.p.SetHold("C", true, levelsHeld(f.p, "C"))
	require.Equal(t, []string{"", "A", "C"}, names())
}

// TestHeldTenants: a held tenant is never planned while the others are;
// its blocks stay queued and counted; releasing it makes it plannable
// again. Holding twice or releasing twice changes nothing.
func TestHeldTenants(t *testing.T) {
	f := newFixture(t, planner.DefaultConfig())
	for _, tn := range []string{"A", "B", "C"} {
		f.add(tn, 0, 0, 20)
	}
	b := f.add("B", 1, 1, 2) // partial, ready by age later
	before := f.snapshot()
	f.p.SetHold("B", true, levelsHeld(f.p, "B"))
	f.p.SetHold("B", true, levelsHeld(f.p, "B"))
	require.True(t, allHeld(f.p, "B"))
	require.False(t, allHeld(f.p, "A"))
	require.Equal(t, before, f.snapshot(), "a hold is not replicated state of the snapshot")

	later := f.now + int64(time.Hour)
	require.Equal(t, []string{"A/0/0", "C/0/0"}, drain(t, f.p.View(), later, nil))
	var got []string
	for {
		pl, ok := f.poll(nil)
		if !ok {
			break
		}
		got = append(got, pl.Tenant)
	}
	require.Equal(t, []string{"A", "C"}, got)

	// Held blocks stay queued and count, ready batches included.
	st := f.p.Stats(0)
	require.Equal(t, 22, st.Queued)
	require.Equal(t, 1, st.Levels[0].ReadyBatches)
	require.Equal(t, 20, st.Levels[0].Queued)
	require.Equal(t, []planner.TenantStats{
		{Tenant: "B", Level: 0, Queued: 20, ReadyBatches: 1, Oldest: t0},
		{Tenant: "B", Level: 1, Queued: 2, Oldest: t0},
	}, f.p.Tenants(0))

	f.p.SetHold("B", false, levelsHeld(f.p, "B"))
	f.p.SetHold("B", false, levelsHeld(f.p, "B"))
	require.False(t, allHeld(f.p, "B"))
	pl := f.mustPoll(nil)
	require.Equal(t, "B", pl.Tenant)
	pl, ok := f.p.View().Next(later, nil)
	require.True(t, ok)
	require.Equal(t, b, pl.Sources, "the released tenant's aged batch")

	// A tenant with no blocks may be held; its blocks are held on arrival.
	f.p.SetHold("D", true, levelsHeld(f.p, "D"))
	f.add("D", 0, 0, 20)
	require.Equal(t, []string{"B/1/1"}, drain(t, f.p.View(), later, nil))
	f.p.SetHold("D", false, levelsHeld(f.p, "D"))
	require.Equal(t, []string{"D/0/0", "B/1/1"}, drain(t, f.p.View(), later, nil))
}

// TestHeldAndViews: a view keeps planning with the held set it was opened
// with.
func TestHeldAndViews(t *testing.T) {
	f := newFixture(t, planner.DefaultConfig())
	f.add("A", 0, 0, 20)
	f.add("B", 0, 0, 20)
	f.add("A", 2, 0, 3) // partial: only forced
	force := &planner.PlanOptions{Force: []planner.Force{{Tenant: "A", Level: 0, Before: f.now}}}

	open := f.p.View()
	f.p.SetHold("A", true, levelsHeld(f.p, "A"))
	held := f.p.View()
	require.Equal(t, []string{"A/0/0", "B/0/0", "A/2/0"}, drain(t, open, f.now, force))
	require.Equal(t, []string{"B/0/0"}, drain(t, held, f.now, force))

	f.p.SetHold("A", false, levelsHeld(f.p, "A"))
	released := f.p.View()
	f.p.SetHold("A", true, levelsHeld(f.p, "A"))
	// A view opened before A was held again still plans it; a view opened
	// while it was held (above) still does not.
	require.Equal(t, []string{"A/0/0", "B/0/0", "A/2/0"}, drain(t, released, f.now, force))
	require.Equal(t, []string{"B/0/0"}, drain(t, f.p.View(), f.now, force))
}

// twins drives two planners alike, one holding a tenant and the other not.
type twins struct {
	t     *testing.T
	held  *planner.Planner
	free  *planner.Planner
	index uint64
	now   int64
	ids   int
}

func (w *twins) entry() ck.Entry {
	w.index++
	return ck.Entry{Index: w.index, Term: 1, Time: w.now}
}

func (w *twins) both(fn func(p *planner.Planner)) {
	fn(w.held)
	fn(w.free)
}

func (w *twins) add(tenant string, shard, level uint32, n int) []ck.BlockMeta {
	e := w.entry()
	var bs []ck.BlockMeta
	for range n {
		w.ids++
		bs = append(bs, ck.BlockMeta{ID: fmt.Sprintf("%s-%d-%d-%06d", tenant, shard, level, w.ids), Tenant: tenant, Shard: shard,
			Level: level, MinTime: w.now - int64(time.Second), MaxTime: w.now, Size: 100})
	}
	w.both(func(p *planner.Planner) {
		for i := range bs {
			ok, err := p.Enqueue(e, &bs[i])
			require.NoError(w.t, err)
			require.True(w.t, ok)
		}
	})
	return bs
}

// check: the planners are identical but for the hold, and the held one
// never plans the held tenant.
func (w *twins) check(tenant string) {
	w.t.Helper()
	var a, b bytes.Buffer
	require.NoError(w.t, w.held.View().Snapshot(&a))
	require.NoError(w.t, w.free.View().Snapshot(&b))
	require.Equal(w.t, b.Bytes(), a.Bytes())
	all := &planner.PlanOptions{Force: []planner.Force{{AllTenants: true, AllLevels: true, Before: w.now}}}
	for _, opts := range []*planner.PlanOptions{nil, all} {
		v := w.held.View()
		for {
			pl, ok := v.Next(w.now+int64(24*time.Hour), opts)
			if !ok {
				break
			}
			require.NotEqual(w.t, tenant, pl.Tenant, "a held tenant planned")
		}
	}
}

// TestHeldSurvivesChanges: a hold survives enqueue, claim, return,
// quarantine and re-queue, retention and configuration changes; once
// released, the tenant plans exactly like a twin that was never held.
func TestHeldSurvivesChanges(t *testing.T) {
	cfg := planner.DefaultConfig()
	cfg.Levels[0].MaxBlocks = 4
	w := &twins{t: t, now: t0}
	var err error
	w.held, err = planner.New(cfg)
	require.NoError(t, err)
	w.free, err = planner.New(cfg)
	require.NoError(t, err)

	w.add("A", 0, 0, 10)
	w.add("A", 1, 1, 3)
	w.add("B", 0, 0, 4)
	// Plans prepared before the hold.
	plans := nextPlans(t, w.held.View(), w.now, 3)
	require.Equal(t, []string{"A", "B", "A"}, []string{plans[0].Tenant, plans[1].Tenant, plans[2].Tenant})
	w.held.SetHold("A", true, levelsHeld(w.held, "A"))
	w.check("A")

	w.now += int64(time.Second)
	dropped := w.add("A", 0, 0, 5)
	w.add("A", 3, 2, 1)
	w.check("A")

	// Holds are not checked by Claim: the state machine checks its policy.
	for _, pl := range plans {
		w.both(func(p *planner.Planner) { require.NoError(t, p.Claim(w.entry(), &pl)) })
	}
	w.check("A")
	w.both(func(p *planner.Planner) { require.NoError(t, p.Return(plans[0].Name, plans[0].Sources)) })
	w.check("A")
	w.both(func(p *planner.Planner) { require.NoError(t, p.Quarantine(w.entry(), plans[2].Name, "failed")) })
	w.check("A")
	w.both(func(p *planner.Planner) {
		n, err := p.Requeue(plans[2].Sources)
		require.NoError(t, err)
		require.Equal(t, 4, n)
	})
	w.check("A")
	w.both(func(p *planner.Planner) { require.Empty(t, p.Drop(dropped[1:3])) })
	w.check("A")
	cfg.Levels[0].MaxBlocks = 3
	cfg.Levels[1].MaxAge = time.Second
	w.both(func(p *planner.Planner) { require.NoError(t, p.SetConfig(cfg)) })
	w.check("A")
	require.True(t, allHeld(w.held, "A"))

	w.held.SetHold("A", false, levelsHeld(w.held, "A"))
	later := w.now + int64(24*time.Hour)
	require.Equal(t, drain(t, w.free.View(), later, nil), drain(t, w.held.View(), later, nil))
	got := drain(t, w.held.View(), later, nil)
	require.Contains(t, got, "A/0/0")
	require.Contains(t, got, "A/1/1")
	require.Contains(t, got, "A/3/2")
}

// TestRestoreThenSetHold: a restored planner holds no tenant; once the same
// tenants are held again, it plans exactly like the original, poll after
// poll.
func TestRestoreThenSetHold(t *testing.T) {
	cfg := planner.DefaultConfig()
	cfg.Levels[0].MaxBlocks = 3
	f := newFixture(t, cfg)
	for i, tn := range []string{"", "A", "B", "C", "D"} {
		f.add(tn, uint32(i%2), 0, 7)
		f.add(tn, 0, 1, 2+i)
		f.add(tn, 1, 2, 1)
	}
	for range 3 {
		f.mustPoll(nil)
	}
	for _, tn := range []string{"B", "D", ""} {
		f.p.SetHold(tn, true, levelsHeld(f.p, tn))
	}
	heldQueued := func(p *planner.Planner) (n int) {
		for _, ts := range p.Tenants(0) {
			if ts.Tenant == "D" || ts.Tenant == "" {
				n += ts.Queued
			}
		}
		return n
	}
	wantQueued := heldQueued(f.p)
	require.Positive(t, wantQueued)
	r := restored(t, f.snapshot())
	for _, tn := range []string{"", "A", "B", "C", "D"} {
		require.False(t, allHeld(r, tn))
	}
	for _, tn := range []string{"B", "D", ""} {
		r.SetHold(tn, true, levelsHeld(r, tn))
	}

	entry := f.index
	polls := 0
	for step := range 40 {
		now := f.now + int64(step)*int64(20*time.Minute)
		if step == 20 {
			f.p.SetHold("B", false, levelsHeld(f.p, "B"))
			r.SetHold("B", false, levelsHeld(r, "B"))
		}
		for {
			a, okA := f.p.View().Next(now, nil)
			b, okB := r.View().Next(now, nil)
			require.Equal(t, okA, okB)
			require.Equal(t, a, b)
			if !okA {
				break
			}
			require.NotContains(t, []string{"D", ""}, a.Tenant)
			entry++
			e := ck.Entry{Index: entry, Term: 1, Time: now}
			require.NoError(t, f.p.Claim(e, &a))
			require.NoError(t, r.Claim(e, &b))
			polls++
		}
		var sa, sb bytes.Buffer
		require.NoError(t, f.p.View().Snapshot(&sa))
		require.NoError(t, r.View().Snapshot(&sb))
		require.Equal(t, sa.Bytes(), sb.Bytes())
	}
	require.Positive(t, polls)
	require.Equal(t, wantQueued, heldQueued(f.p), "the held tenants' blocks stay queued")
}

// TestHeldConcurrentWithViews: views plan on other goroutines, forcing
// every tenant, while the planner holds and releases tenants and changes;
// each view plans exactly what a twin view opened at the same moment
// planned before anything changed (run with -race).
func TestHeldConcurrentWithViews(t *testing.T) {
	concurrentViews(t, func(f *fixture, tenants []string, i int) {
		f.p.SetHold(tenants[i%4], i%3 != 2, levelsHeld(f.p, tenants[i%4]))
	}, func(f *fixture, tenants []string, i int) {
		f.p.SetHold(tenants[(i+2)%4], false, levelsHeld(f.p, tenants[(i+2)%4]))
	})
}

// concurrentViews opens views that plan on other goroutines, forcing
// every tenant, while the planner changes: before, it enqueues blocks,
// after, and claims a job; each view must plan exactly what a twin view
// opened at the same moment planned before anything changed.
func concurrentViews(t *testing.T, before, after func(f *fixture, tenants []string, i int)) {
	f := newFixture(t, planner.DefaultConfig())
	tenants := []string{"A", "B", "C", "D"}
	for i, tn := range tenants {
		f.add(tn, 0, 0, 50)
		f.add(tn, 1, 1, 3+i)
	}
	force := forcing(planner.Force{AllTenants: true, AllLevels: true, Before: f.now})
	var wg sync.WaitGroup
	type result struct{ got, want []string }
	results := make(chan result, 8)
	for i := range 8 {
		v, twin := f.p.View(), f.p.View()
		now := f.now
		want := drain(t, twin, now, force)
		wg.Go(func() {
			results <- result{drain(t, v, now, force), want}
		})
		before(f, tenants, i)
		f.add(tenants[(i+1)%4], 0, 0, 20)
		after(f, tenants, i)
		f.mustPoll(force)
	}
	wg.Wait()
	close(results)
	for r := range results {
		require.NotEmpty(t, r.want)
		require.Equal(t, r.want, r.got)
	}
}

// TestViewRelease: a view that releases a held tenant plans its batches,
// in the order they would have had unheld, and keeps a hold of some of
// its levels; the planner and other views keep the hold.
func TestViewRelease(t *testing.T) {
	f := newFixture(t, planner.DefaultConfig())
	for _, tn := range []string{"A", "B"} {
		f.add(tn, 0, 0, 20)
		f.add(tn, 1, 1, 20)
	}
	later := f.now + int64(time.Hour)
	unheld := drain(t, f.p.View(), later, nil)
	require.Subset(t, unheld, []string{"B/0/0", "B/1/1"})

	f.p.SetHold("B", true, 1<<1) // every level, and level 1 on its own
	other := f.p.View()
	v := f.p.View()
	release := &planner.PlanOptions{Release: []string{"B", "A"}} // A is not held: nothing changes
	without := func(drop ...string) []string {
		var out []string
		for _, k := range unheld {
			if !slices.Contains(drop, k) {
				out = append(out, k)
			}
		}
		return out
	}
	require.Equal(t, without("B/1/1"), drain(t, v, later, release), "level 1 of B stays held")
	require.Equal(t, without("B/0/0", "B/1/1"), drain(t, other, later, nil))
	require.True(t, allHeld(f.p, "B"), "the planner keeps the hold")
	require.Equal(t, without("B/0/0", "B/1/1"), drain(t, f.p.View(), later, nil))

	f.p.SetHold("B", true, 0)
	require.Equal(t, unheld, drain(t, f.p.View(), later, &planner.PlanOptions{Release: []string{"B"}}), "released, B plans as if never held")
}

// allHeld reports whether p holds a tenant at every level.
func allHeld(p *planner.Planner, tenant string) bool {
	all, _ := p.Hold(tenant)
	return all
}

// levelsHeld returns the levels at which p holds a tenant level by level.
func levelsHeld(p *planner.Planner, tenant string) uint64 {
	_, levels := p.Hold(tenant)
	return levels
}
