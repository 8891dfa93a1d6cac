package policy

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// maxInProgress bounds [Tenant.MaxInProgress] and
// [Tenant.MaxInProgressPerShard].
const maxInProgress = 1 << 20

// Tenant is the scheduling policy of one tenant, or the default policy of
// the tenants without their own. The zero value is the policy of a tenant
// nobody configured: class Medium, no cap, no window, no not-before time,
// no backpressure thresholds, no staleness alarm, the cluster's batching.
type Tenant struct {
	// Class orders the tenant's jobs against other tenants' at the same
	// level.
	Class Class
	// MaxInProgress caps the tenant's jobs in progress at once; 0 means no
	// cap, and at most 1<<20. Jobs beyond it wait, held, until one ends.
	MaxInProgress uint32
	// MaxInProgressPerShard caps the tenant's jobs in progress on each
	// shard at once (the jobs of levels compacted across shards,
	// compactkit.AnyShard, count as one more shard); 0 means no cap. A
	// shard's jobs beyond it wait, held, until one of that shard ends,
	// while the tenant's other shards go on. With MaxInProgress, a job
	// waits while either cap holds it. At most 1<<20.
	MaxInProgressPerShard uint32
	// Run says when the tenant's new jobs may start; the zero value lets
	// them start at any time.
	Run RunPolicy
	// NotBefore holds the tenant's new jobs until that log time (Unix
	// nanoseconds); 0 means none.
	NotBefore int64
	// Pressure grades the tenant's backlog for its ingest (see
	// [Thresholds]); the zero value always grades OK.
	Pressure Thresholds
	// ShardPressure grades each shard of the tenant apart: the blocks
	// queued in that shard's keys, at every level, and their ready batches (the
	// keys of levels compacted across shards are one shard,
	// compactkit.AnyShard). The zero value always grades OK.
	ShardPressure Thresholds
	// StaleAfter raises a staleness alarm for a level of the tenant whose
	// oldest queued block has waited longer than this; 0 means no alarm.
	StaleAfter time.Duration
	// Levels overrides the cluster's batching of some levels for the
	// tenant (see [Level]): at most one entry per level (levels 0 to 63),
	// in ascending order of level. Nil keeps the cluster's batching at every level.
	Levels []Level
	// LevelRuns adds run windows for some levels (see [LevelRun]): at most
	// one entry per level, in ascending order of level. A job at such a
	// level starts only when both Run and the level's windows let it.
	LevelRuns []LevelRun
}

// Validate reports whether t is usable. Errors wrap [ErrInvalid], or
// [ErrNeverOpens] for a run policy under which no job could ever start.
func (t Tenant) Validate() error {
	if err := t.Class.validate(); err != nil {
		return err
	}
	if t.MaxInProgress > maxInProgress {
		return fmt.Errorf("policy: max in progress %d, at most %d: %w", t.MaxInProgress, maxInProgress, ErrInvalid)
	}
	if t.MaxInProgressPerShard > maxInProgress {
		return fmt.Errorf("policy: max in progress per shard %d, at most %d: %w", t.MaxInProgressPerShard, maxInProgress, ErrInvalid)
	}
	if err := t.Run.validate(); err != nil {
		return err
	}
	if t.NotBefore < 0 {
		return fmt.Errorf("policy: not before %d: %w", t.NotBefore, ErrInvalid)
	}
	if err := t.Pressure.validate(); err != nil {
		return err
	}
	if err := t.ShardPressure.validate(); err != nil {
		return fmt.Errorf("policy: shard pressure: %w", err)
	}
	if t.StaleAfter < 0 {
		return fmt.Errorf("policy: stale after %s: %w", t.StaleAfter, ErrInvalid)
	}
	if err := validatePerLevel("level overrides", t.Levels); err != nil {
		return err
	}
	if err := validatePerLevel("level run policies", t.LevelRuns); err != nil {
		return err
	}
	for _, r := range t.LevelRuns {
		if !someMinute(func(now int64) bool { return t.Run.MayStart(now) && r.Run.MayStart(now) }) {
			return fmt.Errorf("policy: level %d run policy %s %v and the tenant's %s %v: no minute of the week lets both start a job: %w",
				r.Level, r.Run.Mode, r.Run.Windows, t.Run.Mode, t.Run.Windows, ErrNeverOpens)
		}
	}
	return nil
}

// Clone returns a copy of t that shares no slice with it.
func (t Tenant) Clone() Tenant {
	t.Run.Windows = slices.Clone(t.Run.Windows)
	t.Levels = slices.Clone(t.Levels)
	t.LevelRuns = slices.Clone(t.LevelRuns)
	for i := range t.LevelRuns {
		t.LevelRuns[i].Run.Windows = slices.Clone(t.LevelRuns[i].Run.Windows)
	}
	return t
}

// Equal reports whether t and u are the same policy.
func (t Tenant) Equal(u Tenant) bool {
	return t.Class == u.Class && t.MaxInProgress == u.MaxInProgress && t.MaxInProgressPerShard == u.MaxInProgressPerShard && t.NotBefore == u.NotBefore &&
		t.Pressure == u.Pressure && t.ShardPressure == u.ShardPressure && t.StaleAfter == u.StaleAfter &&
		t.Run.Mode == u.Run.Mode && slices.Equal(t.Run.Windows, u.Run.Windows) && slices.Equal(t.Levels, u.Levels) &&
		slices.EqualFunc(t.LevelRuns, u.LevelRuns, func(a, b LevelRun) bool {
			return a.Level == b.Level && a.Run.Mode == b.Run.Mode && slices.Equal(a.Run.Windows, b.Run.Windows)
		})
}

// MayStart reports whether the tenant's new jobs may start at log time
// now: its run policy lets them and its not-before time has passed. Its
// level run policies may hold some levels still (see [ClosedLevels]).
func (t Tenant) MayStart(now int64) bool {
	return now >= t.NotBefore && t.Run.MayStart(now)
}

// NextChange returns the first log time after now at which
// [Tenant.MayStart] or [ClosedLevels] may change — a window edge
// or the not-before time — or math.MaxInt64 if it never does.
func (t Tenant) NextChange(now int64) int64 {
	next := t.Run.nextChange(now)
	for _, r := range t.LevelRuns {
		next = min(next, r.Run.nextChange(now))
	}
	if t.NotBefore > now {
		next = min(next, t.NotBefore)
	}
	return next
}

// nextChange returns the first log time after t at which [RunPolicy.MayStart]
// may change: the next minute at which one of the windows opens or
// closes, or math.MaxInt64 for a policy without windows. It uses integer
// arithmetic only.
func (p RunPolicy) nextChange(t int64) int64 {
	if len(p.Windows) == 0 {
		return math.MaxInt64
	}
	minute := floorDiv(t, int64(time.Minute))
	best := int64(math.MaxInt64)
	for _, w := range p.Windows {
		// The window's minute of the week now, and each edge's: the
		// distance to the next edge, in minutes, is 1 to a week.
		m := int64(w.minuteOfWeek(t))
		length := int64(w.End) - int64(w.Start)
		if length <= 0 {
			length += minutesPerDay
		}
		for d := range 7 {
			if !w.Days.has(time.Weekday(d)) {
				continue
			}
			open := int64(d)*minutesPerDay + int64(w.Start)
			for _, edge := range [2]int64{open, open + length} {
				dist := floorMod(edge-m, minutesPerWeek)
				if dist == 0 {
					dist = minutesPerWeek
				}
				best = min(best, dist)
			}
		}
	}
	if minute > math.MaxInt64/int64(time.Minute)-best {
		return math.MaxInt64
	}
	return (minute + best) * int64(time.Minute)
}
