package scheduler

import (
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
// has them. The first job of a capped tenant that the schedule ends costs
// a walk of that tenant's jobs in the view (to find those held at the
// cap); jobs of tenants without a cap cost nothing more.
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
// that this schedule ends, and collects the tenant's unassigned jobs that
// the view holds at the cap.
func (sc *Schedule) free(j *job) {
	tenant, shard := j.st.Tenant, j.shard()
	p, _ := sc.policyOf(tenant)
	if p.MaxInProgress > 0 {
		sc.uncount(sc.lim(tenant))
	}
	if p.MaxPerShard > 0 {
		sc.uncount(sc.slim(tenant, shard))
	}
	if slices.Contains(sc.freed, tenant) {
		return
	}
	sc.freed = append(sc.freed, tenant)
	sc.v.byTenant.Peek().AscendRange(&tenantKey{tenant: tenant}, &tenantKey{tenant: successor(tenant)}, func(k *tenantKey) bool {
		if h := sc.base(k.name.String()); h != nil && h.st.Status == ck.StatusUnassigned && h.hold == holdCapped {
			sc.limits(tenant, h.shard(), p)
			sc.freedJobs = append(sc.freedJobs, h)
		}
		return true
	})
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
	return !sc.isTouched(j) && !sc.full(j.st.Tenant, j.shard())
}

// freedHead puts into best the first assignable held job of a freed
// tenant at the level, if it comes before best.
func (sc *Schedule) freedHead(level uint32, best *candidate) {
	for _, j := range sc.freedJobs {
		if j.st.Level == level && sc.freedAssignable(j) && best.better(j.rank, &j.st) {
			*best = candidate{st: &j.st, j: j, rank: j.rank}
		}
	}
}
