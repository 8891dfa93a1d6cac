package raftfsm

import (
	"fmt"

	ck "github.com/compactkit/compactkit"
	"time"

	"github.com/compactkit/compactkit/index"
	"github.com/compactkit/compactkit/planner"
	"github.com/compactkit/compactkit/scheduler"
)

// defaultPollLogLeases is how many lease durations a worker may stay silent
// before its recorded poll response is forgotten.
const defaultPollLogLeases = 4

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
	// version and token) but no longer free. Zero means four lease
	// durations.
	PollLogTTL time.Duration
	// MaxClockStep bounds how far ahead of the log's time (the time of the
	// last applied entry) a command's time may be: Apply refuses a command stamped further ahead ([ErrClock]), and the
	// leader stamps no further ahead than that ([FSM.Encode]), so one
	// leader with a clock far in the future cannot push the log's time
	// there — which would freeze it for every later leader and expire
	// every lease at once. After an idle period longer than the step, the
	// log's time catches up by at most one step per command. Zero means
	// [DefaultMaxClockStep].
	MaxClockStep time.Duration `cbor:",omitempty"`
	// StartVersion is the cluster version of a state machine that has
	// applied nothing: [New] reads it, nothing else does (config commands
	// ignore it, and the cluster version moves only by
	// [SetClusterVersion]). Zero means the newest, [CommandVersion]: a new
	// log starts with every fix of this release. A replica that must replay,
	// from its first entry, a log begun by an earlier release (5 or later)
	// sets it to that release's version, so that it applies the old
	// entries as the other replicas did.
	StartVersion byte `cbor:"-"`
	// Limits bound what one command may carry. Zero fields take the
	// defaults of [DefaultLimits].
	Limits Limits `cbor:",omitempty"`
}

// Limits bound what one command may carry, so that no request — hostile or
// not — makes every replica do unbounded work or keeps a huge response in
// the poll log. The leader refuses a request over a limit before any work
// (Prepare, Encode), and Apply refuses a command over a limit, changing
// nothing. A worker holding more jobs than
// MaxReports splits its reports across polls.
type Limits struct {
	// MaxReports bounds the status updates of one poll (a worker holds at
	// most its concurrency in jobs).
	MaxReports int `cbor:",omitempty"`
	// MaxBlocks bounds the blocks of one add-blocks command (at most
	// 65536, the default).
	MaxBlocks int `cbor:",omitempty"`
	// MaxDatasets bounds the datasets of one block.
	MaxDatasets int `cbor:",omitempty"`
	// MaxOutputs bounds the outputs of one success report.
	MaxOutputs int `cbor:",omitempty"`
}

// DefaultLimits are the limits of a zero [Limits].
var DefaultLimits = Limits{MaxReports: 1024, MaxBlocks: maxBlocksPerCommand, MaxDatasets: 4096, MaxOutputs: 1024}

// withDefaults returns l with zero fields defaulted.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.MaxReports > 0 {
		d.MaxReports = l.MaxReports
	}
	if l.MaxBlocks > 0 {
		d.MaxBlocks = l.MaxBlocks
	}
	if l.MaxDatasets > 0 {
		d.MaxDatasets = l.MaxDatasets
	}
	if l.MaxOutputs > 0 {
		d.MaxOutputs = l.MaxOutputs
	}
	return d
}

// checkBlocks checks blocks (of an add-blocks command, or the outputs of
// a report) against the limits.
func (l Limits) checkBlocks(what string, blocks []ck.BlockMeta, max int) error {
	if len(blocks) > max {
		return fmt.Errorf("%s: %d blocks, limit %d: %w", what, len(blocks), max, ErrLimit)
	}
	for i := range blocks {
		if n := len(blocks[i].Datasets); n > l.MaxDatasets {
			return fmt.Errorf("%s: block %s: %d datasets, limit %d: %w", what, blocks[i].ID, n, l.MaxDatasets, ErrLimit)
		}
	}
	return nil
}

// checkCommand checks a command against the limits.
func (l Limits) checkCommand(cmd *Command) error {
	switch {
	case cmd.AddBlocks != nil:
		return l.checkBlocks("add blocks", cmd.AddBlocks.Blocks, l.MaxBlocks)
	case cmd.Poll != nil:
		p := cmd.Poll
		return l.checkPoll(p.WorkerID, len(p.Reports), func(yield func(string, []ck.BlockMeta) bool) {
			for i := range p.Update.Changes {
				c := &p.Update.Changes[i]
				if c.Kind == ck.ChangeComplete && !yield(c.Job, c.Outputs) {
					return
				}
			}
		})
	case cmd.Operator != nil && len(cmd.Operator.Blocks) > l.MaxBlocks:
		return fmt.Errorf("operator %s: %d blocks, limit %d: %w", cmd.Operator.Action, len(cmd.Operator.Blocks), l.MaxBlocks, ErrLimit)
	}
	return nil
}

// checkPoll checks a poll's reports and their outputs against the limits.
func (l Limits) checkPoll(worker string, reports int, outputs func(yield func(job string, outs []ck.BlockMeta) bool)) error {
	if reports > l.MaxReports {
		return fmt.Errorf("poll from %s: %d reports, limit %d (split them across polls): %w", ck.PublicWorkerName(worker), reports, l.MaxReports, ErrLimit)
	}
	var err error
	outputs(func(job string, outs []ck.BlockMeta) bool {
		if err = l.checkBlocks("outputs", outs, l.MaxOutputs); err != nil {
			err = fmt.Errorf("job %s: %w", job, err)
		}
		return err == nil
	})
	return err
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
	if l := c.Limits; l.MaxReports < 0 || l.MaxBlocks < 0 || l.MaxBlocks > maxBlocksPerCommand || l.MaxDatasets < 0 || l.MaxOutputs < 0 {
		return fmt.Errorf("raftfsm: config: limits %+v: %w", l, ErrInvalidConfig)
	}
	if c.StartVersion != 0 && (c.StartVersion < oldestVersion || c.StartVersion > CommandVersion) {
		return fmt.Errorf("raftfsm: config: start version %d, this release supports %d to %d: %w", c.StartVersion, oldestVersion, CommandVersion, ErrClusterVersion)
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
	return defaultPollLogLeases * c.Scheduler.LeaseDuration
}
