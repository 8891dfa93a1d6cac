package policy

import (
	"fmt"
	"strings"
	"time"

	"github.com/compactkit/compactkit/internal/enum"
)

// Weekdays is a set of days of the week: bit d is time.Weekday(d), so bit
// 0 is Sunday.
type Weekdays uint8

// EveryDay is all seven days.
const EveryDay Weekdays = 1<<7 - 1

// Days returns the set of the days given: Days(time.Saturday,
// time.Sunday) is the weekend.
func Days(days ...time.Weekday) Weekdays {
	var w Weekdays
	for _, d := range days {
		w |= 1 << uint(d%7)
	}
	return w
}

// has reports whether d is in the set.
func (w Weekdays) has(d time.Weekday) bool { return w&(1<<uint(d)) != 0 }

// names lists the days, e.g. "Mon,Wed" ("-" for none).
func (w Weekdays) names() string {
	var days []string
	for d := time.Sunday; d <= time.Saturday; d++ {
		if w.has(d) {
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
	// minutesPerDay is the largest Window.End: the end of the day.
	minutesPerDay = 24 * 60
	// maxOffset bounds Window.Offset: UTC−14:00 to UTC+14:00.
	maxOffset = 14 * 60
)

const (
	minutesPerWeek = 7 * minutesPerDay
	// epochWeekday is the day of the week of 1970-01-01.
	epochWeekday = time.Thursday
)

// Window is a recurring weekly range of log time: it opens on each of
// Days at minute Start of the day and closes at minute End, in UTC shifted
// by Offset minutes. An End before Start wraps past midnight: the window
// closes at End on the next day. The zero value is invalid (it has no
// days); see [Tenant.Validate].
type Window struct {
	// Days are the days the window opens on, in its offset.
	Days Weekdays
	// Start and End are minutes of the day, 0 to 1440: the
	// window holds the minutes from Start up to, not including, End. Start
	// 0 and End 1440 is the whole day; Start equal to End is refused.
	Start, End uint16
	// Offset is the window's fixed offset east of UTC in minutes, at most
	// 840 (14 hours) either way. It never follows daylight saving time.
	Offset int16
}

// validate reports whether w is a usable window: at least one day, Start
// and End within the day and different, the offset within bounds. The
// error wraps [ErrInvalid].
func (w Window) validate() error {
	switch {
	case w.Days == 0 || w.Days > EveryDay:
		return fmt.Errorf("policy: window %s: days %#x, want a set of the seven days: %w", w, uint8(w.Days), ErrInvalid)
	case w.Start >= minutesPerDay || w.End > minutesPerDay:
		return fmt.Errorf("policy: window %s: minutes of the day run from 0 to %d: %w", w, minutesPerDay, ErrInvalid)
	case w.Start == w.End:
		return fmt.Errorf("policy: window %s: empty (start equals end): %w", w, ErrInvalid)
	case w.Offset < -maxOffset || w.Offset > maxOffset:
		return fmt.Errorf("policy: window %s: offset %d minutes, at most %d either way: %w", w, w.Offset, maxOffset, ErrInvalid)
	}
	return nil
}

// String formats the window as "Mon,Tue 22:00-06:00 UTC+01:00".
func (w Window) String() string {
	off, sign := int(w.Offset), "+"
	if off < 0 {
		off, sign = -off, "-"
	}
	return fmt.Sprintf("%s %02d:%02d-%02d:%02d UTC%s%02d:%02d", w.Days.names(), w.Start/60, w.Start%60, w.End/60, w.End%60, sign, off/60, off%60)
}

// minuteOfWeek returns the minute of the week (0 is Sunday 00:00) of log
// time t in the window's offset.
func (w Window) minuteOfWeek(t int64) int {
	m := floorDiv(t, int64(time.Minute)) + int64(w.Offset)
	// Shift so that minute 0 is a Sunday 00:00: the epoch is a Thursday.
	return int(floorMod(m+int64(epochWeekday)*minutesPerDay, minutesPerWeek))
}

// contains reports whether log time t (Unix nanoseconds) is inside the
// window. It uses integer arithmetic only.
func (w Window) contains(t int64) bool { return w.holds(w.minuteOfWeek(t)) }

// holds reports whether the window holds minute m of the week (in its own
// offset).
func (w Window) holds(m int) bool {
	day, minute := time.Weekday(m/minutesPerDay), uint16(m%minutesPerDay)
	if w.Start < w.End {
		return w.Days.has(day) && minute >= w.Start && minute < w.End
	}
	prev := (day + 6) % 7
	return (w.Days.has(day) && minute >= w.Start) || (w.Days.has(prev) && minute < w.End)
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
	return enum.Name("RunMode", m, NeverIn, "never-in", "only-in")
}

// maxWindows bounds the windows of one [RunPolicy].
const maxWindows = 32

// RunPolicy decides when new jobs may start. The zero value lets them
// start at any time. Jobs in progress are never stopped by a run policy.
type RunPolicy struct {
	Mode RunMode
	// Windows are at most 32 windows.
	Windows []Window
}

// MayStart reports whether a new job may start at log time t.
func (p RunPolicy) MayStart(t int64) bool {
	in := false
	for _, w := range p.Windows {
		if w.contains(t) {
			in = true
			break
		}
	}
	if p.Mode == OnlyIn {
		return in
	}
	return !in
}

// validate reports whether p is usable: a known mode, at most
// maxWindows valid windows, and at least one minute of the week in which
// work may start — an OnlyIn policy whose windows hold no minute, or a
// NeverIn policy whose windows hold every minute, is refused with an
// error wrapping [ErrNeverOpens]. Other errors wrap [ErrInvalid].
func (p RunPolicy) validate() error {
	if p.Mode > OnlyIn {
		return fmt.Errorf("policy: run policy: mode %d: %w", uint8(p.Mode), ErrInvalid)
	}
	if len(p.Windows) > maxWindows {
		return fmt.Errorf("policy: run policy: %d windows, at most %d: %w", len(p.Windows), maxWindows, ErrInvalid)
	}
	for _, w := range p.Windows {
		if err := w.validate(); err != nil {
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
		if open((int64(m) - int64(epochWeekday)*minutesPerDay) * int64(time.Minute)) {
			return true
		}
	}
	return false
}
