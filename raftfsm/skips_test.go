package raftfsm_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/scheduler"
)

// TestSkippedChangesByReason: two polls prepared on the same state both
// plan the same job; the second one applied skips its changes, each
// result saying why, and the state machine counts them by reason. The
// counts are the replica's own: not in snapshots.
func TestSkippedChangesByReason(t *testing.T) {
	n := newNode(t, testConfig())
	n.mustApply(&raftfsm.Command{AddBlocks: &raftfsm.AddBlocks{Blocks: blocks("a", "t", 1, 4, t0)}})
	first, err := n.f.Prepare(&ck.PollRequest{WorkerID: "w1", Seq: 1, FreeSlots: 1}, n.now)
	require.NoError(t, err)
	second, err := n.f.Prepare(&ck.PollRequest{WorkerID: "w2", Seq: 1, FreeSlots: 1}, n.now)
	require.NoError(t, err)
	res := n.mustApply(first)
	for _, c := range res.Changes {
		require.True(t, c.Applied, "%s %s: %s", c.Kind, c.Job, c.Why())
		require.Equal(t, scheduler.NotSkipped, c.Reason)
		require.Empty(t, c.Why())
	}
	res = n.mustApply(second)
	require.NotEmpty(t, res.Changes)
	// The add finds the job there; the assign finds it assigned since.
	require.Len(t, res.Changes, 2)
	add, assign := res.Changes[0], res.Changes[1]
	require.False(t, add.Applied)
	require.Equal(t, ck.ChangeAdd, add.Kind)
	require.Equal(t, scheduler.SkippedJobExists, add.Reason)
	require.Equal(t, "job exists", add.Why())
	require.False(t, assign.Applied)
	require.Equal(t, ck.ChangeAssign, assign.Kind)
	require.Equal(t, scheduler.SkippedStaleVersion, assign.Reason)
	require.Equal(t, "prepared against 0, job at 2 before entry 3", assign.Detail)
	require.Equal(t, "stale version: prepared against 0, job at 2 before entry 3", assign.Why())
	var want [scheduler.NumSkips]uint64
	want[scheduler.SkippedJobExists], want[scheduler.SkippedStaleVersion] = 1, 1
	require.Equal(t, want, n.f.Stats().SkippedChanges)

	// A restored replica starts counting afresh, from the same bytes.
	snap := n.snapshot()
	r, err := raftfsm.Restore(bytes.NewReader(snap))
	require.NoError(t, err)
	require.Equal(t, [scheduler.NumSkips]uint64{}, r.Stats().SkippedChanges)
	var again bytes.Buffer
	require.NoError(t, r.Snapshot(&again))
	require.Equal(t, snap, again.Bytes())
}
