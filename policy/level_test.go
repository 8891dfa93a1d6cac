package policy_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/compactkit/compactkit/policy"
)

func TestLevelValidate(t *testing.T) {
	for _, c := range []struct {
		l    policy.Level
		fail bool
	}{
		{policy.Level{Level: 0, MaxBlocks: 5}, false},
		{policy.Level{Level: 3, MaxAge: time.Minute, CrossShard: policy.Off}, false},
		{policy.Level{Level: 1, CrossShard: policy.On}, false},
		{policy.Level{Level: 1}, true},                             // overrides nothing
		{policy.Level{Level: 1, CrossShard: policy.Inherit}, true}, // overrides nothing
		{policy.Level{Level: 64, MaxBlocks: 1}, true},
		{policy.Level{Level: 0, MaxBlocks: -1}, true},
		{policy.Level{Level: 0, MaxBytes: -1}, true},
		{policy.Level{Level: 0, MaxAge: -time.Second}, true},
		{policy.Level{Level: 0, CrossShard: 3}, true},
	} {
		err := levelsErr([]policy.Level{c.l})
		if c.fail {
			require.ErrorIs(t, err, policy.ErrInvalid, "%+v", c.l)
		} else {
			require.NoError(t, err, "%+v", c.l)
		}
	}
	require.NoError(t, levelsErr([]policy.Level{{Level: 0, MaxBlocks: 1}, {Level: 2, MaxBlocks: 1}}))
	require.ErrorIs(t, levelsErr([]policy.Level{{Level: 2, MaxBlocks: 1}, {Level: 0, MaxBlocks: 1}}), policy.ErrInvalid)
	require.ErrorIs(t, levelsErr([]policy.Level{{Level: 1, MaxBlocks: 1}, {Level: 1, MaxBlocks: 2}}), policy.ErrInvalid)
	require.ErrorIs(t, policy.Tenant{Levels: []policy.Level{{Level: 1}}}.Validate(), policy.ErrInvalid)
}

func TestToggle(t *testing.T) {
	require.True(t, policy.Inherit.Apply(true))
	require.False(t, policy.Inherit.Apply(false))
	require.True(t, policy.On.Apply(false))
	require.False(t, policy.Off.Apply(true))
	require.Equal(t, "inherit on off Toggle(7)", policy.Inherit.String()+" "+policy.On.String()+" "+policy.Off.String()+" "+policy.Toggle(7).String())
}

// wed returns the log time of a Wednesday (2026-11-25) at h:m UTC.
func wed(h, m int) int64 { return time.Date(2026, 11, 25, h, m, 0, 0, time.UTC).UnixNano() }

func TestLevelRuns(t *testing.T) {
	night := policy.RunPolicy{Mode: policy.OnlyIn, Windows: []policy.Window{{Days: policy.EveryDay, Start: 22 * 60, End: 6 * 60}}}
	lunch := policy.RunPolicy{Mode: policy.NeverIn, Windows: []policy.Window{{Days: policy.EveryDay, Start: 12 * 60, End: 13 * 60}}}
	p := policy.Tenant{Run: lunch, LevelRuns: []policy.LevelRun{{Level: 1, Run: night}}}
	require.NoError(t, p.Validate())

	// Level 0 follows the tenant's run policy; level 1 both.
	for _, c := range []struct {
		h, m           int
		level0, level1 bool
	}{{11, 0, true, false}, {12, 30, false, false}, {22, 0, true, true}, {23, 59, true, true}} {
		now := wed(c.h, c.m)
		require.Equal(t, c.level0, mayStartLevel(p, now, 0), "%02d:%02d level 0", c.h, c.m)
		require.Equal(t, c.level1, mayStartLevel(p, now, 1), "%02d:%02d level 1", c.h, c.m)
		require.Equal(t, c.level0, p.MayStart(now), "MayStart ignores level windows")
		want := uint64(0)
		if !night.MayStart(now) {
			want = 1 << 1
		}
		require.Equal(t, want, policy.ClosedLevels(p.LevelRuns, now))
	}
	// The next change is the earliest edge of every window: 12:00 from
	// 11:00 (lunch), 22:00 from 13:00 (night).
	require.Equal(t, wed(12, 0), p.NextChange(wed(11, 0)))
	require.Equal(t, wed(22, 0), p.NextChange(wed(13, 0)))

	// Refused: a level window without windows, out of order, and one that
	// never meets the tenant's own.
	require.ErrorIs(t, policy.Tenant{LevelRuns: []policy.LevelRun{{Level: 1}}}.Validate(), policy.ErrInvalid)
	require.ErrorIs(t, policy.Tenant{LevelRuns: []policy.LevelRun{{Level: 2, Run: night}, {Level: 1, Run: night}}}.Validate(), policy.ErrInvalid)
	require.ErrorIs(t, policy.Tenant{LevelRuns: []policy.LevelRun{{Level: 64, Run: night}}}.Validate(), policy.ErrInvalid)
	day := policy.RunPolicy{Mode: policy.OnlyIn, Windows: []policy.Window{{Days: policy.EveryDay, Start: 9 * 60, End: 17 * 60}}}
	require.ErrorIs(t, policy.Tenant{Run: day, LevelRuns: []policy.LevelRun{{Level: 1, Run: night}}}.Validate(), policy.ErrNeverOpens)
	allDay := policy.RunPolicy{Mode: policy.NeverIn, Windows: []policy.Window{{Days: policy.EveryDay, Start: 0, End: 1440}}}
	require.ErrorIs(t, policy.Tenant{LevelRuns: []policy.LevelRun{{Level: 1, Run: allDay}}}.Validate(), policy.ErrNeverOpens)

	// Clone shares no window with the original; Equal compares them.
	c := p.Clone()
	require.True(t, c.Equal(p))
	c.LevelRuns[0].Run.Windows[0].Start = 21 * 60
	require.False(t, c.Equal(p))
	require.Equal(t, uint16(22*60), p.LevelRuns[0].Run.Windows[0].Start)
}
