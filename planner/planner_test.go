package planner_test

import (
	"bufio"
	"bytes"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/index"
	"github.com/compactkit/compactkit/internal/ident"
	"github.com/compactkit/compactkit/planner"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC).UnixNano()

// fixture drives a planner with consecutive entries.
type fixture struct {
	t     *testing.T
	p     *planner.Planner
	index uint64
	now   int64
	ids   int
	// mirror, when set, is a planner that add queues the same blocks to.
	mirror *planner.Planner
}

func newFixture(t *testing.T, cfg planner.Config) *fixture {
	t.Helper()
	p, err := planner.New(cfg)
	require.NoError(t, err)
	return &fixture{t: t, p: p, now: t0}
}

func (f *fixture) entry() ck.Entry {
	f.index++
	return ck.Entry{Index: f.index, Term: 1, Time: f.now}
}

func (f *fixture) advance(d time.Duration) { f.now += int64(d) }

// add enqueues n blocks of a key in one entry, to the mirror too, and
// returns their IDs.
func (f *fixture) add(tenant string, shard, level uint32, n int) []string {
	f.t.Helper()
	e := f.entry()
	var ids []string
	for range n {
		f.ids++
		b := ck.BlockMeta{ID: fmt.Sprintf("%s-%d-%d-%06d", tenant, shard, level, f.ids), Tenant: tenant, Shard: shard, Level: level,
			MinTime: f.now - int64(10*time.Second), MaxTime: f.now, Size: 100}
		if tenant == "" {
			b.ID = fmt.Sprintf("multi-%d-%d-%06d", shard, level, f.ids)
			b.Datasets = []ck.DatasetMeta{{Tenant: "x", Name: "svc"}}
		}
		for _, p := range []*planner.Planner{f.p, f.mirror} {
			if p != nil {
				ok, err := p.Enqueue(e, &b)
				require.NoError(f.t, err)
				require.True(f.t, ok)
			}
		}
		ids = append(ids, b.ID)
	}
	return ids
}

// poll plans one job on a fresh view at the current time and claims it.
func (f *fixture) poll(opts *planner.PlanOptions) (ck.JobPlan, bool) {
	f.t.Helper()
	pl, ok := f.p.View().Next(f.now, opts)
	if ok {
		require.NoError(f.t, f.p.Claim(f.entry(), &pl))
	}
	return pl, ok
}

// mustPoll is poll where a job must be ready.
func (f *fixture) mustPoll(opts *planner.PlanOptions) ck.JobPlan {
	f.t.Helper()
	pl, ok := f.poll(opts)
	require.True(f.t, ok)
	return pl
}

func (f *fixture) snapshot() []byte {
	f.t.Helper()
	return snapshotBytes(f.t, f.p)
}

// nextBoth plans a job on fresh views of a and b at now, requires the same
// plan of both, and claims it in both at entry() when there is one.
func nextBoth(t *testing.T, a, b *planner.Planner, now int64, entry func() ck.Entry) (ck.JobPlan, bool) {
	t.Helper()
	pa, okA := a.View().Next(now, nil)
	pb, okB := b.View().Next(now, nil)
	require.Equal(t, okA, okB)
	require.Equal(t, pa, pb)
	if okA {
		e := entry()
		require.NoError(t, a.Claim(e, &pa))
		require.NoError(t, b.Claim(e, &pb))
	}
	return pa, okA
}

// nextPlans plans n jobs on v at now, each of which must be ready.
func nextPlans(t testing.TB, v *planner.View, now int64, n int) []ck.JobPlan {
	t.Helper()
	var plans []ck.JobPlan
	for range n {
		pl, ok := v.Next(now, nil)
		require.True(t, ok)
		plans = append(plans, pl)
	}
	return plans
}

// TestFairness: tenant A has 100,000 ready blocks and B, C, D and E 20
// each; polls asking for one job each serve every tenant within the first
// five plans, and A still gets every fifth.
func TestFairness(t *testing.T) {
	f := newFixture(t, planner.DefaultConfig())
	for shard := range uint32(4) {
		f.add("A", shard, 0, 25_000)
	}
	for _, tn := range []string{"B", "C", "D", "E"} {
		f.add(tn, 0, 0, 20)
	}
	var tenants []string
	for range 5 {
		pl := f.mustPoll(nil)
		require.Len(t, pl.Sources, 20)
		tenants = append(tenants, pl.Tenant)
	}
	require.ElementsMatch(t, []string{"A", "B", "C", "D", "E"}, tenants)
	require.Equal(t, "A", tenants[0])
	// B..E are drained: A gets every job now.
	for range 10 {
		pl := f.mustPoll(nil)
		require.Equal(t, "A", pl.Tenant)
	}

	// With B..E refilled as fast as they are served, A gets every fifth
	// job, and nobody waits more than four jobs. (The rotation goes on from
	// A, the last tenant served.)
	for _, tn := range []string{"B", "C", "D", "E"} {
		f.add(tn, 0, 0, 20)
	}
	var order []string
	for range 25 {
		pl := f.mustPoll(nil)
		order = append(order, pl.Tenant)
		if pl.Tenant != "A" {
			f.add(pl.Tenant, 0, 0, 20)
		}
	}
	for i, tn := range order {
		require.Equal(t, []string{"B", "C", "D", "E", "A"}[i%5], tn, "job %d: %v", i, order)
	}
	// 100,000 + 4×20 queued, 15 + 25 jobs of 20 claimed, 4 + 20 refills of 20.
	require.Equal(t, 100_000+4*20-40*20+24*20, f.p.Stats(0).Queued)
}

// TestFairnessWithinView: successive plans of one view rotate across
// tenants exactly like successive polls do.
func TestFairnessWithinView(t *testing.T) {
	f := newFixture(t, planner.DefaultConfig())
	f.add("A", 0, 0, 2000)
	for _, tn := range []string{"B", "C"} {
		f.add(tn, 0, 0, 40)
	}
	v := f.p.View()
	var got []string
	for range 9 {
		pl, ok := v.Next(f.now, nil)
		require.True(t, ok)
		got = append(got, pl.Tenant)
	}
	require.Equal(t, []string{"A", "B", "C", "A", "B", "C", "A", "A", "A"}, got)
}

// TestQuietKey: a key that receives no more blocks is planned once its
// oldest block is older than the level's max age at the planning time,
// without waiting for another block.
func TestQuietKey(t *testing.T) {
	cfg := planner.DefaultConfig()
	f := newFixture(t, cfg)
	ids := f.add("quiet", 3, 1, 2)
	v := f.p.View()
	_, ok := v.Next(f.now+int64(cfg.Levels[1].MaxAge), nil)
	require.False(t, ok, "planned before the max age passed")
	pl, ok := v.Next(f.now+int64(cfg.Levels[1].MaxAge)+1, nil)
	require.True(t, ok, "a quiet key is never planned")
	require.Equal(t, ids, pl.Sources)
	require.Equal(t, uint32(1), pl.Level)
	require.Equal(t, uint32(3), pl.Shard)
	// Nothing else was applied meanwhile: the planner's time did not move.
	require.Equal(t, t0, f.p.Stats(0).Now)
	// A partial batch at a level without max age waits for a full batch.
	cfg.Levels[1].MaxAge = 0
	require.NoError(t, f.p.SetConfig(cfg))
	_, ok = f.p.View().Next(f.now+int64(1000*time.Hour), nil)
	require.False(t, ok)
}

// TestBatchLimits: count, bytes and span cut batches; the remainder stays
// queued in order.
func TestBatchLimits(t *testing.T) {
	cfg := planner.DefaultConfig()
	cfg.Levels[0] = planner.LevelConfig{MaxBlocks: 5, MaxBytes: 300, MaxSpan: time.Hour, MaxAge: time.Minute}
	f := newFixture(t, cfg)
	e := f.entry()
	add := func(id string, size int64, minT, maxT time.Duration) {
		b := ck.BlockMeta{ID: id, Tenant: "t", MinTime: t0 + int64(minT), MaxTime: t0 + int64(maxT), Size: size}
		_, err := f.p.Enqueue(e, &b)
		require.NoError(t, err)
	}
	add("a", 100, 0, time.Minute)
	add("b", 200, 0, time.Minute)           // exactly 300 bytes: full
	add("c", 50, 0, time.Minute)            //
	add("d", 50, 2*time.Hour, 3*time.Hour)  // span cut: c alone
	add("e", 500, 2*time.Hour, 3*time.Hour) // larger than the limit: d alone, then e alone
	add("f", 1, 2*time.Hour, 3*time.Hour)
	v := f.p.View()
	var got [][]string
	for {
		pl, ok := v.Next(f.now, nil)
		if !ok {
			break
		}
		got = append(got, pl.Sources)
	}
	// f is alone, not full and not old: it waits.
	require.Equal(t, [][]string{{"a", "b"}, {"c"}, {"d"}, {"e"}}, got)
	pl, ok := v.Next(f.now+int64(time.Minute)+1, nil)
	require.True(t, ok)
	require.Equal(t, []string{"f"}, pl.Sources)
}

// TestAging: a busy level 0 is served first, until a higher level's batch
// has been ready for longer than its aging threshold; it then competes as
// level 0 and, being the tenant's oldest batch, goes first.
func TestAging(t *testing.T) {
	cfg := planner.DefaultConfig()
	f := newFixture(t, cfg)
	l1 := f.add("t", 0, 1, 10) // full at once: ready now
	f.advance(time.Second)
	f.add("t", 0, 0, 20*100) // a backlog of full level-0 batches
	v := f.p.View()
	for range 5 {
		pl, ok := v.Next(f.now, nil)
		require.True(t, ok)
		require.Equal(t, uint32(0), pl.Level, "level 1 served before level 0")
	}
	aged := t0 + int64(cfg.Levels[1].AgingThreshold) + 1
	v = f.p.View()
	pl, ok := v.Next(aged, nil)
	require.True(t, ok)
	require.Equal(t, uint32(1), pl.Level, "an aged batch still waits")
	require.Equal(t, l1, pl.Sources)

	// A batch that became ready by age (not full) ages from then on.
	g := newFixture(t, cfg)
	g.add("u", 0, 2, 1)
	g.advance(time.Second)
	g.add("u", 0, 0, 20*10)
	readyAt := t0 + int64(cfg.Levels[2].MaxAge)
	pl, ok = g.p.View().Next(readyAt+int64(cfg.Levels[2].AgingThreshold), nil)
	require.True(t, ok)
	require.Equal(t, uint32(0), pl.Level)
	pl, ok = g.p.View().Next(readyAt+int64(cfg.Levels[2].AgingThreshold)+1, nil)
	require.True(t, ok)
	require.Equal(t, uint32(2), pl.Level)

	// Without aging, level 2 waits for level 0 to drain.
	cfg.Levels[2].AgingThreshold = 0
	require.NoError(t, g.p.SetConfig(cfg))
	v = g.p.View()
	for range 10 {
		pl, ok := v.Next(readyAt+int64(1000*time.Hour), nil)
		require.True(t, ok)
		require.Equal(t, uint32(0), pl.Level)
	}
	pl, ok = v.Next(readyAt+int64(1000*time.Hour), nil)
	require.True(t, ok)
	require.Equal(t, uint32(2), pl.Level)
}

// TestPausedTenants: a paused tenant's (or level's) blocks stay queued and
// no job is planned for them; once resumed, they are planned.
func TestPausedTenants(t *testing.T) {
	f := newFixture(t, planner.DefaultConfig())
	a := f.add("A", 0, 0, 40)
	f.add("B", 0, 0, 20)
	f.add("B", 0, 1, 10)
	paused := map[string]bool{"A": true}
	opts := &planner.PlanOptions{Skip: func(tenant string, level uint32) bool {
		return paused[tenant] || tenant == "B" && level == 1
	}}
	var got []string
	for {
		pl, ok := f.poll(opts)
		if !ok {
			break
		}
		got = append(got, fmt.Sprint(pl.Tenant, "/", pl.Level))
	}
	require.Equal(t, []string{"B/0"}, got)
	st := f.p.Stats(0)
	require.Equal(t, 50, st.Queued, "paused blocks must stay queued")
	require.Equal(t, 2, st.Levels[0].ReadyBatches) // A's two full batches

	delete(paused, "A")
	pl := f.mustPoll(opts)
	require.Equal(t, a[:20], pl.Sources)
	pl = f.mustPoll(nil)
	require.Equal(t, a[20:], pl.Sources) // level 0 first
	pl = f.mustPoll(nil)
	require.Equal(t, "B", pl.Tenant)
	require.Equal(t, uint32(1), pl.Level)
}

// TestTombstonesOnce: tombstones are attached at most TombstonesPerJob per
// job, only to jobs of the configured levels, and never twice — even when
// the iterator restarts on every call, as Pyroscope's planner did.
func TestTombstonesOnce(t *testing.T) {
	f := newFixture(t, planner.DefaultConfig())
	f.add("t", 0, 0, 60)
	f.add("t", 0, 2, 10)
	pool := []ck.Tombstone{
		{Kind: ck.TombstoneBlock, Target: "old-1"},
		{Kind: ck.TombstoneBlock, Target: "old-2"},
		{Kind: ck.TombstonePrefix, Target: "blocks/job/7/"},
	}
	opts := &planner.PlanOptions{Tombstones: func() func() (ck.Tombstone, bool) {
		return nil
	}()}
	v := f.p.View()
	var all []ck.Tombstone
	levels := map[uint32][]int{}
	for {
		i := 0
		opts.Tombstones = func() (ck.Tombstone, bool) { // restarts every call
			if i == len(pool) {
				return ck.Tombstone{}, false
			}
			i++
			return pool[i-1], true
		}
		pl, ok := v.Next(f.now+int64(24*time.Hour), opts)
		if !ok {
			break
		}
		require.NoError(t, pl.Validate())
		require.LessOrEqual(t, len(pl.Tombstones), 2)
		levels[pl.Level] = append(levels[pl.Level], len(pl.Tombstones))
		all = append(all, pl.Tombstones...)
	}
	require.ElementsMatch(t, pool, all, "every tombstone attached exactly once")
	require.Equal(t, []int{2, 1, 0}, levels[0])
	require.Equal(t, []int{0}, levels[2], "level 2 is outside the tombstone levels")

	// An iterator that never ends with the same tombstone does not hang.
	v = f.p.View()
	_, ok := v.Next(f.now, &planner.PlanOptions{Tombstones: func() (ck.Tombstone, bool) { return pool[0], true }})
	require.True(t, ok)
	pl, ok := v.Next(f.now, &planner.PlanOptions{Tombstones: func() (ck.Tombstone, bool) { return pool[0], true }})
	require.True(t, ok)
	require.Empty(t, pl.Tombstones)
}

// TestCancelReturnsSources: a cancelled job's sources go back to their
// original positions, ahead of newer blocks; the plan that takes them again
// has a new name.
func TestCancelReturnsSources(t *testing.T) {
	f := newFixture(t, planner.DefaultConfig())
	first := f.add("t", 0, 0, 20)
	pl := f.mustPoll(nil)
	require.Equal(t, first, pl.Sources)
	claimed, ok := f.p.Claimed(pl.Name)
	require.True(t, ok)
	require.Equal(t, first, claimed)
	later := f.add("t", 0, 0, 20)
	require.NoError(t, f.p.Return(pl.Name, first))
	_, ok = f.p.Claimed(pl.Name)
	require.False(t, ok)
	require.ErrorContains(t, f.p.Return(pl.Name, nil), "planner: unknown job")

	again := f.mustPoll(nil)
	require.Equal(t, first, again.Sources, "returned blocks lost their position")
	require.NotEqual(t, pl.Name, again.Name, "a job name was reused")
	next := f.mustPoll(nil)
	require.Equal(t, later, next.Sources)

	// The old plan can never be claimed again, even with its sources back.
	require.NoError(t, f.p.Return(again.Name, again.Sources))
	require.ErrorIs(t, f.p.Admissible(&pl), planner.ErrNotAdmissible)
	st := f.p.Stats(0)
	require.Equal(t, uint64(2), st.Counters.Returns)
	require.Equal(t, uint64(40), st.Counters.ReturnedBlocks)
}

// TestRefusedCompletionReturnsSurvivors: when the index refuses a
// completion, the surviving sources return; the others are forgotten.
func TestRefusedCompletionReturnsSurvivors(t *testing.T) {
	f := newFixture(t, planner.DefaultConfig())
	ids := f.add("t", 0, 1, 10)
	pl := f.mustPoll(nil)
	survivors := []string{ids[2], ids[7]}
	require.ErrorContains(t, f.p.Return(pl.Name, []string{ids[2], "other"}), "planner: not a source of the job")
	require.NoError(t, f.p.Return(pl.Name, survivors))
	v := f.p.View()
	got, ok := v.Next(f.now+int64(time.Hour), nil)
	require.True(t, ok)
	require.Equal(t, survivors, got.Sources)
}

// TestEvictQuarantinesSources: an evicted job's sources leave compaction,
// are listed for operators, and return to their positions when re-queued.
func TestEvictQuarantinesSources(t *testing.T) {
	f := newFixture(t, planner.DefaultConfig())
	ids := f.add("t", 5, 0, 20)
	pl := f.mustPoll(nil)
	later := f.add("t", 5, 0, 20)
	f.advance(time.Minute)
	require.NoError(t, f.p.Quarantine(f.entry(), pl.Name, "failed 3 times: corrupt block"))
	require.ErrorContains(t, f.p.Quarantine(f.entry(), pl.Name, ""), "planner: unknown job")

	items, next := f.p.Quarantined("", 15)
	require.Len(t, items, 15)
	require.Equal(t, ids[14], next)
	rest, next := f.p.Quarantined(next, 15)
	require.Len(t, rest, 5)
	require.Empty(t, next)
	q := items[0]
	require.Equal(t, planner.QuarantinedBlock{ID: ids[0], Tenant: "t", Shard: 5, Level: 0, Job: pl.Name,
		Reason: "failed 3 times: corrupt block", Since: f.now, Arrived: t0, MinTime: t0 - int64(10*time.Second), MaxTime: t0, Size: 100}, q)
	st := f.p.Stats(0)
	require.Equal(t, 20, st.Quarantined)
	require.Equal(t, 20, st.Levels[0].Quarantined)

	// Quarantined blocks are not planned.
	got, ok := f.p.View().Next(f.now, nil)
	require.True(t, ok)
	require.Equal(t, later, got.Sources)

	n, err := f.p.Requeue(append([]string{ids[3], ids[0], "unknown"}, ids[4:]...))
	require.NoError(t, err)
	require.Equal(t, 18, n)
	_, err = f.p.Requeue([]string{"bad//id"})
	require.Error(t, err)
	got, ok = f.p.View().Next(f.now, nil)
	require.True(t, ok)
	want := append(append([]string{ids[0]}, ids[3:]...), later[:2]...)
	require.Equal(t, want, got.Sources, "re-queued blocks go back to their arrival positions")
	items, _ = f.p.Quarantined("", 0)
	require.Len(t, items, 2)
}

// TestRetention: retention drops queued and quarantined blocks; a dropped
// claimed block names its job, which the state machine cancels, returning
// the sources still live.
func TestRetention(t *testing.T) {
	f := newFixture(t, planner.DefaultConfig())
	claimedIDs := f.add("t", 0, 0, 20)
	pl := f.mustPoll(nil)
	queued := f.add("t", 0, 0, 10)
	block := func(id string) ck.BlockMeta {
		return ck.BlockMeta{ID: id, Tenant: "t", Shard: 0, Level: 0}
	}
	drop := []ck.BlockMeta{block(queued[0]), block(queued[1]), block(claimedIDs[5]), block(claimedIDs[6]), block("never-seen"),
		{ID: "final", Tenant: "t", Level: 3}}
	jobs := f.p.Drop(drop)
	require.Equal(t, []string{pl.Name}, jobs)
	st := f.p.Stats(0)
	require.Equal(t, 8, st.Queued)
	require.Equal(t, uint64(2), st.Counters.Dropped)
	require.Equal(t, uint64(1), st.Counters.MissedRemovals)

	// The state machine cancels the job and returns the live sources.
	live := slices.DeleteFunc(slices.Clone(claimedIDs), func(id string) bool { return id == claimedIDs[5] || id == claimedIDs[6] })
	require.NoError(t, f.p.Return(pl.Name, live))
	got, ok := f.p.View().Next(f.now, nil)
	require.True(t, ok)
	require.Equal(t, append(live, queued[2:4]...), got.Sources)
}

// TestCrossShard: a cross-shard level keys a tenant's blocks of all shards
// together; after the option changes, blocks queued under the former shape
// are still planned.
func TestCrossShard(t *testing.T) {
	cfg := planner.DefaultConfig()
	cfg.Levels[1].CrossShard = true
	f := newFixture(t, cfg)
	var all []string
	for shard := range uint32(5) {
		all = append(all, f.add("t", shard, 1, 2)...)
	}
	pl := f.mustPoll(nil)
	require.Equal(t, ck.AnyShard, pl.Shard)
	require.Equal(t, all, pl.Sources)

	f.add("t", 1, 1, 4)
	cfg.Levels[1].CrossShard = false
	require.NoError(t, f.p.SetConfig(cfg))
	f.add("t", 1, 1, 6)
	require.Equal(t, 2, f.p.Stats(0).Levels[1].Keys)
	v := f.p.View()
	shards := map[uint32]int{}
	for {
		pl, ok := v.Next(f.now+int64(time.Hour), nil)
		if !ok {
			break
		}
		shards[pl.Shard] += len(pl.Sources)
	}
	require.Equal(t, map[uint32]int{ck.AnyShard: 4, 1: 6}, shards)
}

// TestCrossShardOutputs: the outputs of a cross-shard job carry AnyShard;
// they are queued under their tenant's cross-shard key at the next level
// even where that level keys by shard, apart from the per-shard blocks, and
// planned into a cross-shard job of their own.
func TestCrossShardOutputs(t *testing.T) {
	cfg := planner.DefaultConfig()
	cfg.Levels[1].MaxBlocks = 3
	f := newFixture(t, cfg)
	outs := f.add("t", ck.AnyShard, 1, 3)
	perShard := f.add("t", 2, 1, 3)
	require.Equal(t, 2, f.p.Stats(0).Levels[1].Keys)
	got := map[uint32][]string{}
	for range 2 {
		pl := f.mustPoll(nil)
		got[pl.Shard] = pl.Sources
	}
	require.Equal(t, map[uint32][]string{ck.AnyShard: outs, 2: perShard}, got)
}

// TestFinalLevel: blocks at or beyond the final level are not queued, and
// the final level cannot be lowered below a level that still holds blocks.
func TestFinalLevel(t *testing.T) {
	cfg := planner.DefaultConfig()
	f := newFixture(t, cfg)
	ok, err := f.p.Enqueue(f.entry(), &ck.BlockMeta{ID: "final", Tenant: "t", Level: 3})
	require.NoError(t, err)
	require.False(t, ok)
	f.add("t", 0, 2, 10)
	low := cfg
	low.FinalLevel = 2
	low.Levels = low.Levels[:2]
	require.ErrorIs(t, f.p.SetConfig(low), planner.ErrInvalidConfig)
	pl := f.mustPoll(nil)
	require.ErrorIs(t, f.p.SetConfig(low), planner.ErrInvalidConfig, "a claimed level-2 block would be stranded")
	require.NoError(t, f.p.Complete(pl.Name))
	require.NoError(t, f.p.SetConfig(low))
	require.Equal(t, low, f.p.Config())
	ok, err = f.p.Enqueue(f.entry(), &ck.BlockMeta{ID: "now-final", Tenant: "t", Level: 2})
	require.NoError(t, err)
	require.False(t, ok)
}

// TestAdmissible: plans are admissible only while their sources are the
// oldest blocks of their key and their name is fresh.
func TestAdmissible(t *testing.T) {
	f := newFixture(t, planner.DefaultConfig())
	f.add("t", 0, 0, 60)
	v := f.p.View()
	p1, _ := v.Next(f.now, nil)
	p2, _ := v.Next(f.now, nil)
	p3, _ := v.Next(f.now, nil)
	require.NoError(t, f.p.Admissible(&p1))
	require.ErrorIs(t, f.p.Admissible(&p2), planner.ErrNotAdmissible, "not the oldest blocks yet")
	require.ErrorIs(t, f.p.Claim(f.entry(), &p2), planner.ErrNotAdmissible)

	// Plans prepared on the same view are applied in order.
	require.NoError(t, f.p.Claim(f.entry(), &p1))
	require.NoError(t, f.p.Claim(f.entry(), &p2))
	require.ErrorIs(t, f.p.Claim(f.entry(), &p1), planner.ErrNotAdmissible)

	// A tampered plan is refused, and nothing changes.
	before := f.snapshot()
	bad := p3.Clone()
	bad.Sources[0], bad.Sources[1] = bad.Sources[1], bad.Sources[0]
	require.ErrorIs(t, f.p.Claim(f.entry(), &bad), planner.ErrNotAdmissible)
	bad = p3.Clone()
	bad.Name = "t.s0.l0.3.0000000000000000"
	require.ErrorIs(t, f.p.Claim(f.entry(), &bad), planner.ErrNotAdmissible)
	bad = p3.Clone()
	bad.Sources = bad.Sources[:19]
	require.ErrorIs(t, f.p.Claim(f.entry(), &bad), planner.ErrNotAdmissible)
	for _, bad := range []ck.JobPlan{{Name: p3.Name}, {Name: "x", Tenant: "t", Sources: []string{"a"}}, {Name: p3.Name, Level: 5, Sources: p3.Sources}} {
		require.ErrorIs(t, f.p.Admissible(&bad), planner.ErrNotAdmissible)
	}
	require.ErrorIs(t, f.p.Admissible(nil), planner.ErrNotAdmissible)
	require.Error(t, f.p.Claim(ck.Entry{}, &p3))
	require.Equal(t, before, f.snapshot())
	require.NoError(t, f.p.Claim(f.entry(), &p3))
	require.Equal(t, uint64(3), f.p.Stats(0).Counters.Claims)

	// A closed view hands the names of its plans to the planner, which
	// checks a plan's name against them: a plan renamed, or whose sources
	// the caller changed in place, is refused all the same.
	f.add("t", 0, 0, 40)
	v = f.p.View()
	p4, _ := v.Next(f.now, nil)
	p5, _ := v.Next(f.now, nil)
	v.Close()
	name := p4.Name
	p4.Name = p5.Name
	require.ErrorIs(t, f.p.Claim(f.entry(), &p4), planner.ErrNotAdmissible)
	p4.Name = name
	first := p4.Sources[0]
	p4.Sources[0] = p5.Sources[0]
	require.ErrorIs(t, f.p.Claim(f.entry(), &p4), planner.ErrNotAdmissible)
	p4.Sources[0] = first
	require.NoError(t, f.p.Claim(f.entry(), &p4))
	require.NoError(t, f.p.Claim(f.entry(), &p5))
}

// TestJobNames: names are deterministic, valid, readable and unique.
func TestJobNames(t *testing.T) {
	run := func() []string {
		f := newFixture(t, planner.DefaultConfig())
		f.add("acme corp", 7, 0, 20)
		f.add("", 2, 0, 20)
		var names []string
		for range 2 {
			pl := f.mustPoll(nil)
			require.NoError(t, ident.ValidateJobName(pl.Name))
			names = append(names, pl.Name)
			require.NoError(t, f.p.Return(pl.Name, pl.Sources)) // cancel: the same sources are planned again
		}
		for range 2 {
			pl := f.mustPoll(nil)
			names = append(names, pl.Name)
		}
		return names
	}
	a, b := run(), run()
	require.Equal(t, a, b, "job names are not deterministic")
	seen := map[string]bool{}
	for _, n := range a {
		require.False(t, seen[n], "name %s used twice", n)
		seen[n] = true
	}
	require.Regexp(t, `^_\.s2\.l0\.1\.[0-9a-f]{16}$`, a[0])
	require.Regexp(t, `^acme_corp\.s7\.l0\.2\.[0-9a-f]{16}$`, a[1])
}

// TestMalformedBlocks: malformed blocks and entries are refused and change
// nothing.
func TestMalformedBlocks(t *testing.T) {
	f := newFixture(t, planner.DefaultConfig())
	f.add("t", 0, 0, 3)
	before := f.snapshot()
	for _, b := range []ck.BlockMeta{
		{ID: "", Tenant: "t"},
		{ID: "../x", Tenant: "t"},
		{ID: "a\\b", Tenant: "t"},
		{ID: "x", Tenant: "t", MinTime: 2, MaxTime: 1},
		{ID: "x", Tenant: "t", Size: -1},
		{ID: "x", Tenant: "bad\x00", Size: 1},
	} {
		_, err := f.p.Enqueue(f.entry(), &b)
		require.Error(t, err, "%+v", b)
	}
	_, err := f.p.Enqueue(f.entry(), nil)
	require.Error(t, err)
	_, err = f.p.Enqueue(ck.Entry{}, &ck.BlockMeta{ID: "x", Tenant: "t"})
	require.Error(t, err)
	require.Equal(t, before, f.snapshot())
	ok, err := f.p.Enqueue(f.entry(), &ck.BlockMeta{ID: "ünïcode/ok", Tenant: "tënant"})
	require.NoError(t, err)
	require.True(t, ok)
	// The tenant check is remembered for the last valid name only: a bad
	// name right after a good one, or twice, is refused every time.
	for _, tenant := range []string{"tënant\x7f", "bad\x00", "bad\x00"} {
		_, err = f.p.Enqueue(f.entry(), &ck.BlockMeta{ID: "y", Tenant: tenant})
		require.ErrorIs(t, err, ident.ErrInvalidID, "%q", tenant)
	}
}

// TestStats: queued blocks, keys, ready batches, lag and debt per level.
func TestStats(t *testing.T) {
	f := newFixture(t, planner.DefaultConfig())
	f.add("a", 0, 0, 45) // two full batches and a partial one
	f.advance(10 * time.Second)
	f.add("b", 0, 0, 5)
	f.add("b", 1, 1, 3)
	st := f.p.Stats(0)
	require.Equal(t, f.now, st.Now)
	require.Equal(t, 53, st.Queued)
	require.Equal(t, 3, st.Keys)
	l0 := st.Levels[0]
	require.Equal(t, planner.LevelStats{Level: 0, Keys: 2, Queued: 50, ReadyBatches: 2, Oldest: t0, Lag: 10 * time.Second, Debt: 45 * 10}, l0)
	require.Equal(t, 3, st.Levels[1].Queued)
	require.Zero(t, st.Levels[1].Debt)
	f.advance(time.Minute)
	f.add("c", 0, 0, 1) // moves the planner's time: everything on level 0 is old enough now
	st = f.p.Stats(0)
	require.Equal(t, 2+1, st.Levels[0].ReadyBatches) // a's two full batches, b's old one; c's block is new
	require.Equal(t, int64(45*70+5*60), st.Levels[0].Debt)
	require.Len(t, st.Levels, 3)
}

// TestViewConcurrentWithApply uses views on other goroutines while the
// planner keeps changing (run with -race).
func TestViewConcurrentWithApply(t *testing.T) {
	f := newFixture(t, planner.DefaultConfig())
	for s := range uint32(8) {
		f.add("t", s, 0, 100)
	}
	var wg sync.WaitGroup
	results := make(chan []string, 16)
	for range 4 {
		v := f.p.View()
		want := snapshotOf(t, v)
		now := f.now
		wg.Go(func() {
			var names []string
			for {
				pl, ok := v.Next(now, nil)
				if !ok {
					break
				}
				names = append(names, pl.Name)
			}
			if !bytes.Equal(want, snapshotOf(t, v)) {
				names = nil // the view changed under us
			}
			results <- names
		})
		// Meanwhile: enqueue, claim, return, drop.
		f.add("t", 3, 0, 50)
		pl := f.mustPoll(nil)
		require.NoError(t, f.p.Return(pl.Name, pl.Sources[5:]))
		f.p.Drop([]ck.BlockMeta{{ID: pl.Sources[0], Tenant: "t", Shard: pl.Shard}})
		cfg := f.p.Config()
		cfg.Levels[0].MaxBlocks = 15 + int(f.index%5)
		require.NoError(t, f.p.SetConfig(cfg))
	}
	wg.Wait()
	close(results)
	for names := range results {
		require.NotEmpty(t, names)
	}
}

func snapshotOf(t *testing.T, v *planner.View) []byte {
	var b bytes.Buffer
	if err := v.Snapshot(&b); err != nil {
		t.Error(err)
	}
	return b.Bytes()
}

// TestSnapshotRestore: a restored planner re-snapshots identically and
// plans exactly like the original; Restore reads exactly one stream.
func TestSnapshotRestore(t *testing.T) {
	f := newFixture(t, planner.DefaultConfig())
	for s := range uint32(3) {
		f.add("t", s, 0, 70)
		f.add("u", s, 1, 5)
	}
	pl, _ := f.poll(nil)
	evicted, _ := f.poll(nil)
	require.NoError(t, f.p.Quarantine(f.entry(), evicted.Name, "bad"))
	f.advance(time.Hour)
	snap := f.snapshot()

	var two bytes.Buffer
	two.Write(snap)
	two.Write(snap)
	br := bufio.NewReader(&two)
	r1, err := planner.Restore(br)
	require.NoError(t, err)
	r2, err := planner.Restore(br)
	require.NoError(t, err, "Restore read past its stream")

	for _, r := range []*planner.Planner{r1, r2} {
		var b bytes.Buffer
		require.NoError(t, r.View().Snapshot(&b))
		require.Equal(t, snap, b.Bytes())
		require.Equal(t, f.p.Stats(0), r.Stats(0))
		claimed, ok := r.Claimed(pl.Name)
		require.True(t, ok)
		require.Equal(t, pl.Sources, claimed)
	}
	vo, vr := f.p.View(), r1.View()
	for {
		a, okA := vo.Next(f.now, nil)
		b, okB := vr.Next(f.now, nil)
		require.Equal(t, okA, okB)
		require.Equal(t, a, b)
		if !okA {
			break
		}
	}
}

// TestDefaultConfig: the defaults are Pyroscope's values.
func TestDefaultConfig(t *testing.T) {
	cfg := planner.DefaultConfig()
	require.NoError(t, cfg.Validate())
	require.Equal(t, uint32(3), cfg.FinalLevel)
	want := []struct {
		blocks int
		age    time.Duration
	}{{20, 36 * time.Second}, {10, 12 * time.Minute}, {10, 3 * time.Hour}}
	require.Len(t, cfg.Levels, len(want))
	for l, w := range want {
		lc := cfg.Levels[l]
		require.Equal(t, w.blocks, lc.MaxBlocks, "level %d", l)
		require.Equal(t, w.age, lc.MaxAge, "level %d", l)
		require.Zero(t, lc.MaxBytes, "level %d: unlimited bytes", l)
		require.Equal(t, 3*time.Hour, lc.MaxSpan, "level %d", l)
		require.Equal(t, 4*w.age, lc.AgingThreshold, "level %d", l)
		require.False(t, lc.CrossShard, "level %d", l)
	}
	require.Equal(t, 2, cfg.TombstonesPerJob)
	require.Equal(t, uint32(0), cfg.TombstoneMinLevel)
	require.Equal(t, uint32(1), cfg.TombstoneMaxLevel)

	// The planner keeps its own copy: changing the caller's value later
	// changes nothing.
	p, err := planner.New(cfg)
	require.NoError(t, err)
	cfg.Levels[0].MaxBlocks = 1
	require.Equal(t, 20, p.Config().Levels[0].MaxBlocks)
	got := p.Config()
	got.Levels[0].MaxBlocks = 2
	require.Equal(t, 20, p.Config().Levels[0].MaxBlocks)

	for _, bad := range []func(*planner.Config){
		func(c *planner.Config) { c.FinalLevel = 0 },
		func(c *planner.Config) { c.Levels = c.Levels[:2] },
		func(c *planner.Config) { c.Levels[1].MaxBlocks = 0 },
		func(c *planner.Config) { c.Levels[1].MaxBlocks = 4097 },
		func(c *planner.Config) { c.Levels[0].MaxBytes = -1 },
		func(c *planner.Config) { c.Levels[0].MaxAge = -1 },
		func(c *planner.Config) { c.Levels[0].MaxSpan = -1 },
		func(c *planner.Config) { c.Levels[0].AgingThreshold = -1 },
		func(c *planner.Config) { c.TombstonesPerJob = -1 },
		func(c *planner.Config) { c.TombstoneMinLevel = 2; c.TombstoneMaxLevel = 1 },
	} {
		c := planner.DefaultConfig()
		bad(&c)
		require.ErrorIs(t, c.Validate(), planner.ErrInvalidConfig)
		_, err := planner.New(c)
		require.ErrorIs(t, err, planner.ErrInvalidConfig)
		require.ErrorIs(t, p.SetConfig(c), planner.ErrInvalidConfig)
	}
	require.Equal(t, planner.DefaultConfig(), p.Config(), "a refused configuration changed the planner")
}

// TestMultiTenantSegments: level-0 segments holding several tenants are
// queued under the empty tenant, apart from the tenants' own blocks, and
// planned as jobs of the empty tenant.
func TestMultiTenantSegments(t *testing.T) {
	f := newFixture(t, planner.DefaultConfig())
	e := f.entry()
	var multi []string
	for i := range 20 {
		b := ck.BlockMeta{ID: fmt.Sprint("seg-", i), Shard: 3, MinTime: f.now - int64(time.Second), MaxTime: f.now, Size: 10,
			Datasets: []ck.DatasetMeta{{Tenant: "acme", Name: "a"}, {Tenant: "globex", Name: "b"}}}
		ok, err := f.p.Enqueue(e, &b)
		require.NoError(t, err)
		require.True(t, ok)
		multi = append(multi, b.ID)
	}
	own := f.add("acme", 3, 0, 5)
	st := f.p.Stats(0)
	require.Equal(t, 2, st.Levels[0].Keys)
	pl := f.mustPoll(nil)
	require.Empty(t, pl.Tenant)
	require.Equal(t, uint32(3), pl.Shard)
	require.Equal(t, multi, pl.Sources)
	require.Regexp(t, `^_\.s3\.l0\.`, pl.Name)
	_, ok := f.poll(nil)
	require.False(t, ok, "acme's 5 blocks are not a batch yet")
	f.advance(time.Minute)
	pl = f.mustPoll(nil)
	require.Equal(t, "acme", pl.Tenant)
	require.Equal(t, own, pl.Sources)
}

// TestDuplicatesQueuedOnce: the planner relies on the index to refuse a
// block ID it has seen (the state machine enqueues only blocks the index
// added); driven that way, a block delivered many times is queued once.
func TestDuplicatesQueuedOnce(t *testing.T) {
	x, err := index.New(index.DefaultConfig())
	require.NoError(t, err)
	f := newFixture(t, planner.DefaultConfig())
	b := ck.BlockMeta{ID: "dup", Tenant: "t", MaxTime: f.now, Size: 1, Datasets: []ck.DatasetMeta{{Name: "d"}}}
	for range 3 {
		e := f.entry()
		if err := x.Add(e, e.Time, &b); err != nil {
			require.ErrorIs(t, err, index.ErrDuplicate)
			continue
		}
		_, err := f.p.Enqueue(e, &b)
		require.NoError(t, err)
	}
	require.Equal(t, 1, f.p.Stats(0).Queued)
	require.Equal(t, uint64(1), f.p.Stats(0).Counters.Enqueued)
}

// TestViewIsConstantTime: opening a view costs the same few allocations
// whatever the planner holds, and enqueueing after a view was opened copies
// the queue's header, not its blocks.
func TestViewIsConstantTime(t *testing.T) {
	viewAllocs := func(blocks int) (float64, float64) {
		f := newFixture(t, planner.DefaultConfig())
		for s := range uint32(8) {
			f.add("t", s, 0, blocks/8)
		}
		var v *planner.View
		open := testing.AllocsPerRun(20, func() { v = f.p.View() })
		require.NotNil(t, v)
		e := f.entry()
		i := 0
		enqueue := testing.AllocsPerRun(20, func() {
			f.p.View()
			i++
			b := ck.BlockMeta{ID: ids[i], Tenant: "t", Shard: 5, MaxTime: f.now}
			if _, err := f.p.Enqueue(e, &b); err != nil {
				t.Fatal(err)
			}
		})
		return open, enqueue
	}
	smallOpen, smallEnq := viewAllocs(8)
	bigOpen, bigEnq := viewAllocs(80_000)
	require.Equal(t, smallOpen, bigOpen, "opening a view is not O(1)")
	require.LessOrEqual(t, bigOpen, 32.0)
	require.LessOrEqual(t, bigEnq, smallEnq+1, "enqueue after a view copies more with more blocks")
	require.LessOrEqual(t, bigEnq-bigOpen, 8.0, "enqueue after a view")
}

var ids = func() []string {
	out := make([]string, 100)
	for i := range out {
		out[i] = fmt.Sprint("extra-", i)
	}
	return out
}()
