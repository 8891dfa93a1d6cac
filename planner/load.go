package planner

import "time"

// Load is a tenant's backlog: its queued blocks and their compaction debt
// (the sum of the time they have waited, in block-seconds, as
// [LevelStats.Debt]).
type Load struct {
	Blocks int64
	Debt   int64
}

// TenantLoad returns the backlog of one tenant, over its levels and
// shards, at log time now (or the planner's own time, if later). Its cost
// is linear in the tenant's keys, not in its blocks: the state machine
// calls it when a tenant's queue changes to grade its backpressure.
func (p *Planner) TenantLoad(tenant string, now int64) Load {
	nowSec := max(now, p.s.clock) / int64(time.Second)
	var l Load
	p.s.eachKey(tenant, func(q *queue) {
		l.Blocks += int64(q.n)
		l.Debt += int64(q.n)*nowSec - q.sumSec
	})
	return l
}

// Queued reports whether a block that arrived at or before log time
// before is queued for the tenant (every tenant when allTenants is set)
// at the level (every level when allLevels is set). Its cost is linear in
// the keys it looks at: the tenant's, or every key.
func (p *Planner) Queued(tenant string, allTenants bool, level uint32, allLevels bool, before int64) bool {
	found := false
	visit := func(q *queue) bool {
		if !allTenants && q.k.tenant != tenant {
			return false
		}
		if q.n > 0 && (allLevels || q.k.level == level) && q.first().time <= before {
			found = true
			return false
		}
		return true
	}
	if allTenants {
		p.s.keys.Ascend(visit)
	} else {
		p.s.keys.AscendGreaterOrEqual(&queue{k: key{tenant: tenant}}, visit)
	}
	return found
}
