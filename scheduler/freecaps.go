package scheduler

import (
	"math"
	"slices"

	ck "github.com/compactkit/compactkit"
)

// FreeCaps makes the jobs in progress that the schedule ends — completed,
// failed or released by [Schedule.UpdateJob] — count off their tenant's
// caps ([Limits].MaxInProgress, MaxPerShard) for the rest of the
// schedule: a poll that ends a capped tenant's job may start the tenant's
// next one, as it would without a cap. The unassigned jobs the view holds
// at the cap become assignable at their level (they do not age into level
// 0 in this schedule), and [Schedule.Held] no longer holds the tenant
// while it is below its cap. A transaction applies the changes in order,
// so the job ended comes off the count before the next one is assigned.
// Without it a schedule counts a tenant's jobs in progress as the view
// has them. Finding a freed tenant's next job costs a search of the
// view's jobs held at a cap, by tenant; jobs of tenants without a cap cost
// nothing more.
func (sc *Schedule) FreeCaps() *Schedule {
	sc.freeCaps = true
	return sc
}

// Freed returns the tenants with a cap that this schedule ended jobs in
// progress of (see [Schedule.FreeCaps]), in the order it ended them: a
// planner view that holds their keys at the cap releases them, and
// [Schedule.Held] decides.
func (sc *Schedule) Freed() []string { return sc.freed }

// free counts off the caps of its tenant a job of the view in progress
// that this schedule ends, and from the first on lets freedHead offer the
// tenant's unassigned jobs that the view holds at a cap.
func (sc *Schedule) free(j *job) {
	tenant, shard := j.st.Tenant, j.shard()
	p, _ := sc.policyOf(tenant)
	if p.MaxInProgress > 0 {
		sc.uncount(sc.lim(tenant))
	}
	if p.MaxPerShard > 0 {
		sc.uncount(sc.slim(tenant, shard))
	}
	if !slices.Contains(sc.freed, tenant) {
		sc.freed = append(sc.freed, tenant)
	}
}

// uncount counts off one job in progress of the view that the schedule
// ended.
func (sc *Schedule) uncount(l *tenantLim) {
	was := l.full()
	l.freed++
	if was && !l.full() {
		sc.nfull--
	}
}

// freedAssignable reports whether a held job of a freed tenant may be
// assigned now: untouched, and its tenant and shard below their caps.
func (sc *Schedule) freedAssignable(j *job) bool {
	if sc.isTouched(j) {
		return false
	}
	p, _ := sc.policyOf(j.st.Tenant)
	sc.limits(j.st.Tenant, j.shard(), p)
	return !sc.full(j.st.Tenant, j.shard())
}

// freedFirst returns the first assignable job of tenant that the view
// holds at a cap, at level or above (any level with all), in the view's
// held index order: by level, then failures, deadline and name.
func (sc *Schedule) freedFirst(tenant string, level uint32, all bool) *job {
	if l := sc.lims[tenant]; l != nil && l.full() {
		return nil // at its cap again: none of its jobs is assignable
	}
	sc.probe.rank = 0
	sc.probe.st = ck.JobState{Tenant: tenant, Level: level, Deadline: math.MinInt64}
	var found *job
	sc.v.held.Peek().AscendGreaterOrEqual(&sc.probe, func(j *job) bool {
		if j.st.Tenant != tenant || !all && j.st.Level != level {
			return false
		}
		if sc.freedAssignable(j) {
			found = j
			return false
		}
		return true
	})
	return found
}

// freedHead puts into best the first assignable held job of a freed
// tenant at the level, if it comes before best.
func (sc *Schedule) freedHead(level uint32, best *candidate) {
	for _, tenant := range sc.freed {
		if j := sc.freedFirst(tenant, level, false); j != nil && best.better(j.rank, &j.st) {
			*best = candidate{st: &j.st, j: j, rank: j.rank}
		}
	}
}
