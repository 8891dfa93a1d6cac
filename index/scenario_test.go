package index_test

import (
	"bytes"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/compactkit/compactkit/internal/ident"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/index"
)

// harness drives an index with increasing entry indexes.
type harness struct {
	t *testing.T
	x *index.Index
	e uint64
}

func newHarness(t *testing.T, mutate func(*index.Config)) *harness {
	cfg := index.DefaultConfig()
	if mutate != nil {
		mutate(&cfg)
	}
	x, err := index.New(cfg)
	require.NoError(t, err)
	return &harness{t: t, x: x}
}

func (h *harness) entry() ck.Entry {
	h.e++
	return ck.Entry{Index: h.e, Term: 1}
}

func (h *harness) add(now int64, b *ck.BlockMeta) {
	h.t.Helper()
	require.NoError(h.t, h.x.Add(h.entry(), now, b))
}

// churn replaces the blocks b000 to b199 ten at a time at log time 300,
// calling between after every fifth replacement, then drops every block
// and cleans the tombstones up.
func (h *harness) churn(between func()) {
	for i := 0; i < 200; i += 10 {
		var srcs []string
		for k := range 10 {
			srcs = append(srcs, fmt.Sprintf("b%03d", i+k))
		}
		h.replace(300, "j"+fmt.Sprint(i), 1, srcs, output("j"+fmt.Sprint(i), 1, 0, "acme", int64(i), int64(i+9)))
		if i%50 == 0 {
			between()
		}
	}
	h.x.DropBefore(h.entry(), 400, "", true, 100)
	index.ReleaseTo(h.x, 400, "cleaner", 0)
	h.x.Confirm(401, "cleaner")
}

func (h *harness) replace(now int64, job string, token fencing.Token, sources []string, outputs ...ck.BlockMeta) index.ReplaceResult {
	return h.x.Replace(h.entry(), now, job, token, sources, outputs)
}

// output returns the n-th output of the attempt (job, token) for tenant.
func output(job string, token fencing.Token, n int, tenant string, lo, hi int64) ck.BlockMeta {
	o := *seg(ck.OutputID(job, token, n), tenant, 0, lo, hi)
	o.Level = 1
	return o
}

func (h *harness) snapshot() []byte {
	h.t.Helper()
	var buf bytes.Buffer
	require.NoError(h.t, h.x.View().Snapshot(&buf))
	return buf.Bytes()
}

func TestNewRejectsInvalidConfig(t *testing.T) {
	for _, cfg := range []index.Config{
		{DedupHorizon: -1}, {CleanupDelay: -1}, {CompletedRetention: -1}, {ReaderTimeout: -1},
	} {
		_, err := index.New(cfg)
		require.ErrorIs(t, err, ident.ErrNegative)
		x, _ := index.New(index.DefaultConfig())
		require.ErrorIs(t, x.SetConfig(cfg), ident.ErrNegative)
		require.Equal(t, index.DefaultConfig(), x.View().Config())
	}
	x, err := index.New(index.Config{})
	require.NoError(t, err)
	require.Equal(t, index.Config{}, x.View().Config())
}

func TestAddRefusesMalformedAndDuplicates(t *testing.T) {
	h := newHarness(t, nil)
	for _, b := range []*ck.BlockMeta{
		{ID: "", Tenant: "acme"},
		{ID: "x", Tenant: "acme", MinTime: 2, MaxTime: 1},
		{ID: "x", Tenant: "acme", Size: -1},
		{ID: "x"},                                            // neither tenant nor datasets
		{ID: "x", Datasets: []ck.DatasetMeta{{Name: "svc"}}}, // multi-tenant dataset without tenant
		{ID: "x", Tenant: "acme", Datasets: []ck.DatasetMeta{{Name: "svc", MinTime: -1}}}, // outside the block
	} {
		err := h.x.Add(h.entry(), 0, b)
		require.Error(t, err, "%+v", b)
		require.NotErrorIs(t, err, index.ErrDuplicate)
	}
	require.Zero(t, h.x.View().Len())
	require.Zero(t, h.x.Stats().DuplicatesRefused)

	h.add(1, seg("a", "acme", 0, 0, 10))
	snap := h.snapshot()
	// The same ID again, even with other metadata: refused, nothing changes
	// except the count of duplicates.
	err := h.x.Add(h.entry(), 1, seg("a", "other", 3, 50, 60))
	require.ErrorIs(t, err, index.ErrDuplicate)
	require.ErrorContains(t, err, "live")
	require.Equal(t, uint64(1), h.x.Stats().DuplicatesRefused)
	m, _ := h.x.View().Lookup("a")
	require.Equal(t, "acme", m.Tenant)
	_ = snap
}

// A job's completion committed twice (a retried report, a replayed entry)
// acts once; another attempt of the same job completing later is refused
// and its outputs are orphaned.
func TestDoubleCompletion(t *testing.T) {
	h := newHarness(t, nil)
	for i, id := range []string{"a", "b", "c"} {
		h.add(0, seg(id, "acme", 0, int64(10*i), int64(10*i+9)))
	}
	out := output("job1", 4, 0, "acme", 0, 29)
	r1 := h.replace(10, "job1", 4, []string{"a", "b", "c"}, out)
	require.True(t, r1.Applied)
	require.Equal(t, "applied", r1.Reason.String())
	before := h.snapshot()

	r2 := h.replace(11, "job1", 4, []string{"a", "b", "c"}, out)
	require.True(t, r2.Replayed)
	r2.Replayed = false
	require.Equal(t, r1, r2)
	st := h.x.Stats()
	require.Equal(t, uint64(1), st.ReplacementsApplied)
	require.Zero(t, st.ReplacementsRefused)
	require.Equal(t, 3, st.TombstonesPending)
	require.Equal(t, []string{out.ID}, h.x.View().QueryIDs("acme", 0, 100, nil))

	// Apart from the clock, nothing changed.
	y, err := index.Restore(bytes.NewReader(before))
	require.NoError(t, err)
	y.Expire(11)
	var after bytes.Buffer
	require.NoError(t, h.x.View().Snapshot(&after))
	var want bytes.Buffer
	require.NoError(t, y.View().Snapshot(&want))
	require.Equal(t, want.Bytes(), after.Bytes())

	// A stale attempt of the same job (reassigned, token 3) completes late.
	stale := output("job1", 3, 0, "acme", 0, 29)
	r3 := h.replace(12, "job1", 3, []string{"a", "b", "c"}, stale)
	require.False(t, r3.Applied)
	require.Equal(t, "sources missing", r3.Reason.String())
	require.Equal(t, []string{"a", "b", "c"}, r3.Missing)
	require.Empty(t, r3.Surviving)
	require.Equal(t, ck.AttemptPrefix("job1", 3), r3.Orphan)
	require.False(t, h.x.View().Live(stale.ID))
	require.Equal(t, []string{out.ID}, h.x.View().QueryIDs("acme", 0, 100, nil))
	// Its outputs can't enter through a late Add either.
	require.ErrorIs(t, h.x.Add(h.entry(), 12, &stale), index.ErrDuplicate)
	// And its replay returns the same refusal.
	r4 := h.replace(13, "job1", 3, []string{"a", "b", "c"}, stale)
	require.True(t, r4.Replayed)
	require.Equal(t, r3.Missing, r4.Missing)
	require.Equal(t, 1, h.x.Stats().Orphans)
}

// Pyroscope's bug: a job completes after retention removed one of its
// sources. The index must not resurrect the dropped data.
func TestCompletionAfterRetention(t *testing.T) {
	h := newHarness(t, nil)
	h.add(0, seg("old", "acme", 0, 0, 9))
	h.add(0, seg("new", "acme", 0, 10, 19))
	h.add(0, seg("other", "beta", 0, 0, 9))
	dropped := h.x.DropBefore(h.entry(), 5, "acme", false, 10)
	require.Len(t, dropped, 1)
	require.Equal(t, "old", dropped[0].ID)
	require.True(t, h.x.View().Live("other"), "another tenant's block")

	out := output("job1", 1, 0, "acme", 0, 19)
	r := h.replace(6, "job1", 1, []string{"old", "new"}, out)
	require.False(t, r.Applied)
	require.Equal(t, "sources missing", r.Reason.String())
	require.Equal(t, []string{"old"}, r.Missing)
	require.Equal(t, []string{"new"}, r.Surviving)
	require.Equal(t, ck.AttemptPrefix("job1", 1), r.Orphan)
	require.False(t, h.x.View().Live(out.ID))
	require.True(t, h.x.View().Live("new"), "the survivor stays live")
	require.Equal(t, []string{"new"}, h.x.View().QueryIDs("acme", 0, 100, nil))
	ti, ok := h.x.View().Tombstone(ck.Tombstone{Kind: ck.TombstonePrefix, Target: r.Orphan})
	require.True(t, ok)
	require.Equal(t, int64(6), ti.Created)
	st := h.x.Stats()
	require.Equal(t, uint64(1), st.ReplacementsRefused)
	require.Equal(t, 1, st.Orphans)
	require.Equal(t, 2, st.TombstonesPending)
}

func TestReplaceRefusals(t *testing.T) {
	cases := []struct {
		name    string
		job     string
		token   fencing.Token
		sources []string
		outputs func() []ck.BlockMeta
		reason  string
		orphan  bool
	}{
		{"bad job", "bad job", 1, []string{"a"}, func() []ck.BlockMeta { return []ck.BlockMeta{output("j", 1, 0, "acme", 0, 1)} }, "invalid", false},
		{"token 0", "j", 0, []string{"a"}, func() []ck.BlockMeta { return []ck.BlockMeta{output("j", 0, 0, "acme", 0, 1)} }, "invalid", false},
		{"no sources", "j", 1, nil, func() []ck.BlockMeta { return []ck.BlockMeta{output("j", 1, 0, "acme", 0, 1)} }, "invalid", true},
		{"no outputs", "j", 1, []string{"a"}, func() []ck.BlockMeta { return nil }, "invalid", true},
		{"repeated source", "j", 1, []string{"a", "b", "a"}, func() []ck.BlockMeta { return []ck.BlockMeta{output("j", 1, 0, "acme", 0, 1)} }, "invalid", true},
		{"malformed output", "j", 1, []string{"a", "b"}, func() []ck.BlockMeta {
			o := output("j", 1, 0, "acme", 0, 1)
			o.MinTime = 5
			return []ck.BlockMeta{o}
		}, "invalid", true},
		{"output outside prefix", "j", 1, []string{"a"}, func() []ck.BlockMeta { return []ck.BlockMeta{output("k", 1, 0, "acme", 0, 1)} }, "invalid", true},
		{"repeated output", "j", 1, []string{"a"}, func() []ck.BlockMeta {
			return []ck.BlockMeta{output("j", 1, 0, "acme", 0, 1), output("j", 1, 0, "acme", 0, 1)}
		}, "invalid", true},
		{"output not new", "j", 1, []string{"a"}, func() []ck.BlockMeta { return []ck.BlockMeta{output("j", 1, 0, "acme", 0, 1)} }, "outputs not new", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.add(0, seg("a", "acme", 0, 0, 9))
			h.add(0, seg("b", "acme", 0, 0, 9))
			if c.reason == "outputs not new" {
				o := output("j", 1, 0, "acme", 0, 1)
				h.add(0, &o) // a live block under the attempt's prefix
			}
			live := h.x.View().Blocks("", 0)
			r := h.replace(1, c.job, c.token, c.sources, c.outputs()...)
			require.False(t, r.Applied)
			require.Equal(t, c.reason, r.Reason.String(), r.Detail)
			require.NotEmpty(t, r.Detail)
			// Every live source survives, listed once; nothing changed.
			var wantSurv []string
			for _, s := range c.sources {
				if !slices.Contains(wantSurv, s) {
					wantSurv = append(wantSurv, s)
				}
			}
			require.Equal(t, wantSurv, r.Surviving)
			require.Empty(t, r.Missing)
			require.Equal(t, live, h.x.View().Blocks("", 0))
			require.Equal(t, c.orphan, r.Orphan != "")
			if c.orphan {
				_, ok := h.x.View().Tombstone(ck.Tombstone{Kind: ck.TombstonePrefix, Target: ck.AttemptPrefix(c.job, c.token)})
				require.True(t, ok)
			}
			require.Equal(t, uint64(1), h.x.Stats().ReplacementsRefused)
		})
	}
}

// A delayed ingest retry of a block whose deletion was confirmed is refused
// within the deduplication horizon, and accepted after it.
func TestIngestRetryAfterCleanup(t *testing.T) {
	const horizon = time.Hour
	h := newHarness(t, func(c *index.Config) { c.DedupHorizon = horizon; c.CleanupDelay = time.Minute })
	b := seg("a", "acme", 0, 0, 9)
	h.add(0, b)
	out := output("job1", 1, 0, "acme", 0, 9)
	require.True(t, h.replace(0, "job1", 1, []string{"a"}, out).Applied)

	// Tombstoned, not yet released: refused.
	require.ErrorIs(t, h.x.Add(h.entry(), 1, b), index.ErrDuplicate)
	got := index.ReleaseTo(h.x, int64(time.Minute), "job2", 0)
	require.Equal(t, []ck.Tombstone{{Kind: ck.TombstoneBlock, Target: "a"}}, got)
	require.ErrorIs(t, h.x.Add(h.entry(), int64(time.Minute), b), index.ErrDuplicate)
	confirmed := int64(2 * time.Minute)
	require.Equal(t, 1, h.x.Confirm(confirmed, "job2"))
	_, pending := h.x.View().Tombstone(ck.Tombstone{Kind: ck.TombstoneBlock, Target: "a"})
	require.False(t, pending)

	// Deleted, within the horizon: refused, with or without Expire.
	err := h.x.Add(h.entry(), confirmed+int64(horizon)-1, b)
	require.ErrorIs(t, err, index.ErrDuplicate)
	require.ErrorContains(t, err, "deduplication horizon")
	require.Zero(t, h.x.Expire(confirmed+int64(horizon)-1))
	require.ErrorIs(t, h.x.Add(h.entry(), confirmed+int64(horizon)-1, b), index.ErrDuplicate)
	require.Equal(t, uint64(4), h.x.Stats().DuplicatesRefused)

	// Past the horizon, the ID is forgotten: accepted, Expire or not.
	y, err := index.Restore(bytes.NewReader(h.snapshot()))
	require.NoError(t, err)
	require.NoError(t, h.x.Add(h.entry(), confirmed+int64(horizon), b))
	require.Equal(t, 1, y.Expire(confirmed+int64(horizon))) // the deletion record
	require.NoError(t, y.Add(ck.Entry{Index: 99}, confirmed+int64(horizon), b))
	require.True(t, h.x.View().Live("a"))
}

// Tombstones are released in a stable order, held by one job at a time,
// returned to the pool on detachment, and removed only on confirmation.
func TestReleaseAttachDetachConfirm(t *testing.T) {
	h := newHarness(t, func(c *index.Config) { c.CleanupDelay = 100 })
	for _, id := range []string{"e", "d", "c", "b", "a"} {
		h.add(0, seg(id, "acme", 0, 0, 9))
	}
	// Tombstones created at 10 (d, e), 20 (a) and 30 (b, c).
	require.True(t, h.replace(10, "j0", 1, []string{"e", "d"}, output("j0", 1, 0, "acme", 0, 9)).Applied)
	require.True(t, h.replace(20, "j1", 1, []string{"a"}, output("j1", 1, 0, "acme", 0, 9)).Applied)
	require.True(t, h.replace(30, "j2", 1, []string{"c", "b"}, output("j2", 1, 0, "acme", 0, 9)).Applied)
	tb := func(id string) ck.Tombstone { return ck.Tombstone{Kind: ck.TombstoneBlock, Target: id} }

	releasable := func(now int64) []ck.Tombstone {
		var out []ck.Tombstone
		next := h.x.View().Releasable(now)
		for t, ok := next(); ok; t, ok = next() {
			out = append(out, t)
		}
		return out
	}
	require.Empty(t, releasable(109))
	require.Equal(t, []ck.Tombstone{tb("d"), tb("e")}, releasable(110))
	require.Equal(t, []ck.Tombstone{tb("d"), tb("e"), tb("a"), tb("b"), tb("c")}, releasable(130))
	at, ok := h.x.View().OldestUnattachedReleasable(130)
	require.True(t, ok)
	require.Equal(t, int64(110), at)

	// Attach accepts only releasable, unattached, existing tombstones.
	got := h.x.Attach(120, "cleanup1", []ck.Tombstone{tb("e"), tb("b"), tb("nope"), tb("e"), tb("a")})
	require.Equal(t, []ck.Tombstone{tb("e"), tb("a")}, got)
	require.Empty(t, h.x.Attach(120, "cleanup2", []ck.Tombstone{tb("e")}), "held by another job")
	require.Empty(t, h.x.Attach(120, "bad job", []ck.Tombstone{tb("d")}))
	require.Equal(t, []ck.Tombstone{tb("a"), tb("e")}, index.HeldBy(h.x, "cleanup1"))
	ti, _ := h.x.View().Tombstone(tb("e"))
	require.Equal(t, "cleanup1", ti.Job)
	require.Equal(t, []ck.Tombstone{tb("d"), tb("b"), tb("c")}, releasable(130))
	st := h.x.Stats()
	require.Equal(t, 2, st.TombstonesAttached)
	require.Equal(t, 1, st.TombstonesReleasable) // d at now=120
	require.Equal(t, 2, st.TombstonesPending)

	// Release hands out the next ones in order, up to the limit.
	require.Equal(t, []ck.Tombstone{tb("d"), tb("b")}, index.ReleaseTo(h.x, 130, "cleanup2", 2))

	// cleanup1 is cancelled: its tombstones return to the pool, in their
	// original place in the order.
	require.Equal(t, 2, h.x.Detach("cleanup1"))
	require.Zero(t, h.x.Detach("cleanup1"))
	require.Equal(t, []ck.Tombstone{tb("e"), tb("a"), tb("c")}, releasable(130))
	require.Zero(t, h.x.Confirm(140, "cleanup1"), "a detached job confirms nothing")
	require.Len(t, h.x.View().Tombstones(ck.Tombstone{}, 0), 5, "nothing dropped before confirmation")

	// cleanup2 succeeds: its tombstones are gone; confirming twice is harmless.
	require.Equal(t, 2, h.x.Confirm(140, "cleanup2"))
	require.Zero(t, h.x.Confirm(141, "cleanup2"))
	require.Len(t, h.x.View().Tombstones(ck.Tombstone{}, 0), 3)
	require.Equal(t, 2, h.x.Stats().DeletionRecords)
	require.Equal(t, []ck.Tombstone{tb("e"), tb("a"), tb("c")}, index.ReleaseTo(h.x, 150, "cleanup3", 0))
	require.Equal(t, 3, h.x.Confirm(150, "cleanup3"))
	require.Empty(t, h.x.View().Tombstones(ck.Tombstone{}, 0))
	_, ok = h.x.View().OldestUnattachedReleasable(1 << 40)
	require.False(t, ok)
}

// A shorter cleanup delay never releases a newer tombstone before an older
// one.
func TestCleanupDelayShortened(t *testing.T) {
	h := newHarness(t, func(c *index.Config) { c.CleanupDelay = 1000 })
	h.add(0, seg("a", "acme", 0, 0, 9))
	h.add(0, seg("b", "acme", 0, 20, 29))
	h.x.DropBefore(h.entry(), 0, "acme", false, 10) // a: release at 1000
	cfg := h.x.View().Config()
	cfg.CleanupDelay = 10
	require.NoError(t, h.x.SetConfig(cfg))
	h.x.DropBefore(h.entry(), 5, "acme", false, 30) // b: release at max(15, 1000)
	ti, _ := h.x.View().Tombstone(ck.Tombstone{Kind: ck.TombstoneBlock, Target: "b"})
	require.Equal(t, int64(1000), ti.ReleaseAt)
	require.Empty(t, index.ReleaseTo(h.x, 999, "j", 0))
	require.Len(t, index.ReleaseTo(h.x, 1000, "j", 0), 2)
}

// The reader watermark holds a release back while a read that started
// before the tombstone's creation may still run.
func TestWatermarkHoldsRelease(t *testing.T) {
	for _, timeout := range []time.Duration{0, 500} {
		t.Run(fmt.Sprint("timeout=", int64(timeout)), func(t *testing.T) {
			h := newHarness(t, func(c *index.Config) { c.CleanupDelay = 10; c.ReaderTimeout = timeout })
			h.add(0, seg("a", "acme", 0, 0, 9))
			h.add(0, seg("b", "acme", 0, 0, 9))
			// Without a watermark, the cleanup delay alone decides.
			_, set := h.x.View().Watermark()
			require.False(t, set)
			h.x.DropBefore(h.entry(), 100, "", true, 10) // a and b, created at 100
			require.Len(t, h.x.View().Tombstones(ck.Tombstone{}, 0), 2)

			h.x.SetWatermark(105, 90) // a read started at 90 is running
			wm, set := h.x.View().Watermark()
			require.True(t, set)
			require.Equal(t, int64(90), wm)
			require.Empty(t, index.ReleaseTo(h.x, 200, "j", 0))
			_, ok := h.x.View().OldestUnattachedReleasable(200)
			require.False(t, ok)
			st := h.x.Stats()
			require.Zero(t, st.TombstonesReleasable)
			require.Equal(t, 2, st.TombstonesPending)

			h.x.SetWatermark(300, 100) // started at the creation: still held
			require.Empty(t, index.ReleaseTo(h.x, 300, "j", 0))
			if timeout > 0 {
				// The watermark stopped advancing: the reader timeout ends
				// the hold at creation + timeout.
				require.Empty(t, index.ReleaseTo(h.x, 599, "j", 0))
				require.Len(t, index.ReleaseTo(h.x, 600, "j", 1), 1)
			}
			h.x.SetWatermark(700, 101) // every read still in flight started later
			require.Len(t, index.ReleaseTo(h.x, 700, "j", 0), 2-boolInt(timeout > 0))
			// A watermark in the future is clamped to now.
			h.x.SetWatermark(800, 1<<50)
			wm, _ = h.x.View().Watermark()
			require.Equal(t, int64(800), wm)
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestAddOrphan(t *testing.T) {
	h := newHarness(t, nil)
	o := output("job1", 2, 0, "acme", 0, 9)
	h.add(0, &o)
	require.ErrorIs(t, h.x.AddOrphan(1, ck.AttemptPrefix("job1", 2)), index.ErrLiveUnderPrefix)
	require.Error(t, h.x.AddOrphan(1, "not-a-prefix"))
	require.NoError(t, h.x.AddOrphan(1, ck.AttemptPrefix("job1", 3)))
	require.NoError(t, h.x.AddOrphan(5, ck.AttemptPrefix("job1", 3)), "idempotent")
	ti, ok := h.x.View().Tombstone(ck.Tombstone{Kind: ck.TombstonePrefix, Target: ck.AttemptPrefix("job1", 3)})
	require.True(t, ok)
	require.Equal(t, int64(1), ti.Created)
	require.Equal(t, 1, h.x.Stats().Orphans)
	late := output("job1", 3, 0, "acme", 0, 9)
	err := h.x.Add(h.entry(), 6, &late)
	require.ErrorIs(t, err, index.ErrDuplicate)
	require.ErrorContains(t, err, "orphaned prefix")
}

func TestQueryTenantsShardsAndSegments(t *testing.T) {
	h := newHarness(t, nil)
	const hour = int64(time.Hour)
	h.add(0, seg("s0", "acme", 0, 0, hour-1))
	h.add(0, seg("s1", "acme", 1, hour, 2*hour-1))
	h.add(0, seg("s2", "acme", 0, 2*hour, 3*hour-1))
	h.add(0, seg("long", "acme", 2, 0, 30*24*hour)) // a high-level block spanning a month
	h.add(0, seg("beta", "beta", 0, 0, 3*hour))
	h.add(0, &ck.BlockMeta{ID: "mixed", Shard: 1, MinTime: hour / 2, MaxTime: hour / 2, Datasets: []ck.DatasetMeta{
		{Tenant: "beta", Name: "svc", MinTime: hour / 2, MaxTime: hour / 2},
		{Tenant: "acme", Name: "svc", MinTime: hour / 2, MaxTime: hour / 2},
		{Tenant: "acme", Name: "db", MinTime: hour / 2, MaxTime: hour / 2},
	}})
	v := h.x.View()
	require.Equal(t, []string{"long", "s0", "mixed", "s1", "s2"}, v.QueryIDs("acme", 0, 3*hour, nil))
	require.Equal(t, []string{"long", "s0", "mixed", "s1"}, v.QueryIDs("acme", hour/2, hour, nil))
	require.Equal(t, []string{"long", "s1"}, v.QueryIDs("acme", hour, hour, nil))
	require.Equal(t, []string{"long", "s0"}, v.QueryIDs("acme", hour/2+1, hour-1, nil))
	require.Equal(t, []string{"long", "s0"}, v.QueryIDs("acme", 0, hour/2-1, nil))
	require.Equal(t, []string{"long", "s2"}, v.QueryIDs("acme", 2*hour, 2*hour, nil), "boundaries are inclusive")
	require.Equal(t, []string{"long"}, v.QueryIDs("acme", 10*24*hour, 11*24*hour, nil))
	one := uint32(1)
	require.Equal(t, []string{"mixed", "s1"}, v.QueryIDs("acme", 0, 3*hour, &one))
	require.Equal(t, []string{"beta", "mixed"}, v.QueryIDs("beta", 0, 3*hour, nil))
	require.Empty(t, v.QueryIDs("nobody", 0, 3*hour, nil))
	require.Empty(t, v.QueryIDs("", 0, 3*hour, nil))
	require.Empty(t, v.QueryIDs("acme", 3*hour, 0, nil))
	require.Equal(t, 5, v.ReadAmplification("acme", 0, 3*hour))

	// Compaction reduces read amplification.
	out := output("job1", 1, 0, "acme", 0, 3*hour-1)
	require.True(t, h.replace(1, "job1", 1, []string{"s0", "s1", "s2"}, out).Applied)
	require.Equal(t, 3, h.x.View().ReadAmplification("acme", 0, 3*hour))
	require.Equal(t, 5, v.ReadAmplification("acme", 0, 3*hour), "an older view is unchanged")

	// Per-tenant retention never drops a segment holding another tenant.
	dropped := h.x.DropBefore(h.entry(), 2, "acme", false, hour)
	require.Empty(t, dropped)
	dropped = h.x.DropBefore(h.entry(), 2, "", true, hour)
	require.Equal(t, "mixed", dropped[0].ID)
	require.Len(t, dropped, 1)
}

func TestStatsPerTenantAndLevel(t *testing.T) {
	h := newHarness(t, nil)
	h.add(0, seg("a", "acme", 0, 0, 9))
	h.add(0, seg("b", "acme", 0, 0, 9))
	h.add(0, seg("c", "beta", 0, 0, 9))
	h.add(0, &ck.BlockMeta{ID: "m", MinTime: 0, MaxTime: 1, Size: 7, Datasets: []ck.DatasetMeta{{Tenant: "acme", Name: "svc", MinTime: 0, MaxTime: 1}}})
	require.True(t, h.replace(1, "j", 1, []string{"a", "b"}, output("j", 1, 0, "acme", 0, 9)).Applied)
	st := h.x.Stats()
	require.Equal(t, int64(3), st.Blocks)
	require.Equal(t, int64(207), st.Bytes)
	require.Equal(t, []index.LevelStats{
		{Tenant: "", Level: 0, Blocks: 1, Bytes: 7},
		{Tenant: "acme", Level: 1, Blocks: 1, Bytes: 100},
		{Tenant: "beta", Level: 0, Blocks: 1, Bytes: 100},
	}, st.Levels)
	require.Equal(t, 2, st.TombstonesPending)
	require.Equal(t, 1, st.Results)
}

// A view never changes, whatever the index does after it was opened, and
// may be read on another goroutine meanwhile (run with -race).
func TestViewIsCopyOnWrite(t *testing.T) {
	h := newHarness(t, func(c *index.Config) { c.CleanupDelay = 0 })
	for i := range 200 {
		h.add(int64(i), seg(fmt.Sprintf("b%03d", i), "acme", uint32(i%4), int64(i), int64(i)))
	}
	v := h.x.View()
	want := v.QueryIDs("acme", 0, 1000, nil)
	wantBlocks := v.Blocks("", 0)
	var snap bytes.Buffer
	require.NoError(t, v.Snapshot(&snap))

	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if got := v.QueryIDs("acme", 0, 1000, nil); len(got) != len(want) {
				errs <- fmt.Errorf("view changed: %d blocks", len(got))
				return
			}
			var buf bytes.Buffer
			if err := v.Snapshot(&buf); err != nil || !bytes.Equal(buf.Bytes(), snap.Bytes()) {
				errs <- fmt.Errorf("view snapshot changed: %v", err)
				return
			}
		}
	}()
	h.churn(func() {
		h.x.View() // later views force more copy-on-write
	})
	close(stop)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	require.Equal(t, want, v.QueryIDs("acme", 0, 1000, nil))
	require.Equal(t, wantBlocks, v.Blocks("", 0))
	require.Len(t, h.x.View().QueryIDs("acme", 0, 1000, nil), 10)
}

func TestRefusalString(t *testing.T) {
	for r, want := range []string{"applied", "sources missing", "invalid", "outputs not new"} {
		require.Equal(t, want, index.Refusal(r).String())
	}
	require.Equal(t, "Refusal(9)", index.Refusal(9).String())
}

// Views clone the index's trees lazily: a view read for the first time on
// another goroutine while the index mutates, views sharing the same
// pending trees, and closed views (whose unread trees the index then
// mutates in place) all keep their contract (run with -race).
func TestViewLazyAndClose(t *testing.T) {
	h := newHarness(t, func(c *index.Config) { c.CleanupDelay = 0 })
	for i := range 200 {
		h.add(int64(i), seg(fmt.Sprintf("b%03d", i), "acme", uint32(i%4), int64(i), int64(i)))
	}
	want := h.snapshot()
	read := h.x.View()   // read on another goroutine, first while the index mutates
	kept := h.x.View()   // shares its pending trees with closed, read at the end
	closed := h.x.View() // closed on another goroutine
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	wg.Add(2)
	go func() {
		defer wg.Done()
		for range 20 {
			var buf bytes.Buffer
			if err := read.Snapshot(&buf); err != nil || !bytes.Equal(buf.Bytes(), want) {
				errs <- fmt.Errorf("view snapshot changed: %v", err)
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		closed.Close()
		closed.Close() // idempotent
	}()
	h.churn(func() {
		v := h.x.View()
		_, _ = v.OldestUnattachedReleasable(300) // reads the pool only
		v.Close()
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	require.NoError(t, kept.Snapshot(&buf))
	require.Equal(t, want, buf.Bytes())
	require.Equal(t, 200, kept.Len())
	// A closed view's unread trees read as empty.
	require.Equal(t, 0, closed.Len())
	require.Empty(t, closed.QueryIDs("acme", 0, 1000, nil))
	require.NotEqual(t, want, h.snapshot())
}

// TestPrefixDeletionRecordRefuses checks that an output under a prefix whose
// orphan tombstone was deleted is refused for the deduplication horizon,
// when no prefix tombstone is pending any more, and accepted after it.
func TestPrefixDeletionRecordRefuses(t *testing.T) {
	h := newHarness(t, func(c *index.Config) { c.CleanupDelay = 100; c.DedupHorizon = 1000 })
	require.NoError(t, h.x.AddOrphan(1, ck.AttemptPrefix("job1", 3)))
	require.Len(t, index.ReleaseTo(h.x, 200, "cleaner", 0), 1)
	require.Equal(t, 1, h.x.Confirm(201, "cleaner"))
	require.Equal(t, 0, h.x.Stats().Orphans, "no prefix tombstone pending")
	late := output("job1", 3, 0, "acme", 0, 9)
	err := h.x.Add(h.entry(), 300, &late)
	require.ErrorIs(t, err, index.ErrDuplicate)
	require.ErrorContains(t, err, "deleted less than the deduplication horizon ago")
	// A block tombstone pending changes nothing for other IDs.
	other := output("job2", 4, 0, "acme", 0, 9)
	h.add(300, &other)
	require.NoError(t, h.x.Add(h.entry(), 1300, &late), "past the horizon")
}
