package scheduler_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/scheduler"
)

// A change made while a schedule is open freezes, for it, only the trees
// the change mutates: an assignment clones neither the tenant index, nor
// the excluded jobs, nor the completions.
func TestScheduleViewFreezesWhatChanges(t *testing.T) {
	h := newHarness(t, testConfig())
	h.add(plan("a", "t", 0), plan("b", "t", 0))

	open := h.s.Schedule(h.now)
	require.Empty(t, scheduler.FrozenTrees(open), "nothing changed yet")
	sc := h.s.Schedule(h.now)
	require.True(t, sc.AssignJob("w1"))
	sc.Close()
	u := sc.Update()
	h.applyAll(u)
	require.Equal(t, []string{"byName", "ready", "aging", "expiry"}, scheduler.FrozenTrees(open))
	st, _, ok := open.Job(u.Changes[0].Job)
	require.True(t, ok)
	require.NotEqual(t, h.job(u.Changes[0].Job).Status, st.Status, "the open schedule sees the job as it was")
	require.True(t, open.AssignJob("w2"), "and the other job")
	open.Close()
	require.NoError(t, scheduler.CheckDerived(h.s))
}

// A change writes over a job's record when no schedule can reach it, and
// replaces it while an open schedule may read it: that schedule keeps
// seeing the job as it was, and later changes write over the new record.
func TestRecordsChangeInPlaceUnlessSeen(t *testing.T) {
	h := newHarness(t, testConfig())
	step := func(f func(sc *scheduler.Schedule)) {
		t.Helper()
		h.advance(time.Second)
		sc := h.s.Schedule(h.now)
		f(sc)
		sc.Close()
		h.applyAll(sc.Update())
		require.NoError(t, scheduler.CheckDerived(h.s))
	}
	step(func(sc *scheduler.Schedule) {
		require.True(t, sc.AddJob(plan("a", "t", 0)))
		require.True(t, sc.AddJob(plan("b", "t", 0)))
	})
	step(func(sc *scheduler.Schedule) {
		require.True(t, sc.AssignJob("w1"))
		require.True(t, sc.AssignJob("w1"))
	})
	renew := func() {
		step(func(sc *scheduler.Schedule) {
			u := h.report("a", ck.ReportInProgress)
			require.True(t, sc.UpdateJob("w1", &u))
		})
	}
	rec := scheduler.Record(h.s, "a")
	before := h.job("a")
	renew()
	require.Same(t, rec, scheduler.Record(h.s, "a"), "no schedule can reach the record: written over")
	require.Greater(t, h.job("a").Deadline, before.Deadline)

	open := h.s.Schedule(h.now)
	seen, _, ok := open.Job("a")
	require.True(t, ok)
	renew()
	require.NotSame(t, rec, scheduler.Record(h.s, "a"), "an open schedule may read the record: replaced")
	again, _, ok := open.Job("a")
	require.True(t, ok)
	require.Equal(t, seen, again, "the open schedule sees the job as it was")
	require.Greater(t, h.job("a").Deadline, seen.Deadline)
	open.Close()

	rec = scheduler.Record(h.s, "a")
	renew()
	require.Same(t, rec, scheduler.Record(h.s, "a"), "the new record was in no tree the schedule froze: written over")

	// An open schedule whose trees were all frozen for it (changes to each
	// of them settled them) reads the records it froze: replaced.
	open = h.s.Schedule(h.now)
	seen, _, _ = open.Job("a")
	scheduler.SettleTrees(h.s)
	renew()
	require.NotSame(t, rec, scheduler.Record(h.s, "a"))
	again, _, _ = open.Job("a")
	require.Equal(t, seen, again, "the open schedule sees the job as it was")
	open.Close()
}
