package planner_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/compactkit/compactkit/planner"
)

// TestViewRelease: a view that releases a held tenant plans its batches,
// in the order they would have had unheld, and keeps a hold of some of
// its levels; the planner and other views keep the hold.
func TestViewRelease(t *testing.T) {
	f := newFixture(t, planner.DefaultConfig())
	for _, tn := range []string{"A", "B"} {
		f.add(tn, 0, 0, 20)
		f.add(tn, 1, 1, 20)
	}
	later := f.now + int64(time.Hour)
	unheld := drain(t, f.p.View(), later, nil)
	require.Subset(t, unheld, []string{"B/0/0", "B/1/1"})

	f.p.SetHold("B", true, 1<<1) // every level, and level 1 on its own
	other := f.p.View()
	v := f.p.View()
	v.Release("B")
	v.Release("A") // not held: nothing changes
	without := func(drop ...string) []string {
		var out []string
		for _, k := range unheld {
			if !slices.Contains(drop, k) {
				out = append(out, k)
			}
		}
		return out
	}
	require.Equal(t, without("B/1/1"), drain(t, v, later, nil), "level 1 of B stays held")
	require.Equal(t, without("B/0/0", "B/1/1"), drain(t, other, later, nil))
	require.True(t, f.p.Held("B"), "the planner keeps the hold")
	require.Equal(t, without("B/0/0", "B/1/1"), drain(t, f.p.View(), later, nil))

	f.p.SetHold("B", true, 0)
	v = f.p.View()
	v.Release("B")
	require.Equal(t, unheld, drain(t, v, later, nil), "released, B plans as if never held")
}
