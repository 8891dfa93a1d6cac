package scheduler_test

import (
	"testing"

	"github.com/stretchr/testify/require"

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
