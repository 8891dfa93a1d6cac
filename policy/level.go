package policy

import (
	"fmt"
	"time"

	"github.com/compactkit/compactkit/internal/enum"
)

// maxLevelOverrides bounds [Tenant.Levels]: one override per level, for
// at most this many levels.
const maxLevelOverrides = 64

// Toggle overrides a yes/no setting: [Inherit] keeps the cluster's value.
type Toggle uint8

// The toggles.
const (
	Inherit Toggle = iota
	On
	Off
)

// String returns "inherit", "on" or "off".
func (t Toggle) String() string {
	return enum.Name("Toggle", t, Inherit, "inherit", "on", "off")
}

// Apply returns the value t gives a setting whose cluster value is v.
func (t Toggle) Apply(v bool) bool {
	switch t {
	case On:
		return true
	case Off:
		return false
	default:
		return v
	}
}

// Level overrides, for one tenant, the batching of one compaction level
// (the planner's level configuration): how many blocks and bytes a job
// takes and how long a partial batch waits before it is planned anyway,
// and whether the level is compacted across shards. A zero field keeps
// the cluster's value for that level; an override of a level at or beyond
// the cluster's final level has no effect.
//
// Overrides change how batches are formed from the next block on: the
// blocks already queued are batched again under the new values, and keys
// keep their shape (after CrossShard changes, the blocks queued under the
// former shape are planned there until drained).
type Level struct {
	// Level is the compaction level overridden.
	Level uint32
	// MaxBlocks, if not 0, is the maximum number of sources of the
	// tenant's jobs at this level.
	MaxBlocks int
	// MaxBytes, if not 0, is the maximum total size of those sources.
	MaxBytes int64
	// MaxAge, if not 0, is how long the oldest block of a partial batch
	// waits before the batch is planned although it is not full.
	MaxAge time.Duration
	// CrossShard, if not Inherit, says whether the tenant's blocks of
	// this level are compacted across shards.
	CrossShard Toggle
}

// validate reports whether l is usable; the error wraps [ErrInvalid].
// Bounds that depend on the cluster (the number of levels, the blocks a
// job may take) are the planner's to check.
func (l Level) validate() error {
	switch {
	case l.Level >= maxLevelOverrides:
		return fmt.Errorf("policy: level %d, at most %d: %w", l.Level, maxLevelOverrides-1, ErrInvalid)
	case l.MaxBlocks < 0:
		return fmt.Errorf("policy: level %d: max blocks %d: %w", l.Level, l.MaxBlocks, ErrInvalid)
	case l.MaxBytes < 0:
		return fmt.Errorf("policy: level %d: max bytes %d: %w", l.Level, l.MaxBytes, ErrInvalid)
	case l.MaxAge < 0:
		return fmt.Errorf("policy: level %d: max age %s: %w", l.Level, l.MaxAge, ErrInvalid)
	case l.CrossShard > Off:
		return fmt.Errorf("policy: level %d: cross-shard toggle %d: %w", l.Level, uint8(l.CrossShard), ErrInvalid)
	case l == Level{Level: l.Level}:
		return fmt.Errorf("policy: level %d: an override that overrides nothing: %w", l.Level, ErrInvalid)
	}
	return nil
}

func (l Level) level() uint32 { return l.Level }

// perLevel is a setting of a tenant for one level: a [Level] or a
// [LevelRun].
type perLevel interface {
	level() uint32
	validate() error
}

// validatePerLevel checks a tenant's settings of one kind (what names
// them, such as "level overrides"): each valid, in ascending order of
// level, one per level; an error of the list wraps [ErrInvalid].
func validatePerLevel[T perLevel](what string, items []T) error {
	if len(items) > maxLevelOverrides {
		return fmt.Errorf("policy: %d %s, at most %d: %w", len(items), what, maxLevelOverrides, ErrInvalid)
	}
	for i, it := range items {
		if err := it.validate(); err != nil {
			return err
		}
		if i > 0 && it.level() <= items[i-1].level() {
			return fmt.Errorf("policy: %s not in ascending order of level (%d after %d): %w", what, it.level(), items[i-1].level(), ErrInvalid)
		}
	}
	return nil
}

// LevelRun is a run policy for one compaction level of a tenant: the
// tenant's new jobs at that level start only inside its windows
// ([OnlyIn]) or never inside them ([NeverIn]), on top of the tenant's own
// run policy ([Tenant.Run]): a job starts only when both let it. Jobs in
// progress run to their end. With the default policy (every tenant
// without its own), it is a window for the level across tenants.
type LevelRun struct {
	// Level is the compaction level the windows apply to.
	Level uint32
	// Run says when the level's new jobs may start; it must have windows.
	Run RunPolicy
}

// validate reports whether r is usable: a level below
// maxLevelOverrides and a run policy with windows under which work can
// start (errors wrap [ErrInvalid], or [ErrNeverOpens]).
func (r LevelRun) validate() error {
	if r.Level >= maxLevelOverrides {
		return fmt.Errorf("policy: level %d run policy: level at most %d: %w", r.Level, maxLevelOverrides-1, ErrInvalid)
	}
	if len(r.Run.Windows) == 0 {
		return fmt.Errorf("policy: level %d run policy without windows: %w", r.Level, ErrInvalid)
	}
	if err := r.Run.validate(); err != nil {
		return fmt.Errorf("policy: level %d: %w", r.Level, err)
	}
	return nil
}

func (r LevelRun) level() uint32 { return r.Level }

// ClosedLevels returns the levels (bit l for level l) whose run policy
// lets no new job start at log time now.
func ClosedLevels(runs []LevelRun, now int64) uint64 {
	var closed uint64
	for _, r := range runs {
		if r.Level < maxLevelOverrides && !r.Run.MayStart(now) {
			closed |= 1 << r.Level
		}
	}
	return closed
}
