package raftfsm

import (
	"fmt"
	"time"

	"github.com/compactkit/compactkit/index"
	"github.com/compactkit/compactkit/planner"
	"github.com/compactkit/compactkit/scheduler"
)

// DefaultPollLogLeases is how many lease durations a worker may stay silent
// before its recorded poll response is forgotten.
const DefaultPollLogLeases = 4

// Config is the replicated configuration of the state machine: everything
// that affects Apply. It is state, not a local setting: [New] uses it only
// for a state machine that has applied nothing yet, and afterwards it
// changes only when a config command ([Command.Config]) is applied, so
// replicas whose local settings differ still apply entries identically.
type Config struct {
	// Planner batches blocks into jobs.
	Planner planner.Config
	// Scheduler hands jobs out under leases.
	Scheduler scheduler.Config
	// Index keeps the live blocks and tombstones.
	Index index.Config
	// PollLogTTL is how long (log time) a worker may stay silent before the
	// response to its latest poll is forgotten. A retry arriving later is
	// acted on again, which is safe (every change is fenced by the job's
	// version and token) but no longer free. Zero means
	// DefaultPollLogLeases lease durations.
	PollLogTTL time.Duration
}

// DefaultConfig returns the default configuration of every component.
func DefaultConfig() Config {
	return Config{
		Planner:   planner.DefaultConfig(),
		Scheduler: scheduler.DefaultConfig(),
		Index:     index.DefaultConfig(),
	}
}

// Validate reports whether c is usable; the error wraps the component's
// configuration error, or [ErrInvalidConfig].
func (c *Config) Validate() error {
	if err := c.Planner.Validate(); err != nil {
		return fmt.Errorf("raftfsm: config: %w", err)
	}
	if err := c.Scheduler.Validate(); err != nil {
		return fmt.Errorf("raftfsm: config: %w", err)
	}
	if err := c.Index.Validate(); err != nil {
		return fmt.Errorf("raftfsm: config: %w", err)
	}
	if c.PollLogTTL < 0 {
		return fmt.Errorf("raftfsm: config: poll log TTL %s: %w", c.PollLogTTL, ErrInvalidConfig)
	}
	return nil
}

// pollLogTTL returns the effective poll-log TTL.
func (c *Config) pollLogTTL() time.Duration {
	if c.PollLogTTL > 0 {
		return c.PollLogTTL
	}
	return DefaultPollLogLeases * c.Scheduler.LeaseDuration
}
