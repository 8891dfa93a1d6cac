package scheduler_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/scheduler"
)

// A schedule left open reads the trees as they were when it was opened,
// through a clone made when the scheduler changed; a closed one costs the
// change no clone, finds no job and changes nothing, and still returns
// the changes it prepared.
func TestScheduleViewCopyOnWrite(t *testing.T) {
	h := newHarness(t, testConfig())
	h.add(plan("a", "t", 0), plan("b", "t", 0))

	open := h.s.Schedule(h.now)
	closed := h.s.Schedule(h.now)
	require.True(t, closed.AssignJob("w1"))
	closed.Close()
	closed.Close() // idempotent
	u := closed.Update()
	require.Len(t, u.Changes, 1)

	h.applyAll(u)
	require.True(t, scheduler.ViewFrozen(open), "an open schedule's view is frozen at the change")
	st, _, ok := open.Job(u.Changes[0].Job)
	require.True(t, ok)
	require.Equal(t, ck.StatusUnassigned, st.Status, "the open schedule sees the job as it was")
	require.Equal(t, ck.StatusInProgress, h.job(u.Changes[0].Job).Status)

	_, _, ok = closed.Job("a")
	require.False(t, ok, "a closed schedule finds no job")
	require.False(t, closed.AssignJob("w2"))
	require.False(t, closed.AddJob(plan("c", "t", 0)))
	require.True(t, closed.Held("t", 0), "a closed schedule adds nothing")
	require.Len(t, closed.Update().Changes, 1, "a closed schedule changes nothing")

	// Every schedule of the next view closed: the change clones nothing.
	next := h.s.Schedule(h.now)
	require.True(t, next.AssignJob("w2"))
	next.Close()
	h.applyAll(next.Update())
	require.False(t, scheduler.ViewFrozen(next), "a closed view is never frozen")
	require.NoError(t, scheduler.CheckDerived(h.s))
}
