package planner

// tenantRank is a tenant's own rank (see Planner.SetRank).
type tenantRank struct {
	tenant string
	rank   uint8
}

// SetRank gives a tenant its own rank: within a competing level, [View.Next]
// plans the ready batches of lower ranks first (rank 0 is served first),
// and the fairness rotation takes turns among the tenants of one rank. It
// is how the state machine installs priority classes (High = 0, Medium = 1,
// Low = 2, say). Aging lifts the rank too: a batch ready for longer than
// its level's AgingThreshold competes at level 0 and at rank 0 whatever
// its tenant's rank — a level-0 batch of a rank above 0 as well, which
// stays at level 0 — so a tenant of a high rank still progresses: its
// ready batches wait at most their level's aging threshold for the turn
// of lower ranks, and then their turn in the fairness rotation among the
// rank-0 batches of level 0: with one job planned per poll, at most one
// poll per other tenant with such batches ahead of it in the rotation.
// Where aging is disabled (a threshold of 0), batches wait while lower
// ranks have ready batches at their level.
//
// Ranks are derived state, like the held set ([Planner.SetHold]): they are
// not part of snapshots and [Restore] returns a planner in which every
// tenant has rank 0. The state machine keeps the policies that rank
// tenants and calls SetRank and [Planner.SetDefaultRank] again after a
// restore; a restored planner with the same ranks plans exactly like the
// original. Views opened before a call keep planning with the ranks they
// were opened with. A tenant with no queued block may be ranked: its rank
// applies to the blocks it receives later. The empty tenant ranks the
// multi-tenant level-0 segments.
//
// The cost is O(k log n) for a tenant with k keys among n when its rank
// changes, and O(log t) among t ranked tenants otherwise.
func (p *Planner) SetRank(tenant string, rank uint8) {
	old := p.s.rankOf(tenant)
	if old != rank {
		p.s.eachKey(tenant, func(q *queue) { p.s.indexHeadRank(q.k, &q.head, old, false) })
	}
	p.s.ranks.w(p.s.vmu).ReplaceOrInsert(tenantRank{tenant: tenant, rank: rank})
	if old != rank {
		p.s.eachKey(tenant, func(q *queue) { p.s.indexHeadRank(q.k, &q.head, rank, true) })
	}
}

// ClearRank takes a tenant's own rank away (see [Planner.SetRank]): it has
// the default rank again ([Planner.SetDefaultRank]). Clearing a tenant
// without its own rank changes nothing. The cost is that of SetRank.
func (p *Planner) ClearRank(tenant string) {
	tr, ok := p.s.ranks.Get(tenantRank{tenant: tenant})
	if !ok {
		return
	}
	if tr.rank != p.s.defRank {
		p.s.eachKey(tenant, func(q *queue) { p.s.indexHeadRank(q.k, &q.head, tr.rank, false) })
	}
	p.s.ranks.w(p.s.vmu).Delete(tr)
	if tr.rank != p.s.defRank {
		p.s.eachKey(tenant, func(q *queue) { p.s.indexHeadRank(q.k, &q.head, p.s.defRank, true) })
	}
}

// SetDefaultRank sets the rank of the tenants without their own rank (see
// [Planner.SetRank]); it is 0 in a new or restored planner. Like SetRank it
// is derived state, not part of snapshots, and views keep the ranks they
// were opened with.
//
// When the default changes, every key of the tenants without their own
// rank is re-indexed: the cost is O(n log n) for n keys.
func (p *Planner) SetDefaultRank(rank uint8) {
	old := p.s.defRank
	if old == rank {
		return
	}
	own := func(tenant string) bool { return p.s.ranks.Has(tenantRank{tenant: tenant}) }
	p.s.keys.Ascend(func(q *queue) bool {
		if !own(q.k.tenant) {
			p.s.indexHeadRank(q.k, &q.head, old, false)
			p.s.indexHeadRank(q.k, &q.head, rank, true)
		}
		return true
	})
	p.s.defRank = rank
}

// Rank returns a tenant's rank: its own (see [Planner.SetRank]) or the
// default one ([Planner.SetDefaultRank]).
func (p *Planner) Rank(tenant string) uint8 { return p.s.rankOf(tenant) }

// DefaultRank returns the rank of the tenants without their own rank (see
// [Planner.SetDefaultRank]).
func (p *Planner) DefaultRank() uint8 { return p.s.defRank }

// rankOf returns a tenant's rank.
func (s *state) rankOf(tenant string) uint8 {
	if s.ranks.Len() == 0 {
		return s.defRank
	}
	if tr, ok := s.ranks.Get(tenantRank{tenant: tenant}); ok {
		return tr.rank
	}
	return s.defRank
}
