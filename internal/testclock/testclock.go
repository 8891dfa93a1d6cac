// Package testclock is a clock for tests: a time that moves only when the
// test advances it, safe to read from other goroutines (those of a leader
// service given its Now through leader.WithClock, for instance).
package testclock

import (
	"sync"
	"time"
)

// Clock is a time that only Advance moves.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// New returns a clock that reads t.
func New(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock's time by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
