package raftfsm

import (
	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/policy"
	"github.com/compactkit/compactkit/scheduler"
)

// schedLimits is what the scheduler decides a tenant's jobs with, from its
// policy, whether its new jobs may start now and at which levels they may
// not.
func schedLimits(p *policy.Tenant, open bool, closedLv uint64) *scheduler.Limits {
	return &scheduler.Limits{Rank: uint8(p.Class.Rank()), MaxInProgress: p.MaxInProgress, MaxPerShard: p.MaxInProgressPerShard, Closed: !open, ClosedLevels: closedLv}
}

// follow brings the scheduler and the planner in line with the policies
// of the tenants named (and of every tenant without its own policy, when
// all is set), and, with regrade, grades their backpressure again (a
// restore must not: grades are replicated memory, graded at entries).
//
// Both order tenants by their class's rank (the scheduler its waiting
// jobs, the planner its ready batches); the planner batches each tenant's
// blocks under its level overrides. The scheduler holds the jobs of a
// closed or capped tenant (they leave its assignment indexes, so polls
// never visit them), and the planner holds the keys of a capped tenant,
// of one its policy (its own, or the default) closes, and of the levels
// its level windows close (so polls do not plan jobs that would only
// wait, nor visit them).
func (st *state) follow(now int64, tenants []string, all, regrade bool) {
	ps := st.policies
	if all {
		st.sched.SetDefaultLimits(*schedLimits(&ps.def, ps.defOpen, ps.defClosedLv))
		st.planner.SetDefaultRank(uint8(ps.def.Class.Rank()))
		st.invariant(st.planner.SetDefaultLevels(ps.def.Levels), "default level overrides")
	}
	for _, t := range tenants {
		if p, own := ps.tenants[t]; own {
			st.sched.SetLimits(t, schedLimits(&p, ps.mayStart(t), ps.closedLevels(t)))
			st.planner.SetRank(t, uint8(p.Class.Rank()))
			st.invariant(st.planner.SetLevels(t, p.Levels), "level overrides of "+t)
		} else {
			st.sched.SetLimits(t, nil)
			st.planner.ClearRank(t)
			st.planner.ClearLevels(t)
		}
		st.syncHeld(t)
		if regrade {
			st.regrade(t, now)
			st.regradeShards(t, now)
		}
	}
	if all {
		// The default concerns every tenant without its own policy: those
		// with jobs in progress may be capped or not any more, and those
		// graded may grade otherwise.
		for _, t := range st.sched.BusyTenants() {
			st.syncHeld(t)
		}
		for _, t := range st.planner.HeldTenants() {
			st.syncHeld(t)
		}
		if !ps.defOpen || ps.defClosedLv != 0 {
			// The default closes every tenant without its own policy, or
			// some levels of them: the planner holds those with keys (and
			// the others as their blocks arrive, see holdArrivals).
			for _, t := range st.planner.KeyTenants() {
				st.syncHeld(t)
			}
		}
		if regrade {
			for _, g := range ps.gradeList() {
				st.regrade(g.Tenant, now)
			}
			for _, g := range ps.shardGradeList() {
				st.regradeShard(g.Tenant, g.Shard, now)
			}
			st.regradeFollowers(now)
		}
	}
}

// plannerHold is what the planner holds of a tenant: every level, or the
// levels whose bits are set.
type plannerHold struct {
	all    bool
	levels uint64
}

// syncHeld holds a tenant's keys in the planner while the scheduler says
// it is at its cap of jobs in progress, or while its policy (its own, or
// the default) closes it (a run window or a not-before time), and the keys
// of the levels its level run windows close; it releases them otherwise.
// The planner never visits held keys, so a poll costs nothing per capped
// or closed tenant. Schedule.Held, which planning still asks, passes over
// exactly the same keys: holds change the cost of planning, never its
// outcome.
func (st *state) syncHeld(tenant string) {
	want := plannerHold{all: st.sched.Capped(tenant) || !st.policies.mayStart(tenant), levels: st.policies.closedLevels(tenant)}
	if st.plannerHeld[tenant] == want {
		return
	}
	st.planner.SetHold(tenant, want.all, want.levels)
	if want == (plannerHold{}) {
		delete(st.plannerHeld, tenant)
		return
	}
	if st.plannerHeld == nil {
		st.plannerHeld = make(map[string]plannerHold)
	}
	st.plannerHeld[tenant] = want
}

// holdArrivals holds in the planner the tenants of blocks just queued that
// the default policy closes (at every level or at some) and that are not
// held yet: tenants new to the planner since the default closed. It costs
// a few lookups per run of blocks of one tenant, and nothing while the
// default is open at every level.
func (st *state) holdArrivals(blocks []ck.BlockMeta) {
	if st.policies.defOpen && st.policies.defClosedLv == 0 {
		return
	}
	for i := range blocks {
		if i > 0 && blocks[i-1].Tenant == blocks[i].Tenant {
			continue
		}
		st.syncHeld(blocks[i].Tenant)
	}
}
