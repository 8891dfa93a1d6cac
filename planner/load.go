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
	// Shards lists the shards with queued blocks among those the backlog
	// covers, in order (in the order asked, when asked for shards; the
	// keys of levels compacted across shards are the shard
	// compactkit.AnyShard).
	Shards []uint32
}

// Load returns the backlog of a tenant at log time now (or the planner's
// own time, if later): over its levels and shards, or, with shards, over
// the keys of those shards (the keys of levels compacted across shards
// are the shard compactkit.AnyShard). Its cost is linear in the tenant's
// keys, not in its blocks, and logarithmic in the keys plus the shard's
// levels for one shard: the state machine calls it when a tenant's queue
// changes to grade its backpressure.
func (p *Planner) Load(tenant string, now int64, shards ...uint32) Load {
	clock := max(now, p.s.clock)
	nowSec := clock / int64(time.Second)
	var l Load
	add := func(q *queue) {
		if n := len(l.Shards); n == 0 || l.Shards[n-1] != q.k.shard {
			l.Shards = append(l.Shards, q.k.shard)
		}
		l.Blocks += int64(q.n)
		l.Debt += int64(q.n)*nowSec - q.sumSec
		l.ReadyBatches += int64(p.s.readyBatches(q, clock))
	}
	if len(shards) == 0 {
		p.s.eachKey(tenant, add)
		return l
	}
	for _, shard := range shards {
		p.s.keys.AscendGreaterOrEqual(&queue{k: key{tenant: tenant, shard: shard}}, func(q *queue) bool {
			if q.k.tenant != tenant || q.k.shard != shard {
				return false
			}
			add(q)
			return true
		})
	}
	return l
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
