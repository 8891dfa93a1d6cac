package planner

// SetHold sets a tenant's holds: every level when all is set, and the
// levels of the bit set levels (bit l for level l; levels from 64 on
// cannot be held this way). A key is held while either holds it. A held
// key is left out of planning: [View.Next] never visits it, so polls cost
// nothing per held tenant (unlike [PlanOptions].Skip, which is consulted
// per tenant and level on every call). Its blocks stay queued, are
// claimed, returned, re-queued, dropped and re-batched under SetConfig as
// usual, and count in [Planner.Stats] and [Planner.Tenants]; releasing the
// hold makes its ready batches plannable again, in the same order as if it
// had never been held. Setting the hold a tenant has changes nothing. A
// tenant with no queued block may be held: the hold applies to the blocks
// it receives later. The empty tenant holds the multi-tenant level-0
// segments. The state machine holds the tenants a policy closes, and the
// levels that a tenant's level run windows close.
//
// The holds are derived state: they are not part of snapshots (so
// snapshot bytes do not depend on them) and [Restore] returns a planner
// that holds no tenant. The state machine keeps the policies that hold
// tenants, and calls SetHold again after a restore; a restored planner
// with the same holds plans exactly like the original. Views opened before
// a call keep planning with the holds they were opened with. Holds are not
// checked by [Planner.Admissible] or [Planner.Claim]: a state machine that
// must refuse a held tenant's job in Apply checks its own policy.
//
// The keys whose hold changes are re-indexed once. The cost is O(k log n)
// for a tenant with k keys among n.
func (p *Planner) SetHold(tenant string, all bool, levels uint64) {
	p.s.setHold(hold{tenant: tenant, all: all, levels: levels})
}

// setHold makes h the hold of its tenant, moving the index entries of the
// keys whose hold changes: out while the old hold is in force, back in
// once the new one is.
func (s *state) setHold(h hold) {
	old := s.holdOf(h.tenant)
	if old == h {
		return
	}
	s.eachKey(h.tenant, func(q *queue) {
		if !old.at(q.k.level) && h.at(q.k.level) {
			s.indexHead(q.k, &q.head, false)
		}
	})
	if h.all || h.levels != 0 {
		s.held.Mut(s.vmu).ReplaceOrInsert(h)
	} else if s.held.Has(h) {
		s.held.Mut(s.vmu).Delete(h)
	}
	s.eachKey(h.tenant, func(q *queue) {
		if old.at(q.k.level) && !h.at(q.k.level) {
			s.indexHead(q.k, &q.head, true)
		}
	})
}

// release lifts, in this view only, a hold of every level of a tenant
// (see [PlanOptions].Release).
func (v *View) release(tenant string) {
	h := v.s.holdOf(tenant)
	if !h.all {
		return
	}
	v.read(needKeys)
	h.all = false
	v.s.setHold(h)
	v.matOK = false
}

// Hold returns a tenant's holds (see [Planner.SetHold]): whether it is
// held at every level, and the levels at which it is held level by level
// (bit l for level l).
func (p *Planner) Hold(tenant string) (all bool, levels uint64) {
	h := p.s.holdOf(tenant)
	return h.all, h.levels
}

// eachKey calls fn with each queue of tenant, in key order.
func (s *state) eachKey(tenant string, fn func(*queue)) {
	s.keys.AscendGreaterOrEqual(&queue{k: key{tenant: tenant}}, func(q *queue) bool {
		if q.k.tenant != tenant {
			return false
		}
		fn(q)
		return true
	})
}
