package planner

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/internal/ident"
)

// TestRecentQueues checks the positions a tenant keeps its recent queues
// at: one for one queue, as many as its queues up to recentMax, and every
// key found, whichever queue it shares a position with.
func TestRecentQueues(t *testing.T) {
	p, err := New(DefaultConfig())
	require.NoError(t, err)
	entry := uint64(0)
	enqueue := func(tenant string, shard uint32, i int) {
		entry++
		b := ck.BlockMeta{ID: fmt.Sprintf("b-%s-%d-%d", tenant, shard, i), Tenant: tenant, Shard: shard, MaxTime: int64(i)}
		ok, err := p.Enqueue(ck.Entry{Index: entry, Time: int64(entry)}, &b)
		require.NoError(t, err)
		require.True(t, ok)
	}
	enqueue("one", 7, 0)
	require.Len(t, p.tenants["one"].recent, 1)
	for i := range 3 * recentMax {
		enqueue("many", uint32(i), i)
	}
	require.Len(t, p.tenants["many"].recent, recentMax)
	for i := range 3 * recentMax {
		q := p.lookup(key{tenant: "many", shard: uint32(i)})
		require.NotNil(t, q)
		require.Equal(t, uint32(i), q.k.shard)
		require.Equal(t, 1, q.n)
	}
}

// TestNameMemo checks the memo of job names against jobName: whatever
// the calls before, the memo returns the name of the call's own key,
// sequence number and sources — sources of the same lengths but other
// bytes, equal sources in other strings, a changed key or number.
func TestNameMemo(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var m nameMemo
		h := &handoff{mu: new(sync.Mutex)}
		ids := []string{"a1", "a2", "b1", "b2"}
		for range rapid.IntRange(1, 20).Draw(rt, "calls") {
			k := key{tenant: rapid.SampledFrom([]string{"t1", "t2"}).Draw(rt, "tenant"), shard: rapid.Uint32Range(0, 1).Draw(rt, "shard")}
			seq := rapid.Uint64Range(1, 2).Draw(rt, "seq")
			srcs := rapid.SliceOfN(rapid.SampledFrom(ids), 1, 3).Draw(rt, "sources")
			if rapid.Bool().Draw(rt, "copy") { // equal strings, other bytes
				for i := range srcs {
					srcs[i] = strings.Clone(srcs[i])
				}
			}
			require.Equal(rt, jobName(k, seq, srcs), m.of(k, seq, srcs, h))
			// The caller's slice changing afterwards changes no memo.
			srcs[0] = "zz"
			require.Equal(rt, jobName(k, seq, srcs), m.of(k, seq, srcs, h))
		}
	})
}

// TestNameHandoff: the memo answers with a name a view handed over only
// for the same key, sequence number and source strings, and computes the
// name otherwise.
func TestNameHandoff(t *testing.T) {
	srcs := []string{strings.Clone("src-1"), strings.Clone("src-2")}
	k := key{tenant: "t", shard: 1}
	var m nameMemo
	h := &handoff{mu: new(sync.Mutex)}
	// A name no view would give, to see where the answer comes from.
	h.names.add(k, 3, srcs, "handed")
	h.names.add(k, 5, srcs, "handed-5")
	require.Equal(t, "handed", m.of(k, 3, slices.Clone(srcs), h))
	require.Nil(t, h.names.names, "taken by the planner")
	require.Equal(t, "handed-5", m.of(k, 5, srcs, h))
	require.Equal(t, jobName(k, 4, srcs), m.of(k, 4, srcs, h), "another sequence number")
	require.Equal(t, jobName(key{tenant: "t", shard: 2}, 5, srcs), m.of(key{tenant: "t", shard: 2}, 5, srcs, h), "another key")
	equal := []string{strings.Clone("src-1"), strings.Clone("src-2")}
	require.Equal(t, jobName(k, 3, equal), m.of(k, 3, equal, h), "equal sources in other strings")
	require.Equal(t, jobName(k, 3, srcs[:1]), m.of(k, 3, srcs[:1], h), "fewer sources")

	// A later view's names replace the earlier view's, whose arrays go,
	// cleared, to the next view; the name last answered is not among them.
	var later viewNames
	later.add(k, 7, srcs, "handed-7")
	require.Equal(t, "handed-5", m.of(k, 5, srcs, h))
	h.names = later
	require.Equal(t, "handed-7", m.of(k, 7, srcs, h))
	require.Equal(t, jobName(k, 5, srcs), m.of(k, 5, srcs, h), "the earlier view's names are gone")
	require.Len(t, m.spare.srcs, 0)
	require.GreaterOrEqual(t, cap(m.spare.srcs), 4)
	m.spare.add(k, 9, []string{"x", "y"}, "reused")
	require.Equal(t, jobName(k, 5, srcs), m.of(k, 5, srcs, h))
}

// TestJobNameFormat pins the job-name format: a change breaks the names of
// jobs in existing snapshots, whose claims Admissible would refuse.
func TestJobNameFormat(t *testing.T) {
	require.Equal(t, "tenant-1.s12.l0.12345.51fb895d05eda35a", jobName(key{"tenant-1", 12, 0}, 12345, []string{"src-1", "src-2"}))
	name := jobName(key{"", ck.AnyShard, 2}, 7, []string{"x"})
	require.Regexp(t, `^_\.sx\.l2\.7\.[0-9a-f]{16}$`, name)
	name = jobName(key{"ténant/with spaces", 3, 1}, 1, []string{"x"})
	require.Regexp(t, `^t__nant_with_spaces\.s3\.l1\.1\.[0-9a-f]{16}$`, name)
	long := jobName(key{string(make([]byte, 0)) + fmt.Sprintf("%0256d", 0), 4294967294, 63}, 1<<63, []string{"x"})
	require.NoError(t, ident.ValidateJobName(long))
	seq, ok := nameSeq(long)
	require.True(t, ok)
	require.Equal(t, uint64(1<<63), seq)
	for _, bad := range []string{"", "a.b", "a.1.0123456789abcdef0", "a.x.0123456789abcdef", "nodots"} {
		_, ok := nameSeq(bad)
		require.False(t, ok, bad)
	}
}

// TestItemSize pins the queue item size the chunk capacities are made for.
func TestItemSize(t *testing.T) {
	require.Equal(t, uintptr(56), unsafe.Sizeof(item{}))
}

// TestChunkSizeClasses checks that a chunk of each capacity fills its
// allocation: the bytes allocated per chunk, less the 8-byte header the
// allocator puts in front of objects with pointers larger than 512 bytes,
// exceed the items' by less than one item, so one more item would not fit.
// Other goroutines may allocate meanwhile, so the least of a few
// measurements counts.
func TestChunkSizeClasses(t *testing.T) {
	const size = int(unsafe.Sizeof(item{}))
	for _, c := range chunkCaps {
		const n = 64
		keep := make([][]item, n)
		best := uint64(math.MaxUint64)
		for range 5 {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			for i := range keep {
				keep[i] = make([]item, c)
			}
			runtime.ReadMemStats(&after)
			best = min(best, (after.TotalAlloc-before.TotalAlloc)/n)
			runtime.KeepAlive(keep)
		}
		use := c * size
		header := 0
		if use > 512 {
			header = 8
		}
		require.Less(t, int(best)-header-use, size, "capacity %d: %d bytes allocated for %d", c, best, use)
	}
}

// TestQueueOps drives a queue through appends, claims, merges and removals
// against a slice, keeping copies of the queue as views would and checking
// that none of them ever changes.
func TestQueueOps(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lc := LevelConfig{MaxBlocks: rapid.IntRange(1, 40).Draw(t, "maxBlocks"), MaxAge: 1}
		q := &queue{}
		var want []item
		var arr uint64
		type frozen struct {
			q     queue
			items []item
		}
		var views []frozen
		var out []item // taken items, candidates for merging back
		// Taken items as claims hold them (take may return a slice of a
		// chunk), with copies: no later operation may change them.
		var claims [][2][]item
		contents := func(q *queue) []item {
			var got []item
			q.visit(0, func(items []item) bool { got = append(got, items...); return true })
			return got
		}
		for step := range rapid.IntRange(1, 30).Draw(t, "steps") {
			switch rapid.IntRange(0, 5).Draw(t, "op") {
			case 0, 1: // append a run
				for range rapid.IntRange(1, 400).Draw(t, "n") {
					arr++
					it := item{id: fmt.Sprint("b", arr), arrival: arr, time: int64(arr)}
					q.push(&it)
					want = append(want, it)
				}
			case 2: // claim from the front
				if len(want) == 0 {
					continue
				}
				k := rapid.IntRange(1, len(want)).Draw(t, "k")
				got := q.take(k)
				require.Equal(t, want[:k], got)
				require.Equal(t, len(got), cap(got), "appending to a claim's items would write into the queue")
				claims = append(claims, [2][]item{got, slices.Clone(got)})
				out = append(out, got...)
				want = slices.Clone(want[k:])
			case 3: // put some taken items back
				if len(out) == 0 {
					continue
				}
				var back []item
				var rest []item
				for _, it := range out {
					if rapid.Bool().Draw(t, "back") {
						back = append(back, it)
					} else {
						rest = append(rest, it)
					}
				}
				slices.SortFunc(back, func(a, b item) int { return int(a.arrival) - int(b.arrival) })
				dupAt := -1
				if len(want) > 0 && rapid.IntRange(0, 4).Draw(t, "dup") == 0 {
					dupAt = rapid.IntRange(0, len(want)-1).Draw(t, "dupAt")
					back = append(back, want[dupAt])
					slices.SortFunc(back, func(a, b item) int { return int(a.arrival) - int(b.arrival) })
				}
				dups := q.merge(back)
				if dupAt >= 0 {
					require.Equal(t, 1, dups)
				} else {
					require.Zero(t, dups)
				}
				for _, it := range back {
					if !slices.ContainsFunc(want, func(x item) bool { return x.arrival == it.arrival }) {
						want = append(want, it)
					}
				}
				slices.SortFunc(want, func(a, b item) int { return int(a.arrival) - int(b.arrival) })
				out = rest
			case 4: // remove some
				ids := map[string]struct{}{}
				for _, it := range want {
					if rapid.IntRange(0, 9).Draw(t, "remove") == 0 {
						ids[it.id] = struct{}{}
					}
				}
				removed := q.remove(ids)
				require.Len(t, removed, len(ids))
				want = slices.DeleteFunc(slices.Clone(want), func(it item) bool { _, ok := ids[it.id]; return ok })
			case 5: // a view: freeze a copy
				views = append(views, frozen{q: *q, items: slices.Clone(want)})
				c := *q
				q = &c
			}
			require.Equal(t, len(want), q.n)
			if len(want) == 0 {
				require.Empty(t, contents(q))
			} else {
				require.Equal(t, want, contents(q))
				require.Equal(t, want[0], *q.first())
				require.Equal(t, want[len(want)-1], *q.last())
			}
			for i, c := range claims {
				require.Equal(t, c[1], c[0], "claim %d changed", i)
			}
			for i := range views {
				if step%5 != 0 && i != len(views)-1 {
					continue // every view is checked every fifth step
				}
				if len(views[i].items) == 0 {
					require.Empty(t, contents(&views[i].q))
				} else {
					require.Equal(t, views[i].items, contents(&views[i].q), "view %d changed", i)
				}
			}
			// Batches from any offset follow the rules.
			if len(want) > 0 {
				off := rapid.IntRange(0, len(want)-1).Draw(t, "off")
				b := formBatch(q, off, &lc)
				require.Equal(t, min(lc.MaxBlocks, len(want)-off), b.count)
				require.Equal(t, want[off].arrival, b.arr)
				require.Equal(t, b.count == lc.MaxBlocks, b.full)
			}
		}
	})
}

// TestRepeatedArrivalsAreHarmless: Restore does not look for arrival
// numbers shared across keys, claims and the quarantine (see Restore); a
// crafted state that repeats one must still plan every key, never panic,
// and never queue a block twice.
func TestRepeatedArrivalsAreHarmless(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Levels[0].MaxBlocks = 2
	p, err := New(cfg)
	require.NoError(t, err)
	for i, tenant := range []string{"a", "a", "b", "b", "c", "c"} {
		_, err := p.Enqueue(ck.Entry{Index: uint64(i + 1), Time: int64(i)}, &ck.BlockMeta{ID: fmt.Sprint("blk", i), Tenant: tenant})
		require.NoError(t, err)
	}
	pl, ok := p.View().Next(10, nil) // a's blocks, arrivals 1 and 2
	require.True(t, ok)
	require.NoError(t, p.Claim(ck.Entry{Index: 9, Time: 10}, &pl))
	// b's and c's head blocks both get arrival 1, the claimed blk0's.
	for _, tenant := range []string{"b", "c"} {
		q := p.lookup(key{tenant: tenant})
		old := q.head
		q.segs[0].c.items[q.headLo].arrival = 1
		p.refresh(q, old)
	}
	var b strings.Builder
	require.NoError(t, p.View().Snapshot(&b))
	r, err := Restore(strings.NewReader(b.String()))
	require.NoError(t, err)

	v := r.View()
	var tenants []string
	for {
		next, ok := v.Next(10, nil)
		if !ok {
			break
		}
		tenants = append(tenants, next.Tenant)
	}
	require.Equal(t, []string{"b", "c"}, tenants, "a key was hidden by another's arrival number")
	require.NoError(t, r.Return(pl.Name, pl.Sources))
	st := r.Stats(0)
	require.Equal(t, 6, st.Queued+int(st.Counters.Duplicates))
	require.Equal(t, 0, st.Claimed)
}

// TestLevel0AgingEntries: a full level-0 batch has an aging entry exactly
// when its tenant's rank is above 0 (and level 0 ages), made with that
// rank; every rank change, hold, claim and configuration change moves or
// removes it, so none is left behind.
func TestLevel0AgingEntries(t *testing.T) {
	p, err := New(DefaultConfig())
	require.NoError(t, err)
	idx := uint64(0)
	add := func(tenant string, n int) {
		for range n {
			idx++
			ok, err := p.Enqueue(ck.Entry{Index: idx, Time: 1}, &ck.BlockMeta{ID: fmt.Sprint(tenant, idx), Tenant: tenant})
			require.NoError(t, err)
			require.True(t, ok)
		}
	}
	add("a", 20) // full
	add("b", 40) // full, and a second batch queued
	add("c", 3)  // partial: timed, never aging
	entries := func() map[string]uint8 {
		got := map[string]uint8{}
		p.s.aging.Ascend(func(e timeEnt) bool {
			require.Zero(t, e.level)
			_, dup := got[e.tenant]
			require.False(t, dup)
			got[e.tenant] = e.rank
			return true
		})
		return got
	}
	require.Empty(t, entries(), "rank 0: level 0 does not age")
	require.NoError(t, p.SetTerms("b", &Terms{Rank: 2}))
	require.NoError(t, p.SetTerms("c", &Terms{Rank: 2}))
	require.Equal(t, map[string]uint8{"b": 2}, entries())
	require.NoError(t, p.SetTerms("b", &Terms{Rank: 1}))
	require.Equal(t, map[string]uint8{"b": 1}, entries())
	require.NoError(t, p.SetDefaultTerms(Terms{Rank: 1}))
	require.Equal(t, map[string]uint8{"a": 1, "b": 1}, entries())
	require.NoError(t, p.SetTerms("b", &Terms{Rank: 0}))
	require.Equal(t, map[string]uint8{"a": 1}, entries())
	require.NoError(t, p.SetTerms("b", nil))
	p.SetHold("a", true, p.s.holdOf("a").levels)
	require.Equal(t, map[string]uint8{"b": 1}, entries())
	p.SetHold("a", false, p.s.holdOf("a").levels)
	require.NoError(t, p.SetTerms("a", &Terms{Rank: 2}))
	require.Equal(t, map[string]uint8{"a": 2, "b": 1}, entries())
	pl, ok := p.View().Next(1, &PlanOptions{Skip: func(tn string, _ uint32) bool { return tn != "b" }})
	require.True(t, ok)
	require.NoError(t, p.Claim(ck.Entry{Index: idx + 1, Time: 1}, &pl))
	require.Equal(t, map[string]uint8{"a": 2, "b": 1}, entries(), "b's second batch")
	cfg := DefaultConfig()
	cfg.Levels[0].AgingThreshold = 0
	require.NoError(t, p.SetConfig(cfg))
	require.Empty(t, entries(), "level 0 does not age")
	require.NoError(t, p.SetConfig(DefaultConfig()))
	require.Equal(t, map[string]uint8{"a": 2, "b": 1}, entries())
	require.NoError(t, p.SetDefaultTerms(Terms{Rank: 0}))
	require.NoError(t, p.SetTerms("a", nil))
	require.NoError(t, p.SetTerms("c", nil))
	require.Empty(t, entries(), "every tenant at rank 0 again")
}

// TestLazyViews checks the copy-on-write rule (doc.go): a view freezes
// only the trees it reads, views opened while a tree does not change
// share one frozen tree, a closed view costs the planner no copy, and an
// open one keeps what it was opened on whatever the planner does next.
func TestLazyViews(t *testing.T) {
	p, err := New(DefaultConfig())
	require.NoError(t, err)
	idx := uint64(0)
	add := func(tenant string, n int) {
		t.Helper()
		for range n {
			idx++
			ok, err := p.Enqueue(ck.Entry{Index: idx, Time: 1}, &ck.BlockMeta{ID: fmt.Sprintf("%s-%04d", tenant, idx), Tenant: tenant})
			require.NoError(t, err)
			require.True(t, ok)
		}
	}
	snapshot := func(v *View) string {
		t.Helper()
		var b strings.Builder
		require.NoError(t, v.Snapshot(&b))
		return b.String()
	}
	add("a", 30)

	// Closed before reading anything: the planner changes in place.
	gen := p.gen
	v := p.View()
	w := p.View()
	require.True(t, v.s.keys.SameSlot(&w.s.keys), "views opened on an unchanged tree share its frozen")
	require.Nil(t, v.s.keys.BTreeG, "not read yet")
	v.Close()
	v.Close() // idempotent
	w.Close()
	add("a", 1)
	require.Equal(t, gen, p.gen, "no view read the queues: none is copied")
	require.False(t, p.s.keys.Pending(), "settled")

	// Planning reads the indexes and the queues in place: it freezes
	// nothing, and a view closed before the planner changes costs it no
	// copy.
	v = p.View()
	pl, ok := v.Next(1, nil)
	require.True(t, ok)
	require.Nil(t, v.s.keys.BTreeG, "planning freezes nothing")
	require.Nil(t, v.s.full.BTreeG)
	require.Nil(t, v.s.claims.BTreeG)
	v.Close()
	require.NoError(t, p.Claim(ck.Entry{Index: idx + 1, Time: 1}, &pl))
	idx++
	require.Equal(t, gen, p.gen, "the view planned from the queues in place and was closed: none is copied")

	// A view open when the planner changes keeps the state it was opened
	// on: the planner freezes what it changes for the view, and copies
	// the queues.
	add("c", 31)
	add("d", 31)
	v, w = p.View(), p.View()
	var want []string
	for pl, ok := w.Next(1, nil); ok; pl, ok = w.Next(1, nil) {
		want = append(want, pl.Name)
	}
	require.Greater(t, len(want), 1)
	pl, ok = v.Next(1, nil)
	require.True(t, ok)
	require.Equal(t, want[0], pl.Name)
	require.NoError(t, p.Claim(ck.Entry{Index: idx + 1, Time: 1}, &pl))
	idx++
	require.Equal(t, gen+1, p.gen, "the view is open: the planner copies the queues")
	p.s.vmu.Lock()
	require.True(t, v.s.keys.Frozen())
	require.True(t, v.s.claims.Frozen(), "frozen when the planner changed it, unread")
	require.False(t, v.s.quar.Frozen(), "neither read nor changed")
	p.s.vmu.Unlock()
	add("b", 25)
	before := snapshot(w)
	w.Close()
	require.Equal(t, before, snapshot(v), "the view keeps the state it was opened on")
	for _, name := range want[1:] {
		pl, ok := v.Next(1, nil)
		require.True(t, ok)
		require.Equal(t, name, pl.Name, "and plans as it would have")
	}
	v.Close()

	// A view's Release writes to a clone of its own, not to the frozen
	// tree other views share.
	p.SetHold("b", true, 0)
	v, w = p.View(), p.View()
	var got []string
	for {
		pl, ok := v.Next(1, &PlanOptions{Release: []string{"b"}})
		if !ok {
			break
		}
		got = append(got, pl.Tenant)
	}
	require.Contains(t, got, "b")
	for {
		pl, ok := w.Next(1, nil)
		if !ok {
			break
		}
		require.NotEqual(t, "b", pl.Tenant, "held in the other view")
	}
	require.True(t, p.s.isHeld("b", 0))
	require.Panics(t, func() { v.Close(); v.Next(1, nil) }, "a closed view must not be used")
}

// TestForceValidate: the entries planning ignores.
func TestForceValidate(t *testing.T) {
	require.ErrorIs(t, (&Force{Tenant: "A", AllTenants: true}).Validate(), errInvalidForce)
	require.ErrorIs(t, (&Force{Tenant: "bad\x01"}).Validate(), ident.ErrInvalidID)
	require.NoError(t, (&Force{AllTenants: true}).Validate())
	require.NoError(t, (&Force{Tenant: "A", Level: 3}).Validate())
}

// TestRestoreRefusesClaimOfAnotherKey: a claim's name starts with its
// key's prefix (eachClaimOf finds the claims of a key by it), and restore
// refuses a snapshot whose claim says otherwise.
func TestRestoreRefusesClaimOfAnotherKey(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Levels[0].MaxBlocks = 2
	p, err := New(cfg)
	require.NoError(t, err)
	for i := range 2 {
		_, err := p.Enqueue(ck.Entry{Index: uint64(i + 1), Time: 1}, &ck.BlockMeta{ID: fmt.Sprintf("b%d", i), Tenant: "t", Shard: 1, MinTime: 0, MaxTime: 1})
		require.NoError(t, err)
	}
	plan, ok := p.View().Next(2, nil)
	require.True(t, ok)
	require.NoError(t, p.Claim(ck.Entry{Index: 3, Time: 2}, &plan))
	var buf strings.Builder
	require.NoError(t, p.View().Snapshot(&buf))
	_, err = Restore(strings.NewReader(buf.String()))
	require.NoError(t, err)

	c, ok := p.s.getClaim(plan.Name)
	require.True(t, ok)
	c.k.shard = 2 // the name says shard 1
	buf.Reset()
	require.NoError(t, p.View().Snapshot(&buf))
	_, err = Restore(strings.NewReader(buf.String()))
	require.ErrorIs(t, err, ck.ErrMalformed)
	require.ErrorContains(t, err, "not a name of tenant \"t\", shard 2, level 0")
}
