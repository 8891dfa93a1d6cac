package planner

// tenantRank is a tenant's own rank (see Terms).
type tenantRank struct {
	tenant string
	rank   uint8
}

// setRank gives a tenant its own rank (see [Terms]).
func (p *Planner) setRank(tenant string, rank uint8) {
	old := p.s.rankOf(tenant)
	if old != rank {
		p.s.eachKey(tenant, func(q *queue) { p.s.indexHeadRank(q.k, &q.head, old, false) })
	}
	p.s.ranks.Mut(p.s.vmu).ReplaceOrInsert(tenantRank{tenant: tenant, rank: rank})
	if old != rank {
		p.s.eachKey(tenant, func(q *queue) { p.s.indexHeadRank(q.k, &q.head, rank, true) })
	}
}

// clearRank takes a tenant's own rank away: it has the default rank
// again. Clearing a tenant without its own rank changes nothing.
func (p *Planner) clearRank(tenant string) {
	tr, ok := p.s.ranks.Get(tenantRank{tenant: tenant})
	if !ok {
		return
	}
	if tr.rank != p.s.defRank {
		p.s.eachKey(tenant, func(q *queue) { p.s.indexHeadRank(q.k, &q.head, tr.rank, false) })
	}
	p.s.ranks.Mut(p.s.vmu).Delete(tr)
	if tr.rank != p.s.defRank {
		p.s.eachKey(tenant, func(q *queue) { p.s.indexHeadRank(q.k, &q.head, p.s.defRank, true) })
	}
}

// setDefaultRank sets the rank of the tenants without their own.
func (p *Planner) setDefaultRank(rank uint8) {
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
