package policy

import (
	"fmt"
	"strings"
	"time"
)

// Weekdays is a set of days of the week: bit d is time.Weekday(d), so bit
// 0 is Sunday.
type Weekdays uint8

// Days of the week, and common sets of them.
const (
	Sunday Weekdays = 1 << iota
	Monday
	Tuesday
	Wednesday
	Thursday
	Friday
	Saturday

	// EveryDay is all seven days.
	EveryDay = Sunday | Monday | Tuesday | Wednesday | Thursday | Friday | Saturday
	// WorkingDays is Monday to Friday.
	WorkingDays = Monday | Tuesday | Wednesday | Thursday | Friday
)

// Has reports whether d is in the set.
func (w Weekdays) Has(d time.Weekday) bool { return w&(1<<uint(d)) != 0 }

// String lists the days, e.g. "Mon,Wed" ("-" for none).
func (w Weekdays) String() string {
	var days []string
	for d := time.Sunday; d <= time.Saturday; d++ {
		if w.Has(d) {
			days = append(days, d.String()[:3])
		}
	}
	if len(days) == 0 {
		return "-"
	}
	return strings.Join(days, ",")
}

// Bounds of a [Window].
const (
	// MinutesPerDay is the largest Window.End: the end of the day.
	MinutesPerDay = 24 * 60
	// MaxOffset bounds Window.Offset: UTC−14:00 to UTC+14:00.
	MaxOffset = 14 * 60
)

const (
	minutesPerWeek = 7 * MinutesPerDay
	// epochWeekday is the day of the week of 1970-01-01.
	epochWeekday = time.Thursday
)

// Window is a recurring weekly range of log time: it opens on each of
// Days at minute Start of the day and closes at minute End, in UTC shifted
// by Offset minutes. An End before Start wraps past midnight: the window
// closes at End on the next day. The zero value is invalid (it has no
// days); see [Window.Validate].
type Window struct {
	// Days are the days the window opens on, in its offset.
	Days Weekdays
	// Start and End are minutes of the day, 0 to [MinutesPerDay]: the
	// window holds the minutes from Start up to, not including, End. Start
	// 0 and End 1440 is the whole day; Start equal to End is refused.
	Start, End uint16
	// Offset is the window's fixed offset east of UTC in minutes, at most
	// [MaxOffset] either way. It never follows daylight saving time.
	Offset int16
}

// Validate reports whether w is a usable window: at least one day, Start
// and End within the day and different, the offset within bounds. The
// error wraps [ErrInvalid].
func (w Window) Validate() error {
	switch {
	case w.Days == 0 || w.Days > EveryDay:
		return fmt.Errorf("policy: window %s: days %#x, want a set of the seven days: %w", w, uint8(w.Days), ErrInvalid)
	case w.Start >= MinutesPerDay || w.End > MinutesPerDay:
		return fmt.Errorf("policy: window %s: minutes of the day run from 0 to %d: %w", w, MinutesPerDay, ErrInvalid)
	case w.Start == w.End:
		return fmt.Errorf("policy: window %s: empty (start equals end): %w", w, ErrInvalid)
	case w.Offset < -MaxOffset || w.Offset > MaxOffset:
		return fmt.Errorf("policy: window %s: offset %d minutes, at most %d either way: %w", w, w.Offset, MaxOffset, ErrInvalid)
	}
	return nil
}

// String formats the window as "Mon,Tue 22:00-06:00 UTC+01:00".
func (w Window) String() string {
	off, sign := int(w.Offset), "+"
	if off < 0 {
		off, sign = -off, "-"
	}
	return fmt.Sprintf("%s %02d:%02d-%02d:%02d UTC%s%02d:%02d", w.Days, w.Start/60, w.Start%60, w.End/60, w.End%60, sign, off/60, off%60)
}

// minuteOfWeek returns the minute of the week (0 is Sunday 00:00) of log
// time t in the window's offset.
func (w Window) minuteOfWeek(t int64) int {
	m := floorDiv(t, int64(time.Minute)) + int64(w.Offset)
	// Shift so that minute 0 is a Sunday 00:00: the epoch is a Thursday.
	return int(floorMod(m+int64(epochWeekday)*MinutesPerDay, minutesPerWeek))
}

// Contains reports whether log time t (Unix nanoseconds) is inside the
// window. It uses integer arithmetic only.
func (w Window) Contains(t int64) bool { return w.holds(w.minuteOfWeek(t)) }

// holds reports whether the window holds minute m of the week (in its own
// offset).
func (w Window) holds(m int) bool {
	day, minute := time.Weekday(m/MinutesPerDay), uint16(m%MinutesPerDay)
	if w.Start < w.End {
		return w.Days.Has(day) && minute >= w.Start && minute < w.End
	}
	prev := (day + 6) % 7
	return (w.Days.Has(day) && minute >= w.Start) || (w.Days.Has(prev) && minute < w.End)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }

// RunMode says what a [RunPolicy]'s windows mean.
type RunMode uint8

// The run modes.
const (
	// NeverIn: new jobs do not start inside the windows (a freeze).
	NeverIn RunMode = iota
	// OnlyIn: new jobs start only inside the windows ("off-peak").
	OnlyIn
)

// String returns "never-in" or "only-in".
func (m RunMode) String() string {
	switch m {
	case NeverIn:
		return "never-in"
	case OnlyIn:
		return "only-in"
	default:
		return fmt.Sprintf("RunMode(%d)", uint8(m))
	}
}

// MaxWindows bounds the windows of one [RunPolicy].
const MaxWindows = 32

// RunPolicy decides when new jobs may start. The zero value lets them
// start at any time. Jobs in progress are never stopped by a run policy.
type RunPolicy struct {
	Mode    RunMode
	Windows []Window
}

// MayStart reports whether a new job may start at log time t.
func (p RunPolicy) MayStart(t int64) bool {
	in := false
	for _, w := range p.Windows {
		if w.Contains(t) {
			in = true
			break
		}
	}
	if p.Mode == OnlyIn {
		return in
	}
	return !in
}

// Validate reports whether p is usable: a known mode, at most
// [MaxWindows] valid windows, and at least one minute of the week in which
// work may start — an OnlyIn policy whose windows hold no minute, or a
// NeverIn policy whose windows hold every minute, is refused with an
// error wrapping [ErrNeverOpens]. Other errors wrap [ErrInvalid].
func (p RunPolicy) Validate() error {
	if p.Mode > OnlyIn {
		return fmt.Errorf("policy: run policy: mode %d: %w", uint8(p.Mode), ErrInvalid)
	}
	if len(p.Windows) > MaxWindows {
		return fmt.Errorf("policy: run policy: %d windows, at most %d: %w", len(p.Windows), MaxWindows, ErrInvalid)
	}
	for _, w := range p.Windows {
		if err := w.Validate(); err != nil {
			return err
		}
	}
	if p.Mode == OnlyIn && len(p.Windows) == 0 {
		return fmt.Errorf("policy: run policy: %s without windows: %w", p.Mode, ErrNeverOpens)
	}
	if someMinute(p.MayStart) {
		return nil
	}
	return fmt.Errorf("policy: run policy %s %v: no minute of the week lets a job start: %w", p.Mode, p.Windows, ErrNeverOpens)
}

// someMinute reports whether open holds at some minute of the week. Every
// minute is asked in UTC: windows with different offsets each answer for
// the same instant.
func someMinute(open func(t int64) bool) bool {
	for m := range minutesPerWeek {
		if open((int64(m) - int64(epochWeekday)*MinutesPerDay) * int64(time.Minute)) {
			return true
		}
	}
	return false
}
