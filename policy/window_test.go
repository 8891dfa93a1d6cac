package policy_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/compactkit/compactkit/policy"
)

func at(s string) int64 {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UnixNano()
}

func TestWindowContains(t *testing.T) {
	offPeak := policy.Window{Days: policy.Days(time.Monday, time.Tuesday, time.Wednesday, time.Thursday, time.Friday), Start: 22 * 60, End: 6 * 60} // 22:00-06:00 UTC, wraps
	for _, c := range []struct {
		when string
		want bool
	}{
		{"2026-11-23T21:59:59Z", false}, // Monday, before
		{"2026-11-23T22:00:00Z", true},  // Monday 22:00
		{"2026-11-24T05:59:59Z", true},  // Tuesday morning: Monday's window
		{"2026-11-24T06:00:00Z", false}, // closed at 06:00
		{"2026-11-28T02:00:00Z", true},  // Saturday 02:00: Friday's window
		{"2026-11-28T22:00:00Z", false}, // Saturday: not a working day
		{"2026-11-23T02:00:00Z", false}, // Monday 02:00: Sunday opened none
	} {
		require.Equal(t, c.want, contains(offPeak, at(c.when)), c.when)
	}

	// An offset shifts the window: 09:00-17:00 at UTC+05:30.
	india := policy.Window{Days: policy.EveryDay, Start: 9 * 60, End: 17 * 60, Offset: 330}
	require.True(t, contains(india, at("2026-11-25T03:30:00Z")))
	require.False(t, contains(india, at("2026-11-25T03:29:00Z")))
	require.False(t, contains(india, at("2026-11-25T11:30:00Z")))

	// Before the epoch, too.
	require.True(t, contains(policy.Window{Days: policy.Days(time.Wednesday), Start: 0, End: 60}, at("1969-12-31T00:30:00Z")))
	require.Equal(t, "Mon,Tue,Wed,Thu,Fri 22:00-06:00 UTC+00:00", offPeak.String())
	require.Equal(t, "Sun 09:00-17:00 UTC-03:30", policy.Window{Days: policy.Days(time.Sunday), Start: 540, End: 1020, Offset: -210}.String())
}

// Contains agrees with the time package's calendar in a fixed zone.
func TestWindowContainsOracle(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := policy.Window{
			Days:   policy.Weekdays(rapid.IntRange(1, int(policy.EveryDay)).Draw(t, "days")),
			Start:  uint16(rapid.IntRange(0, 1440-1).Draw(t, "start")),
			End:    uint16(rapid.IntRange(0, 1440).Draw(t, "end")),
			Offset: int16(rapid.IntRange(-840, 840).Draw(t, "offset")),
		}
		if w.Start == w.End {
			w.End = (w.End + 1) % (1440 + 1)
		}
		require.NoError(t, windowErr(w))
		ts := rapid.Int64Range(-1<<60, 1<<62).Draw(t, "t")
		local := time.Unix(0, ts).In(time.FixedZone("", int(w.Offset)*60))
		day, minute := local.Weekday(), uint16(local.Hour()*60+local.Minute())
		var want bool
		if w.Start < w.End {
			want = has(w.Days, day) && minute >= w.Start && minute < w.End
		} else {
			want = (has(w.Days, day) && minute >= w.Start) || (has(w.Days, (day+6)%7) && minute < w.End)
		}
		require.Equal(t, want, contains(w, ts), "%s at %s", w, local)
	})
}

func TestWindowValidate(t *testing.T) {
	for _, w := range []policy.Window{
		{},
		{Days: 0x80, Start: 0, End: 60},
		{Days: policy.Days(time.Monday), Start: 60, End: 60},
		{Days: policy.Days(time.Monday), Start: 1440, End: 60},
		{Days: policy.Days(time.Monday), Start: 0, End: 1441},
		{Days: policy.Days(time.Monday), Start: 0, End: 60, Offset: 841},
		{Days: policy.Days(time.Monday), Start: 0, End: 60, Offset: -841},
	} {
		require.ErrorIs(t, windowErr(w), policy.ErrInvalid, "%+v", w)
	}
	require.NoError(t, windowErr(policy.Window{Days: policy.EveryDay, Start: 0, End: 1440}))
}

func TestRunPolicy(t *testing.T) {
	night := policy.Window{Days: policy.EveryDay, Start: 22 * 60, End: 6 * 60}
	var zero policy.RunPolicy
	require.NoError(t, runErr(zero))
	require.True(t, zero.MayStart(at("2026-11-25T12:00:00Z")), "no policy: always")

	only := policy.RunPolicy{Mode: policy.OnlyIn, Windows: []policy.Window{night}}
	require.NoError(t, runErr(only))
	require.True(t, only.MayStart(at("2026-11-25T23:00:00Z")))
	require.False(t, only.MayStart(at("2026-11-25T12:00:00Z")))

	freeze := policy.RunPolicy{Mode: policy.NeverIn, Windows: []policy.Window{night}}
	require.NoError(t, runErr(freeze))
	require.False(t, freeze.MayStart(at("2026-11-25T23:00:00Z")))
	require.True(t, freeze.MayStart(at("2026-11-25T12:00:00Z")))

	// Policies under which work never starts are refused.
	allWeek := policy.Window{Days: policy.EveryDay, Start: 0, End: 1440}
	require.ErrorIs(t, runErr(policy.RunPolicy{Mode: policy.OnlyIn}), policy.ErrNeverOpens)
	require.ErrorIs(t, runErr(policy.RunPolicy{Mode: policy.NeverIn, Windows: []policy.Window{allWeek}}), policy.ErrNeverOpens)
	// Two windows that together cover the week, in different offsets.
	day := policy.Window{Days: policy.EveryDay, Start: 6 * 60, End: 22 * 60}
	shifted := policy.Window{Days: policy.EveryDay, Start: 23 * 60, End: 7 * 60, Offset: 60} // 22:00-06:00 UTC
	require.ErrorIs(t, runErr(policy.RunPolicy{Mode: policy.NeverIn, Windows: []policy.Window{day, shifted}}), policy.ErrNeverOpens)
	shifted.Offset = 120 // 21:00-05:00 UTC: 05:00-06:00 UTC stays open
	require.NoError(t, runErr(policy.RunPolicy{Mode: policy.NeverIn, Windows: []policy.Window{day, shifted}}))

	require.ErrorIs(t, runErr(policy.RunPolicy{Mode: 2}), policy.ErrInvalid)
	require.ErrorIs(t, runErr(policy.RunPolicy{Mode: policy.OnlyIn, Windows: []policy.Window{{}}}), policy.ErrInvalid)
	require.ErrorIs(t, runErr(policy.RunPolicy{Windows: make([]policy.Window, 32+1)}), policy.ErrInvalid)
}

// NextChange finds the next minute at which MayStart changes: never a
// change before it, and MayStart differs across it or it is an edge.
func TestRunPolicyNextChange(t *testing.T) {
	window := rapid.Custom(func(t *rapid.T) policy.Window {
		start := rapid.Uint16Range(0, 1440-1).Draw(t, "start")
		end := rapid.Uint16Range(1, 1440).Filter(func(e uint16) bool { return e != start }).Draw(t, "end")
		return policy.Window{
			Days:   policy.Weekdays(rapid.Uint8Range(1, uint8(policy.EveryDay)).Draw(t, "days")),
			Start:  start,
			End:    end,
			Offset: int16(rapid.IntRange(-840, 840).Draw(t, "offset")),
		}
	})
	rapid.Check(t, func(t *rapid.T) {
		p := policy.RunPolicy{Mode: policy.RunMode(rapid.Uint8Range(0, 1).Draw(t, "mode")), Windows: rapid.SliceOfN(window, 1, 3).Draw(t, "windows")}
		now := rapid.Int64Range(0, 1<<62).Draw(t, "now")
		next := policy.Tenant{Run: p}.NextChange(now)
		if next <= now {
			t.Fatalf("next change %d not after %d", next, now)
		}
		if next-now > int64(7*24*time.Hour)+int64(time.Minute) {
			t.Fatalf("next change %s away, more than a week", time.Duration(next-now))
		}
		// No change in between, checked minute by minute (up to a day).
		first := p.MayStart(now)
		for m := (now/int64(time.Minute) + 1) * int64(time.Minute); m < next && m-now < int64(24*time.Hour); m += int64(time.Minute) {
			if p.MayStart(m) != first {
				t.Fatalf("MayStart changed at %d, before the next change %d", m, next)
			}
		}
	})
	require.Equal(t, int64(math.MaxInt64), policy.Tenant{}.NextChange(0))
	offPeak := policy.RunPolicy{Mode: policy.OnlyIn, Windows: []policy.Window{{Days: policy.EveryDay, Start: 22 * 60, End: 6 * 60}}}
	require.Equal(t, at("2026-11-25T22:00:00Z"), policy.Tenant{Run: offPeak}.NextChange(at("2026-11-25T12:00:30Z")))
	require.Equal(t, at("2026-11-26T06:00:00Z"), policy.Tenant{Run: offPeak}.NextChange(at("2026-11-25T22:00:00Z")))
}

func TestTenantValidate(t *testing.T) {
	require.NoError(t, policy.Tenant{}.Validate())
	for _, bad := range []policy.Tenant{
		{Class: 7},
		{MaxInProgress: 1<<20 + 1},
		{NotBefore: -1},
		{StaleAfter: -time.Second},
		{Pressure: policy.Thresholds{SlowBlocks: policy.Limit{On: 1, Off: 2}}},
		{Run: policy.RunPolicy{Mode: policy.OnlyIn}},
	} {
		require.Error(t, bad.Validate(), "%+v", bad)
	}
	require.ErrorIs(t, runErr(policy.RunPolicy{Mode: policy.OnlyIn}), policy.ErrNeverOpens)
	p := policy.Tenant{NotBefore: at("2026-11-25T12:00:00Z")}
	require.False(t, p.MayStart(at("2026-11-25T11:59:59Z")))
	require.True(t, p.MayStart(at("2026-11-25T12:00:00Z")))
	require.Equal(t, p.NotBefore, p.NextChange(at("2026-11-25T11:00:00Z")))
	require.True(t, p.Equal(p))
	require.False(t, p.Equal(policy.Tenant{}))
}
