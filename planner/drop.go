package planner

import (
	"slices"

	ck "github.com/compactkit/compactkit"
)

// Drop removes blocks that retention dropped from the index: from the
// queue and from the quarantine. Retention is decided by the index, which
// owns the blocks' metadata: the state machine passes the blocks that
// index.DropBefore returned (a tenant's blocks older than t), in the same
// entry. It returns the sorted, distinct names of
// the jobs that claim any of them; the state machine cancels those jobs and
// returns their sources that are still live ([Planner.Return]). Blocks at
// or beyond the final level are ignored (the planner never holds them);
// others found nowhere are counted as missed removals.
//
// The cost is linear in the queue length of each key concerned (there is
// no per-block ID map), which suits retention: rare, and by tenant.
func (p *Planner) Drop(blocks []ck.BlockMeta) (claimedBy []string) {
	type want struct {
		id    string
		found bool
	}
	wanted := make(map[string]*want)
	perKey := make(map[key]map[string]*want)
	var keys []key
	addKey := func(k key, w *want) {
		m := perKey[k]
		if m == nil {
			m = make(map[string]*want)
			perKey[k] = m
			keys = append(keys, k)
		}
		m[w.id] = w
	}
	for i := range blocks {
		b := &blocks[i]
		if b.Level >= p.s.cfg.FinalLevel {
			continue
		}
		if _, dup := wanted[b.ID]; dup {
			continue
		}
		w := &want{id: b.ID}
		wanted[b.ID] = w
		if qe, ok := p.s.quar.Get(&quarEnt{it: item{id: b.ID}}); ok {
			p.s.quar.Mut(p.s.vmu).Delete(qe)
			p.s.counters.Dropped++
			w.found = true
			continue
		}
		addKey(key{tenant: b.Tenant, shard: b.Shard, level: b.Level}, w)
		if b.Shard != ck.AnyShard {
			addKey(key{tenant: b.Tenant, shard: ck.AnyShard, level: b.Level}, w)
		}
	}
	slices.SortFunc(keys, key.compare)
	var jobs []string
	for _, k := range keys {
		ids := make(map[string]struct{})
		for id, w := range perKey[k] {
			if !w.found {
				ids[id] = struct{}{}
			}
		}
		if len(ids) == 0 {
			continue
		}
		if q := p.lookup(k); q != nil {
			q = p.own(q)
			old := q.head
			removed := q.remove(ids)
			for _, it := range removed {
				wanted[it.id].found = true
				delete(ids, it.id)
			}
			p.s.counters.Dropped += uint64(len(removed))
			p.refresh(q, old)
		}
		if len(ids) == 0 {
			continue
		}
		p.s.eachClaimOf(k, func(c *claim) bool {
			hit := false
			for _, it := range c.items {
				if _, ok := ids[it.id]; ok {
					wanted[it.id].found = true
					hit = true
				}
			}
			if hit {
				jobs = append(jobs, c.name.String())
			}
			return true
		})
	}
	for _, w := range wanted {
		if !w.found {
			p.s.counters.MissedRemovals++
		}
	}
	slices.Sort(jobs)
	return slices.Compact(jobs)
}
