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

// DefaultMaxClockStep is how far ahead of the log's time a command's time
// may be, by default (see [Config.MaxClockStep]).
const DefaultMaxClockStep = time.Hour

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
	// MaxClockStep bounds how far ahead of the log's time (the time of the
	// last applied entry) a command's time may be: from cluster version 2,
	// Apply refuses a command stamped further ahead ([ErrClock]), and the
	// leader stamps no further ahead than that ([FSM.Encode]), so one
	// leader with a clock far in the future cannot push the log's time
	// there — which would freeze it for every later leader and expire
	// every lease at once. After an idle period longer than the step, the
	// log's time catches up by at most one step per command. Zero means
	// [DefaultMaxClockStep]. Setting it needs cluster version 2.
	MaxClockStep time.Duration `cbor:",omitempty"`
	// StartVersion is the cluster version of a state machine that has
	// applied nothing: [New] reads it, nothing else does (config commands
	// ignore it, and the cluster version moves only by
	// [SetClusterVersion]). Zero means the newest, [CommandVersion]: a new
	// log starts with every fix of this release. A replica that must replay,
	// from its first entry, a log begun by an earlier release sets it to
	// that release's version (1), so that it applies the old entries as the
	// other replicas did.
	StartVersion byte `cbor:"-"`
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
	if c.MaxClockStep < 0 {
		return fmt.Errorf("raftfsm: config: max clock step %s: %w", c.MaxClockStep, ErrInvalidConfig)
	}
	if c.StartVersion > CommandVersion {
		return fmt.Errorf("raftfsm: config: start version %d, this release supports 1 to %d: %w", c.StartVersion, CommandVersion, ErrClusterVersion)
	}
	return nil
}

// maxClockStep returns the effective clock step bound.
func (c *Config) maxClockStep() int64 {
	if c.MaxClockStep > 0 {
		return int64(c.MaxClockStep)
	}
	return int64(DefaultMaxClockStep)
}

// pollLogTTL returns the effective poll-log TTL.
func (c *Config) pollLogTTL() time.Duration {
	if c.PollLogTTL > 0 {
		return c.PollLogTTL
	}
	return DefaultPollLogLeases * c.Scheduler.LeaseDuration
}
