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
	g := th.Next(ps.grades[tenant], st.pressureLoad(l), held)
	if g == policy.OK {
		delete(ps.grades, tenant)
	} else {
		ps.grades[tenant] = g
	}
}

// pressureLoad is the load that backpressure thresholds grade: queued
// blocks and ready batches. Before cluster version 6 the ready-batch
// thresholds were compared with the debt in block-seconds, and still are
// at those versions.
func (st *state) pressureLoad(l planner.Load) policy.Load {
	if st.clusterVersion < policyGradesVersion {
		return policy.Load{Blocks: l.Blocks, ReadyBatches: l.Debt}
	}
	return policy.Load{Blocks: l.Blocks, ReadyBatches: l.ReadyBatches}
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
	g := th.Next(ps.shardGrades[k], st.pressureLoad(l), held)
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

// queueChanges are the tenants and shards whose queues an entry changed,
// each once, in the order they first appear (deterministic).
type queueChanges struct {
	tenants []string
	shards  []tenantShard
	seen    map[tenantShard]bool
	seenT   map[string]bool
}

// add records a change of the queue of the tenant's shard k.
func (qc *queueChanges) add(k tenantShard) {
	if qc.seenT == nil {
		qc.seenT, qc.seen = map[string]bool{}, map[tenantShard]bool{}
	}
	if !qc.seenT[k.tenant] {
		qc.seenT[k.tenant] = true
		qc.tenants = append(qc.tenants, k.tenant)
	}
	if !qc.seen[k] {
		qc.seen[k] = true
		qc.shards = append(qc.shards, k)
	}
}

// addBlocks records a change of the queues of blocks' shards (see
// shardOf).
func (st *state) addBlocks(qc *queueChanges, blocks []ck.BlockMeta) {
	if st.clusterVersion < policyGradesVersion {
		return
	}
	for i := range blocks {
		qc.add(st.shardOf(&blocks[i]))
	}
}

// addJob records a change of the queue of a job's shard: its sources went
// back to the queue, or left it.
func (st *state) addJob(qc *queueChanges, plan *ck.JobPlan) {
	if st.clusterVersion < policyGradesVersion || plan == nil || plan.CleanupOnly() {
		return
	}
	qc.add(tenantShard{tenant: plan.Tenant, shard: plan.Shard})
}

// regradeChanged grades again the backpressure of the tenants and shards
// whose queues an entry changed. From cluster version 6 every change of a
// tenant's queue is graded — retention, marks, requeues, cancellations,
// configuration changes, the outputs a completion queues — where version
// 5 graded only added blocks, a poll's claims, completions, cancellations
// and evictions, and policy changes.
func (st *state) regradeChanged(now int64, qc *queueChanges) {
	if st.clusterVersion < policyGradesVersion || !st.policies.configured() {
		return
	}
	for _, t := range qc.tenants {
		st.regrade(t, now)
	}
	for _, k := range qc.shards {
		st.regradeShard(k.tenant, k.shard, now)
	}
}

// regradeAll grades again, from cluster version 6, every tenant that has
// queued blocks or a grade, and each of their shards: a configuration
// change may batch every queue anew, and the raise to version 6 judges
// every grade under its rules (debt in ready batches).
func (st *state) regradeAll(now int64) {
	if st.clusterVersion < policyGradesVersion || !st.policies.configured() {
		return
	}
	tenants := st.planner.KeyTenants()
	for _, g := range st.policies.gradeList() {
		tenants = append(tenants, g.Tenant)
	}
	for _, g := range st.policies.shardGradeList() {
		tenants = append(tenants, g.Tenant)
	}
	slices.Sort(tenants)
	for _, t := range slices.Compact(tenants) {
		st.regrade(t, now)
		st.regradeShards(t, now)
	}
}

// regradeBlocks grades again, from cluster version 6, the tenants and
// shards of blocks that left or joined the queue.
func (st *state) regradeBlocks(now int64, blocks []ck.BlockMeta) {
	var qc queueChanges
	st.addBlocks(&qc, blocks)
	st.regradeChanged(now, &qc)
}

// regradeIDs is regradeBlocks for the live blocks named.
func (st *state) regradeIDs(now int64, ids []string) {
	if st.clusterVersion < policyGradesVersion || !st.policies.configured() {
		return
	}
	metas := make([]ck.BlockMeta, 0, len(ids))
	iv := st.index.View()
	for _, id := range ids {
		if m, ok := iv.Lookup(id); ok {
			metas = append(metas, m)
		}
	}
	iv.Close()
	st.regradeBlocks(now, metas)
}

// regradeOutputs grades again, from cluster version 6, the shards whose
// queues the outputs of a poll's applied completions joined (a level
// compacted across shards queues them under compactkit.AnyShard).
func (st *state) regradeOutputs(now int64, changes []ck.Change, results []scheduler.Result) {
	if st.clusterVersion < policyGradesVersion || !st.policies.configured() {
		return
	}
	var qc queueChanges
	for i := range results {
		if results[i].Applied && results[i].Kind == ck.ChangeComplete {
			st.addBlocks(&qc, changes[i].Outputs)
		}
	}
	st.regradeChanged(now, &qc)
}

// regradeFollowers grades again, from cluster version 6, every tenant with
// queued blocks that follows the default policy, and its shards: a change
// of the default (its thresholds, or its windows opening or closing) may
// grade them otherwise although their queues did not change. Version 5
// graded again only the tenants whose grade was not OK.
func (st *state) regradeFollowers(now int64) {
	if st.clusterVersion < policyGradesVersion {
		return
	}
	for _, t := range st.planner.KeyTenants() {
		if _, own := st.policies.tenants[t]; !own {
			st.regrade(t, now)
			st.regradeShards(t, now)
		}
	}
}
