package scheduler

import (
	"slices"
	"strconv"
	"strings"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/internal/ident"
	"github.com/compactkit/compactkit/internal/namekey"
)

// Filter selects jobs for [Scheduler.List]. Nil and zero fields select
// everything.
type Filter struct {
	// Tenant, if set, selects the jobs of that tenant.
	Tenant *string
	// Level, if set, selects the jobs of that level.
	Level *uint32
	// Status, if not zero, selects the jobs with that stored status.
	Status ck.JobStatus
}

func (f *Filter) match(j *job) bool {
	return (f.Tenant == nil || *f.Tenant == j.st.Tenant) &&
		(f.Level == nil || *f.Level == j.st.Level) &&
		(f.Status == 0 || f.Status == j.st.Status)
}

// defaultListLimit is the page size of [Scheduler.List] without a limit.
const defaultListLimit = 100

// MaxListLimit is the largest page [Scheduler.List] returns.
const MaxListLimit = 10000

// List returns up to limit job states that match f, in (tenant, level, name)
// order, from the position after cursor ("" for the first page), and the
// cursor of the next page: "" when the listing is complete (a full page may
// return a cursor whose next page is empty). The cursor names a position,
// not a job, so pages stay stable while jobs come and go: a job present
// throughout is listed exactly once. A cursor is only meaningful with the
// filter it came from; one that cannot be parsed gives an empty page.
// limit ≤ 0 means 100; it is capped at [MaxListLimit].
//
// With a tenant the listing visits only that tenant's jobs; with a level
// only that level's jobs (one lookup per tenant); the status filter is
// applied to the jobs visited. The first listing after jobs were added
// also puts them in the tenant index, O(log n) each (see the package doc,
// "Cost").
func (s *Scheduler) List(f Filter, cursor string, limit int) ([]ck.JobState, string) {
	if limit <= 0 {
		limit = defaultListLimit
	}
	limit = min(limit, MaxListLimit)
	var from tenantKey
	if cursor != "" {
		k, ok := parseCursor(cursor)
		if !ok {
			return nil, ""
		}
		from = tenantKey{tenant: k.tenant, level: k.level, name: namekey.Of(successor(k.name.String()))}
	} else if f.Tenant != nil {
		from.tenant = *f.Tenant
		if f.Level != nil {
			from.level = *f.Level
		}
	}
	var (
		out  []ck.JobState
		last tenantKey
	)
	visit := func(k *tenantKey) bool {
		if f.Tenant != nil && k.tenant != *f.Tenant {
			return false
		}
		if f.Level != nil && k.level != *f.Level {
			return k.level < *f.Level // a tenant's levels are contiguous
		}
		if j := s.get(k.name.String()); f.match(j) {
			out = append(out, j.st)
			last = *k
		}
		return len(out) < limit
	}
	switch {
	case f.Level != nil && f.Tenant == nil:
		stop := false
		s.eachAtLevel(*f.Level, from, func(k *tenantKey) bool {
			stop = !visit(k)
			return !stop
		})
	default:
		s.tenantIndex().AscendGreaterOrEqual(&from, visit)
	}
	if len(out) < limit {
		return out, ""
	}
	return out, formatCursor(last)
}

// eachAtLevel calls fn for the key of every job at level, in (tenant, name)
// order, from the position from, until fn returns false. It costs O(log n)
// per tenant plus the jobs visited.
func (s *Scheduler) eachAtLevel(level uint32, from tenantKey, fn func(*tenantKey) bool) {
	pivot := from
	if pivot.level != level {
		if pivot.level > level {
			pivot = tenantKey{tenant: successor(pivot.tenant)}
		}
		pivot.level, pivot.name = level, namekey.Name{}
	}
	for {
		var (
			next       tenantKey
			more, stop bool
		)
		s.tenantIndex().AscendGreaterOrEqual(&pivot, func(k *tenantKey) bool {
			switch {
			case k.level == level:
				if !fn(k) {
					stop = true
					return false
				}
				return true
			case k.level < level:
				next, more = tenantKey{tenant: k.tenant, level: level}, true
			default: // past the level for this tenant
				next, more = tenantKey{tenant: successor(k.tenant), level: level}, true
			}
			return false
		})
		if stop || !more {
			return
		}
		pivot = next
	}
}

// A cursor is tenant "/" level "/" name: job names and levels hold no '/',
// so it parses from the right whatever the tenant holds.
func formatCursor(k tenantKey) string {
	return k.tenant + "/" + strconv.FormatUint(uint64(k.level), 10) + "/" + k.name.String()
}

// ValidCursor reports whether c has the shape of the cursors [Scheduler.List]
// returns, so that an API can refuse a malformed one instead of answering
// an empty page.
func ValidCursor(c string) bool {
	_, ok := parseCursor(c)
	return ok
}

func parseCursor(c string) (tenantKey, bool) {
	i := strings.LastIndexByte(c, '/')
	if i < 0 {
		return tenantKey{}, false
	}
	name, rest := c[i+1:], c[:i]
	i = strings.LastIndexByte(rest, '/')
	if i < 0 || ident.ValidateJobName(name) != nil {
		return tenantKey{}, false
	}
	level, err := strconv.ParseUint(rest[i+1:], 10, 32)
	if err != nil {
		return tenantKey{}, false
	}
	return tenantKey{tenant: rest[:i], level: uint32(level), name: namekey.Of(name)}, true
}

// Stats is a summary of the scheduler's state.
type Stats struct {
	// Jobs is the queue size: every job, whatever its status.
	Jobs int
	// Levels counts the jobs of each level that has any, by level.
	Levels []LevelStats
	// Completed is the number of completions remembered.
	Completed int
	// Paused are the pause rules in force, in order.
	Paused []PauseRule
	// DefaultLimits are the limits of the tenants without their own, and
	// OwnLimits counts the tenants with limits of their own.
	DefaultLimits Limits
	OwnLimits     int
	// CappedTenants counts the tenants with as many jobs in progress as
	// their cap: their unassigned jobs wait ([Scheduler.Capped]).
	CappedTenants int
	// CappedShards counts the (tenant, shard) pairs with as many jobs in
	// progress as their tenant's per-shard cap ([Limits].MaxPerShard).
	CappedShards int
	// Counters count what the scheduler did.
	Counters Counters
}

// Stats returns a summary of the scheduler's state. It costs O(levels +
// pause rules), once the last entry's crossings of caps are settled (see
// the package doc, "Tenant limits").
func (s *Scheduler) Stats() Stats {
	s.settle()
	return Stats{
		Jobs:      s.byName.Len(),
		Levels:    cloneOrNil(s.levels),
		Completed: s.completed.Len(),
		Paused:    cloneOrNil(s.pauses.rules),
		Counters:  s.counters,

		DefaultLimits: s.def,
		OwnLimits:     len(s.policies),
		CappedTenants: s.nCapped,
		CappedShards:  s.nShardCapped,
	}
}

func cloneOrNil[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}
