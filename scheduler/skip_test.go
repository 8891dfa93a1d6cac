package scheduler_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/compactkit/compactkit/scheduler"
)

// TestSkipNames: every reason has its own name, and Result.Why joins it
// with the detail.
func TestSkipNames(t *testing.T) {
	seen := map[string]scheduler.Skip{}
	for s := scheduler.Skip(0); s < scheduler.NumSkips; s++ {
		name := s.String()
		require.NotEmpty(t, name)
		require.NotContains(t, name, "Skip(", "reason %d has no name", uint8(s))
		prev, dup := seen[name]
		require.False(t, dup, "reasons %d and %d are both %q", prev, s, name)
		seen[name] = s
	}
	require.Equal(t, "applied", scheduler.Skip(0).String())
	require.Equal(t, "Skip(200)", scheduler.Skip(200).String())

	require.Equal(t, "", (&scheduler.Result{Applied: true, Detail: "ignored"}).Why())
	require.Equal(t, "paused", (&scheduler.Result{Reason: scheduler.SkippedPaused}).Why())
	require.Equal(t, "no lease: held by another worker", (&scheduler.Result{Reason: scheduler.SkippedNoLease, Detail: "held by another worker"}).Why())
	r := scheduler.Result{Reason: scheduler.SkippedStaleVersion, Detail: "prepared against 1, job at 2 before entry 3"}
	require.Equal(t, "stale version: prepared against 1, job at 2 before entry 3", r.Why())
}
