package planner

import (
	"fmt"
	"slices"

	"github.com/compactkit/compactkit/internal/ident"

	ck "github.com/compactkit/compactkit"
)

// Mark takes queued blocks out of compaction at an operator's request ("do
// not compact"): each is quarantined, at the entry's time, with the reason
// (clipped to 1024 bytes) and no job, and stays there, listed by
// [Planner.Quarantined], until an operator re-queues it ([Planner.Requeue])
// or retention drops it. It returns the number of blocks marked; blocks
// already quarantined, marked or not, are left as they are, so marking
// again changes nothing.
//
// blocks carry the metadata the index holds: the planner keeps no
// per-block map and finds each block under its key, as [Planner.Drop]
// does (the cost is linear in the queue length of each key concerned).
//
// Nothing changes, and the error says why, when a block is claimed by a
// job (the error names the job: cancel it or let it end first), lies at or
// beyond the final level (never compacted, nothing to mark), or is held
// nowhere (compactkit.ErrInvalid), or when an entry or ID is
// malformed.
func (p *Planner) Mark(e ck.Entry, blocks []ck.BlockMeta, reason string) (int, error) {
	if err := e.Validate(); err != nil {
		return 0, fmt.Errorf("planner: mark: %w", err)
	}
	wanted := map[string]bool{} // ID: found queued
	var order []string          // the IDs to mark, in the order given
	perKey := map[key]map[string]struct{}{}
	var keys []key
	for i := range blocks {
		b := &blocks[i]
		if err := ident.ValidateID(b.ID); err != nil {
			return 0, fmt.Errorf("planner: mark: %w", err)
		}
		if b.Level >= p.s.cfg.FinalLevel {
			return 0, fmt.Errorf("planner: mark %s: level %d is at or beyond the final level %d, never compacted: %w",
				b.ID, b.Level, p.s.cfg.FinalLevel, errFinalLevel)
		}
		if _, dup := wanted[b.ID]; dup || p.s.quar.Has(&quarEnt{it: item{id: b.ID}}) {
			continue
		}
		wanted[b.ID] = false
		order = append(order, b.ID)
		// The block's key: its own shard, or the cross-shard key of its
		// level (under whichever shape it was queued).
		for _, k := range []key{{tenant: b.Tenant, shard: b.Shard, level: b.Level}, {tenant: b.Tenant, shard: ck.AnyShard, level: b.Level}} {
			if perKey[k] == nil {
				perKey[k] = map[string]struct{}{}
				keys = append(keys, k)
			}
			perKey[k][b.ID] = struct{}{}
		}
	}
	slices.SortFunc(keys, key.compare)

	// Find every block before changing anything.
	for _, k := range keys {
		ids := perKey[k]
		if q := p.lookup(k); q != nil {
			q.visit(0, func(items []item) bool {
				for i := range items {
					if _, ok := ids[items[i].id]; ok {
						wanted[items[i].id] = true
					}
				}
				return true
			})
		}
		var err error
		p.s.eachClaimOf(k, func(c *claim) bool {
			for _, it := range c.items {
				if _, ok := ids[it.id]; ok {
					err = fmt.Errorf("planner: mark %s: %w by job %s", it.id, errClaimed, c.name)
					return false
				}
			}
			return true
		})
		if err != nil {
			return 0, err
		}
	}
	for _, id := range order {
		if !wanted[id] {
			return 0, fmt.Errorf("planner: mark %s: not queued, claimed or quarantined: %w", id, ident.ErrInconsistent)
		}
	}

	p.tick(e.Time)
	reason = ident.ClipReason(reason)
	for _, k := range keys {
		q := p.lookup(k)
		if q == nil {
			continue
		}
		ids := map[string]struct{}{}
		for id := range perKey[k] {
			if wanted[id] {
				ids[id] = struct{}{}
			}
		}
		if len(ids) == 0 {
			continue
		}
		q = p.own(q)
		old := q.head
		removed := q.remove(ids)
		p.refresh(q, old)
		for _, it := range removed {
			p.s.quar.Mut(p.s.vmu).ReplaceOrInsert(&quarEnt{it: it, k: k, reason: reason, since: p.s.clock})
			wanted[it.id] = false // found under one key only
		}
		p.s.counters.QuarantinedBlocks += uint64(len(removed))
	}
	return len(order), nil
}
