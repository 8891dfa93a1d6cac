package raftfsm_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/compactkit/compactkit/raftfsm"
)

// Drained is false while anything is left to do: a block queued or
// claimed, a job, a tombstone in any state; quarantined blocks do not
// count.
func TestStatsDrained(t *testing.T) {
	n := newNode(t, testConfig())
	st := n.f.Stats()
	require.True(t, st.Drained(), "a new state machine")

	n.mustApply(addBlocks(blocks("a", "t1", 0, 2, t0)))
	st = n.f.Stats()
	require.False(t, st.Drained(), "blocks queued")

	for name, mutate := range map[string]func(*raftfsm.Stats){
		"claimed":     func(s *raftfsm.Stats) { s.Planner.Claimed = 1 },
		"job":         func(s *raftfsm.Stats) { s.Scheduler.Jobs = 1 },
		"pending":     func(s *raftfsm.Stats) { s.Index.TombstonesPending = 1 },
		"releasable":  func(s *raftfsm.Stats) { s.Index.TombstonesReleasable = 1 },
		"attached":    func(s *raftfsm.Stats) { s.Index.TombstonesAttached = 1 },
		"quarantined": func(s *raftfsm.Stats) { s.Planner.Quarantined = 1 },
	} {
		var s raftfsm.Stats
		mutate(&s)
		require.Equal(t, name == "quarantined", s.Drained(), name)
	}
	st = n.f.Stats()
	require.Equal(t, st.Index.TombstonesPending+st.Index.TombstonesReleasable+st.Index.TombstonesAttached, st.Tombstones)
}
