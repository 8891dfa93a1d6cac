package planner_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/planner"
)

func TestCleanupPlan(t *testing.T) {
	ts := []ck.Tombstone{
		{Kind: ck.TombstoneBlock, Target: "01JD8ZQ8Y0S1G6N9V3C2X7K4PB"},
		{Kind: ck.TombstonePrefix, Target: "jobs/acme.s1.l0.7.00000000000000ff/"},
		{Kind: ck.TombstoneBlock, Target: "01JD8ZQ8Y0S1G6N9V3C2X7K4PC"},
	}
	pulled := 0
	next := func() (ck.Tombstone, bool) {
		if pulled == len(ts) {
			return ck.Tombstone{}, false
		}
		pulled++
		return ts[pulled-1], true
	}
	const now = 1700000000123456789
	plan, ok := planner.CleanupPlan(next, 2, now)
	require.True(t, ok)
	require.Equal(t, 2, pulled, "pulls only what the job takes")
	// The name is part of the replicated state (it enters the log and the
	// snapshots): pinned.
	require.Equal(t, ck.JobPlan{Name: "cleanup.cwyvpeni7w9h.26cf1416c61b2fa6", Tombstones: ts[:2]}, plan)
	require.True(t, plan.CleanupOnly())

	plan, ok = planner.CleanupPlan(next, 2, now)
	require.True(t, ok)
	require.Equal(t, ts[2:], plan.Tombstones)
	_, ok = planner.CleanupPlan(next, 2, now)
	require.False(t, ok)
}
