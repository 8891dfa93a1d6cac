package lease

import "time"

// Clock is the worker's local clock, as the [Keeper] sees it. Hosts inject
// one with [WithClock]; the default is [SystemClock]. Times a Clock returns
// must be comparable with the sentAt time given to [NewKeeper].
type Clock interface {
	// Now returns the current local time.
	Now() time.Time
	// NewTimer returns a timer that delivers the time on its channel once
	// d has elapsed, or at once if d is not positive.
	NewTimer(d time.Duration) Timer
}

// Timer is a one-shot timer created by a [Clock].
type Timer interface {
	// C returns the channel on which the timer delivers the time when it
	// fires.
	C() <-chan time.Time
	// Stop prevents the timer from firing. It reports whether the call
	// stopped the timer, as [time.Timer.Stop] does.
	Stop() bool
}

// SystemClock is the [Clock] of package time: Now is [time.Now] and timers are
// [time.Timer]s. Its zero value is ready to use. Inside a testing/synctest
// bubble it runs on the bubble's fake time.
type SystemClock struct{}

// Now returns [time.Now].
func (SystemClock) Now() time.Time { return time.Now() }

// NewTimer returns a [Timer] backed by [time.NewTimer].
func (SystemClock) NewTimer(d time.Duration) Timer { return systemTimer{time.NewTimer(d)} }

type systemTimer struct{ t *time.Timer }

func (s systemTimer) C() <-chan time.Time { return s.t.C }
func (s systemTimer) Stop() bool          { return s.t.Stop() }
