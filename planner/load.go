package planner

import "time"

// Load is a tenant's backlog: its queued blocks, their compaction debt
// (the sum of the time they have waited, in block-seconds, as
// [LevelStats.Debt]) and its ready batches (the jobs that could be planned
// now, as [LevelStats.ReadyBatches]).
type Load struct {
	Blocks       int64
	Debt         int64
	ReadyBatches int64
}

// TenantLoad returns the backlog of one tenant, over its levels and
// shards, at log time now (or the planner's own time, if later). Its cost
// is linear in the tenant's keys, not in its blocks: the state machine
// calls it when a tenant's queue changes to grade its backpressure.
func (p *Planner) TenantLoad(tenant string, now int64) Load {
	clock := max(now, p.s.clock)
	nowSec := clock / int64(time.Second)
	var l Load
	p.s.eachKey(tenant, func(q *queue) {
		l.Blocks += int64(q.n)
		l.Debt += int64(q.n)*nowSec - q.sumSec
		l.ReadyBatches += int64(p.s.readyBatches(q, clock))
	})
	return l
}

// ShardLoad returns the backlog of one shard of a tenant, over its
// levels, at log time now (or the planner's own time, if later): the keys
// of that shard (the keys of levels compacted across shards are the shard
// compactkit.AnyShard). Its cost is logarithmic in the keys plus the
// shard's levels.
func (p *Planner) ShardLoad(tenant string, shard uint32, now int64) Load {
	clock := max(now, p.s.clock)
	nowSec := clock / int64(time.Second)
	var l Load
	p.s.keys.AscendGreaterOrEqual(&queue{k: key{tenant: tenant, shard: shard}}, func(q *queue) bool {
		if q.k.tenant != tenant || q.k.shard != shard {
			return false
		}
		l.Blocks += int64(q.n)
		l.Debt += int64(q.n)*nowSec - q.sumSec
		l.ReadyBatches += int64(p.s.readyBatches(q, clock))
		return true
	})
	return l
}

// Shards returns the shards of a tenant with queued blocks, in order (the
// keys of levels compacted across shards are the shard
// compactkit.AnyShard). Its cost is linear in the tenant's keys.
func (p *Planner) Shards(tenant string) []uint32 {
	var out []uint32
	p.s.eachKey(tenant, func(q *queue) {
		if n := len(out); n == 0 || out[n-1] != q.k.shard {
			out = append(out, q.k.shard)
		}
	})
	return out
}

// Queued reports whether a block that arrived at or before log time
// f.Before is queued under f's scope: the tenant (every tenant with
// AllTenants) at the level (every level with AllLevels). Its cost is
// linear in the keys it looks at: the tenant's, or every key.
func (p *Planner) Queued(f Force) bool {
	tenant, allTenants, level, allLevels, before := f.Tenant, f.AllTenants, f.Level, f.AllLevels, f.Before
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
