package raftfsm

import (
	"slices"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/planner"
	"github.com/compactkit/compactkit/policy"
	"github.com/compactkit/compactkit/scheduler"
)

// applyPolicy applies a policy command: the policy state changes, then
// the components follow (see sync).
func (st *state) applyPolicy(e ck.Entry, now int64, p *PolicyCommand, res *Result) error {
	ps := st.policies
	switch p.Action {
	case PolicySet:
		if p.All {
			ps.def = p.Policy.Clone() // the command's slices are not ours
		} else if err := ps.set(p.Tenant, *p.Policy); err != nil {
			return err
		}
		res.Count = 1
	case PolicyClear:
		if p.All {
			if !ps.def.Equal(policy.Tenant{}) {
				ps.def = policy.Tenant{}
				res.Count = 1
			}
		} else if ps.clear(p.Tenant) {
			res.Count = 1
		}
	case PolicyCompactNow:
		c := planner.Force{Tenant: p.Tenant, AllTenants: p.All, AllLevels: p.Level == nil, Before: now}
		if p.Level != nil {
			c.Level = *p.Level
		}
		if err := ps.addCompact(c); err != nil {
			return err
		}
		res.Count = 1
		return nil
	}
	// Judge the windows again and bring the components in line: the
	// default concerns every tenant without its own policy.
	changed, all := ps.judge(now)
	if p.All {
		all = true
	} else {
		changed = append(changed, p.Tenant)
	}
	st.follow(now, changed, all, true)
	return nil
}

// rejudge judges the run windows and not-before times at log time now and
// brings the components in line with what changed.
func (st *state) rejudge(now int64) {
	changed, all := st.policies.judge(now)
	st.follow(now, changed, all, true)
}

// installPolicies brings fresh components (new or restored) in line with
// the policy state, judged at the state's time.
func (st *state) installPolicies() {
	st.policies.judge(st.now)
	st.follow(st.now, st.policies.names, true, false)
}

// regrade grades the backpressure of a tenant at log time now, from its
// queue and its previous grade, and records it.
func (st *state) regrade(tenant string, now int64) {
	ps := st.policies
	th := ps.of(tenant).Pressure
	if th == (policy.Thresholds{}) {
		delete(ps.grades, tenant)
		return
	}
	l := st.planner.TenantLoad(tenant, now)
	held := !ps.mayStart(tenant) || ps.closedLevels(tenant) != 0 // a window, not the workers, holds work back
	g := th.Next(ps.grades[tenant], policy.Load{Blocks: l.Blocks, Debt: l.Debt}, held)
	if g == policy.OK {
		delete(ps.grades, tenant)
	} else {
		ps.grades[tenant] = g
	}
}

// regradeShard grades the backpressure of a shard of a tenant at log time
// now, from that shard's queue and its previous grade, and records it.
func (st *state) regradeShard(tenant string, shard uint32, now int64) {
	ps := st.policies
	k := tenantShard{tenant: tenant, shard: shard}
	th := ps.of(tenant).ShardPressure
	if th == (policy.Thresholds{}) {
		delete(ps.shardGrades, k)
		return
	}
	l := st.planner.ShardLoad(tenant, shard, now)
	held := !ps.mayStart(tenant) || ps.closedLevels(tenant) != 0
	g := th.Next(ps.shardGrades[k], policy.Load{Blocks: l.Blocks, Debt: l.Debt}, held)
	if g == policy.OK {
		delete(ps.shardGrades, k)
	} else {
		ps.shardGrades[k] = g
	}
}

// regradeShards grades every shard of a tenant again: those with queued
// blocks and those graded (whose queue may be empty now).
func (st *state) regradeShards(tenant string, now int64) {
	shards := st.planner.Shards(tenant)
	for _, s := range st.policies.shardsGraded(tenant) {
		if _, found := slices.BinarySearch(shards, s); !found {
			shards = append(shards, s)
		}
	}
	if st.policies.of(tenant).ShardPressure == (policy.Thresholds{}) {
		shards = st.policies.shardsGraded(tenant) // only to clear them
	}
	for _, s := range shards {
		st.regradeShard(tenant, s, now)
	}
}

// afterPoll brings the policy state in line with what a poll's applied
// changes did: the backpressure of the tenants whose queues changed
// (claims, completions, cancellations, evictions) is graded again, and the
// compact-now requests whose blocks are all planned end.
func (st *state) afterPoll(now int64, results []scheduler.Result) {
	ps := st.policies
	if !ps.configured() {
		return
	}
	var tenants []string
	var shards []tenantShard
	claimed := false
	for i := range results {
		r := &results[i]
		if !r.Applied || r.Plan == nil || r.Plan.CleanupOnly() {
			continue
		}
		switch r.Kind {
		case ck.ChangeAdd, ck.ChangeComplete, ck.ChangeCancel, ck.ChangeEvict:
			claimed = claimed || r.Kind == ck.ChangeAdd
			if !slices.Contains(tenants, r.Plan.Tenant) {
				tenants = append(tenants, r.Plan.Tenant)
			}
			if k := (tenantShard{tenant: r.Plan.Tenant, shard: r.Plan.Shard}); !slices.Contains(shards, k) {
				shards = append(shards, k)
			}
		}
	}
	for _, t := range tenants {
		st.regrade(t, now)
	}
	for _, k := range shards {
		st.regradeShard(k.tenant, k.shard, now)
	}
	if claimed && len(ps.compact) > 0 {
		ps.compact = slices.DeleteFunc(ps.compact, func(c planner.Force) bool {
			return !st.planner.Queued(c)
		})
	}
}
