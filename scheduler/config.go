package scheduler

import (
	"fmt"
	"slices"
	"time"
)

// Config is the scheduler's configuration. It is replicated state: the state
// machine changes it only when it applies a config command ([Scheduler.SetConfig]),
// and local settings only seed its initial value.
type Config struct {
	// MaxFailures is the failure limit: a job whose failed and abandoned
	// attempts reach it is excluded. 0 means unlimited.
	MaxFailures uint32
	// LeaseDuration is how long an assignment or renewal holds (log time).
	LeaseDuration time.Duration
	// MaxQueueSize bounds the number of jobs the scheduler holds, whatever
	// their status. At the limit no job is added, and excluded jobs are
	// evicted to make room. 0 means unlimited.
	MaxQueueSize int
	// MaxSlotsPerRequest caps the free slots one poll may claim: a larger
	// request is capped, not rejected.
	MaxSlotsPerRequest int
	// AgingThreshold is, per level, how long an unassigned job may wait
	// (since it was added): one that has waited longer competes as a
	// level-0 job. Entry i
	// applies to level i; levels past the end use the last entry. A zero
	// entry, or an empty slice, disables aging for those levels. Level 0
	// never ages: it is level 0 already.
	AgingThreshold []time.Duration
	// CompletedRetention is how long (log time) a completed job and its
	// token are remembered, so that a repeated success report is answered
	// "completed" and the job's name is not reused.
	CompletedRetention time.Duration
}

// Defaults of [DefaultConfig].
const (
	defaultMaxFailures        = 3
	defaultLeaseDuration      = 15 * time.Second
	defaultMaxQueueSize       = 10000
	defaultMaxSlotsPerRequest = 64
	// defaultCompletedRetention is four lease durations: long enough for a
	// worker whose success reply was lost to retry its report.
	defaultCompletedRetention = 4 * defaultLeaseDuration
)

// maxAgingLevels bounds the length of Config.AgingThreshold.
const maxAgingLevels = 256

// DefaultConfig returns the default configuration: 3 failures, a 15 s lease,
// 10,000 jobs, 64 slots per request, completions remembered for one minute,
// and aging thresholds of 15 minutes for level 1, 30 minutes for level 2 and
// one hour for level 3 and above.
func DefaultConfig() Config {
	return Config{
		MaxFailures:        defaultMaxFailures,
		LeaseDuration:      defaultLeaseDuration,
		MaxQueueSize:       defaultMaxQueueSize,
		MaxSlotsPerRequest: defaultMaxSlotsPerRequest,
		AgingThreshold:     []time.Duration{0, 15 * time.Minute, 30 * time.Minute, time.Hour},
		CompletedRetention: defaultCompletedRetention,
	}
}

// Validate reports whether c is usable: a positive lease duration, a
// non-negative queue limit, at least one slot per request, non-negative
// aging thresholds (at most 256 of them) and a non-negative retention.
func (c Config) Validate() error {
	switch {
	case c.LeaseDuration <= 0:
		return fmt.Errorf("lease duration %s: must be positive: %w", c.LeaseDuration, ErrInvalidConfig)
	case c.MaxQueueSize < 0:
		return fmt.Errorf("max queue size %d: must not be negative: %w", c.MaxQueueSize, ErrInvalidConfig)
	case c.MaxSlotsPerRequest < 1:
		return fmt.Errorf("max slots per request %d: must be at least 1: %w", c.MaxSlotsPerRequest, ErrInvalidConfig)
	case len(c.AgingThreshold) > maxAgingLevels:
		return fmt.Errorf("%d aging thresholds, limit %d: %w", len(c.AgingThreshold), maxAgingLevels, ErrInvalidConfig)
	case c.CompletedRetention < 0:
		return fmt.Errorf("completed retention %s: must not be negative: %w", c.CompletedRetention, ErrInvalidConfig)
	}
	for i, d := range c.AgingThreshold {
		if d < 0 {
			return fmt.Errorf("aging threshold of level %d: %s: must not be negative: %w", i, d, ErrInvalidConfig)
		}
	}
	return nil
}

// clone returns c with its own copy of the aging thresholds.
func (c Config) clone() Config {
	c.AgingThreshold = slices.Clone(c.AgingThreshold)
	return c
}

// agingThreshold returns the aging threshold of level (0: never ages).
func (c *Config) agingThreshold(level uint32) time.Duration {
	n := len(c.AgingThreshold)
	if level == 0 || n == 0 {
		return 0
	}
	if uint64(level) >= uint64(n) {
		return c.AgingThreshold[n-1]
	}
	return c.AgingThreshold[level]
}

// agesAbove reports whether any level at or above level can age.
func (c *Config) agesAbove(level uint32) bool {
	n := len(c.AgingThreshold)
	if n == 0 {
		return false
	}
	from := max(level, 1)
	if uint64(from) >= uint64(n) {
		return c.AgingThreshold[n-1] > 0
	}
	for _, d := range c.AgingThreshold[from:] {
		if d > 0 {
			return true
		}
	}
	return false
}

// agedCutoff returns the latest AddedAt at which a job of the given
// threshold counts as aged at now — it has waited longer than the threshold:
// AddedAt + threshold < now — and false if no job can be aged (threshold 0,
// or now - threshold - 1 underflows).
func agedCutoff(now int64, threshold time.Duration) (int64, bool) {
	if threshold <= 0 {
		return 0, false
	}
	cut := now - int64(threshold) - 1
	if cut >= now { // underflow
		return 0, false
	}
	return cut, true
}

// atLimit reports whether a job with the given failures reaches the limit
// when one more failure is counted.
func (c *Config) atLimit(failures uint32) bool {
	return c.MaxFailures > 0 && uint64(failures)+1 >= uint64(c.MaxFailures)
}
