package planner

import "github.com/compactkit/compactkit/policy"

// Terms are what the planner plans a tenant's jobs with, besides the
// configuration and the holds ([Planner.SetHold]): its rank and its
// batching. The state machine derives them from the tenant's policy.
//
// A tenant has terms of its own ([Planner.SetTerms]) or the default ones
// ([Planner.SetDefaultTerms]). Terms are derived state: they are not part
// of snapshots, and [Restore] returns a planner in which every tenant has
// rank 0 and the configured batching. The state machine keeps the
// policies they come from and sets them again after a restore; a restored
// planner with the same terms plans exactly like the original. Views
// opened before a change keep planning with the terms they were opened
// with. A tenant with no queued block may have terms: they apply to the
// blocks it receives later. The empty tenant's terms are those of the
// multi-tenant level-0 segments.
type Terms struct {
	// Rank orders the tenants within a competing level: [View.Next] plans
	// the ready batches of lower ranks first (rank 0 is served first), and
	// the fairness rotation takes turns among the tenants of one rank. It
	// is how the state machine installs priority classes (High = 0,
	// Medium = 1, Low = 2, say). Aging lifts the rank too: a batch ready
	// for longer than its level's AgingThreshold competes at level 0 and
	// at rank 0 whatever its tenant's rank — a level-0 batch of a rank
	// above 0 as well, which stays at level 0 — so a tenant of a high rank
	// still progresses: its ready batches wait at most their level's aging
	// threshold for the turn of lower ranks, and then their turn in the
	// fairness rotation among the rank-0 batches of level 0: with one job
	// planned per poll, at most one poll per other tenant with such
	// batches ahead of it in the rotation. Where aging is disabled (a
	// threshold of 0), batches wait while lower ranks have ready batches
	// at their level.
	Rank uint8
	// Levels override, for the tenant's blocks, fields of the configured
	// level policies (see [policy.Level]; a zero field keeps the
	// configured value), within [CheckLevels]' bounds. Empty, the tenant
	// has the configured batching. The overrides hold across
	// [Planner.SetConfig]: they apply to the new configuration's levels,
	// and those of levels at or beyond its final level have no effect.
	//
	// When a tenant's batching changes, its queued blocks are batched
	// again: its head batches are formed again and re-indexed, as
	// SetConfig does for every key. Keys keep their shape: after a
	// CrossShard override changes, the blocks queued under the former
	// shape stay in their keys and are planned there until drained, while
	// new blocks are queued under the new shape.
	Levels []policy.Level
}

// SetTerms gives a tenant terms of its own (see [Terms]), or, with nil,
// the default terms again. Setting the terms a tenant has changes nothing.
// Level overrides outside [CheckLevels]' bounds are refused (an error
// wrapping [ErrInvalidConfig]) and nothing changes.
//
// The cost is O(k log n) for a tenant with k keys among n when its rank
// changes, O(k (b + log n)) forming batches of b blocks when its batching
// changes, and O(log t) among t tenants with terms of their own otherwise.
func (p *Planner) SetTerms(tenant string, t *Terms) error {
	if t == nil {
		p.clearRank(tenant)
		p.clearLevels(tenant)
		return nil
	}
	if err := CheckLevels(t.Levels); err != nil {
		return err
	}
	p.setRank(tenant, t.Rank)
	p.setOwnLevels(tenant, t.Levels)
	return nil
}

// SetDefaultTerms sets the terms of the tenants without their own (see
// [Terms]); a new or restored planner's are rank 0 and the configured
// batching. Level overrides outside [CheckLevels]' bounds are refused (an
// error wrapping [ErrInvalidConfig]) and nothing changes.
//
// When the default changes, every key of the tenants without their own
// terms is indexed again (and batched again, when the batching changes):
// the cost is O(n (b + log n)) for n keys.
func (p *Planner) SetDefaultTerms(t Terms) error {
	if err := CheckLevels(t.Levels); err != nil {
		return err
	}
	p.setDefaultRank(t.Rank)
	p.setDefaultLevels(t.Levels)
	return nil
}
