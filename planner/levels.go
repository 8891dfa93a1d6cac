package planner

import (
	"fmt"
	"slices"

	"github.com/google/btree"

	"github.com/compactkit/compactkit/policy"
)

// tenantLevels is a tenant's own batching (see Planner.SetLevels): the
// overrides as given, and the level policies they give under the current
// configuration (nil when they change nothing).
type tenantLevels struct {
	tenant string
	over   []policy.Level
	levels []LevelConfig
}

// CheckLevels reports whether level overrides are within the planner's
// bounds: valid (as in [policy.Tenant.Validate]), below [MaxLevels], with at most [MaxBlocksPerJob] blocks. The
// error wraps [ErrInvalidConfig]. A state machine checks a command's
// overrides with it before it applies them; overrides of levels at or
// beyond the final level pass (they have no effect).
func CheckLevels(over []policy.Level) error {
	if err := (policy.Tenant{Levels: over}).Validate(); err != nil {
		return fmt.Errorf("planner: %w: %w", ErrInvalidConfig, err)
	}
	for _, l := range over {
		switch {
		case l.Level >= MaxLevels:
			return fmt.Errorf("planner: level override of level %d, at most %d: %w", l.Level, MaxLevels-1, ErrInvalidConfig)
		case l.MaxBlocks > MaxBlocksPerJob:
			return fmt.Errorf("planner: level %d: max blocks %d, at most %d: %w", l.Level, l.MaxBlocks, MaxBlocksPerJob, ErrInvalidConfig)
		}
	}
	return nil
}

// overridden returns the level policies over gives under cfg, or nil if
// they are cfg's own.
func overridden(cfg *Config, over []policy.Level) []LevelConfig {
	var out []LevelConfig
	for _, o := range over {
		if o.Level >= cfg.FinalLevel {
			break
		}
		lc := cfg.Levels[o.Level]
		if o.MaxBlocks > 0 {
			lc.MaxBlocks = o.MaxBlocks
		}
		if o.MaxBytes > 0 {
			lc.MaxBytes = o.MaxBytes
		}
		if o.MaxAge > 0 {
			lc.MaxAge = o.MaxAge
		}
		lc.CrossShard = o.CrossShard.Apply(lc.CrossShard)
		if lc == cfg.Levels[o.Level] {
			continue
		}
		if out == nil {
			out = slices.Clone(cfg.Levels)
		}
		out[o.Level] = lc
	}
	return out
}

// SetLevels gives a tenant its own batching: the overrides replace, for
// the tenant's blocks, fields of the configured level policies (see
// [policy.Level]; a zero field keeps the configured value). An empty list
// gives the tenant the configured batching even while a default is set
// ([Planner.SetDefaultLevels]). The overrides hold across [Planner.SetConfig]:
// they apply to the new configuration's levels, and those of levels at or
// beyond its final level have no effect.
//
// The tenant's queued blocks are batched again under its new policies:
// its head batches are formed again and re-indexed, as SetConfig does for
// every key. Keys keep their shape: after a CrossShard override changes,
// the blocks queued under the former shape stay in their keys and are
// planned there until drained, while new blocks are queued under the new
// shape.
//
// Like ranks ([Planner.SetRank]) and holds ([Planner.SetHold]), a
// tenant's batching is derived state: it is not part of snapshots, and
// [Restore] returns a planner in which every tenant has the configured
// batching. The state machine keeps the policies and calls SetLevels and
// SetDefaultLevels again after a restore; a restored planner with the
// same overrides plans exactly like the original. Views opened before a
// call keep planning with the batching they were opened with.
//
// Overrides outside [CheckLevels]' bounds are refused (ErrInvalidConfig)
// and nothing changes. The cost is O(k (b + log n)) for a tenant with k
// keys among n, forming batches of b blocks.
func (p *Planner) SetLevels(tenant string, over []policy.Level) error {
	if err := CheckLevels(over); err != nil {
		return err
	}
	if p.s.levels != nil {
		if tl, ok := p.s.levels.Get(tenantLevels{tenant: tenant}); ok && slices.Equal(tl.over, over) {
			return nil // unchanged: nothing to batch again
		}
	}
	p.setLevels(tenant, func() {
		if p.s.levels == nil {
			p.s.levels = btree.NewG(btreeDegree, func(a, b tenantLevels) bool { return a.tenant < b.tenant })
		}
		over = slices.Clone(over)
		tl := tenantLevels{tenant: tenant, over: over, levels: overridden(&p.s.cfg, over)}
		if old, had := p.s.levels.ReplaceOrInsert(tl); had && old.levels != nil {
			p.s.ownLevels--
		}
		if tl.levels != nil {
			p.s.ownLevels++
		}
	})
	return nil
}

// ClearLevels takes a tenant's own batching away (see [Planner.SetLevels]):
// it follows the default again ([Planner.SetDefaultLevels]). Clearing a
// tenant without its own batching changes nothing.
func (p *Planner) ClearLevels(tenant string) {
	if p.s.levels == nil || !p.s.levels.Has(tenantLevels{tenant: tenant}) {
		return
	}
	p.setLevels(tenant, func() {
		if old, _ := p.s.levels.Delete(tenantLevels{tenant: tenant}); old.levels != nil {
			p.s.ownLevels--
		}
	})
}

// SetDefaultLevels sets the batching of the tenants without their own
// (see [Planner.SetLevels]); a new or restored planner has none: those
// tenants have the configured batching. The blocks of every such tenant
// are batched again: the cost is O(n (b + log n)) for n keys.
func (p *Planner) SetDefaultLevels(over []policy.Level) error {
	if err := CheckLevels(over); err != nil {
		return err
	}
	if slices.Equal(p.s.defOver, over) {
		return nil // unchanged: nothing to batch again
	}
	own := func(tenant string) bool { return p.s.levels != nil && p.s.levels.Has(tenantLevels{tenant: tenant}) }
	var qs []*queue
	p.s.keys.Ascend(func(q *queue) bool {
		if !own(q.k.tenant) {
			qs = append(qs, q)
		}
		return true
	})
	for _, q := range qs {
		p.s.indexHead(q.k, &q.head, false)
	}
	p.s.defOver = slices.Clone(over)
	p.s.defLevels = overridden(&p.s.cfg, over)
	p.rebatch(qs)
	return nil
}

// Levels returns a tenant's own level overrides and whether it has its
// own (see [Planner.SetLevels]).
func (p *Planner) Levels(tenant string) ([]policy.Level, bool) {
	if p.s.levels == nil {
		return nil, false
	}
	tl, ok := p.s.levels.Get(tenantLevels{tenant: tenant})
	return slices.Clone(tl.over), ok
}

// DefaultLevels returns the level overrides of the tenants without their
// own (see [Planner.SetDefaultLevels]).
func (p *Planner) DefaultLevels() []policy.Level { return slices.Clone(p.s.defOver) }

// LevelConfig returns the level policy the tenant's blocks of a level
// below the final level are batched under: the configured one, or the
// one its overrides give.
func (p *Planner) LevelConfig(tenant string, level uint32) (LevelConfig, bool) {
	if level >= p.s.cfg.FinalLevel {
		return LevelConfig{}, false
	}
	return *p.s.levelOf(tenant, level), true
}

// setLevels changes a tenant's batching with change and batches its keys
// again: their index entries are removed under the former policies and
// added under the new ones.
func (p *Planner) setLevels(tenant string, change func()) {
	var qs []*queue
	p.s.eachKey(tenant, func(q *queue) {
		p.s.indexHead(q.k, &q.head, false)
		qs = append(qs, q)
	})
	change()
	p.rebatch(qs)
}

// rebatch forms the head batches of queues again, under their tenants'
// current policies, and indexes them; their former entries are removed.
func (p *Planner) rebatch(qs []*queue) {
	for _, q := range qs {
		q = p.own(q)
		q.head = formBatch(q, 0, p.s.levelOf(q.k.tenant, q.k.level))
		p.s.indexHead(q.k, &q.head, true)
	}
}

// reconfigureLevels recomputes every tenant's level policies under the
// current configuration (SetConfig calls it).
func (s *state) reconfigureLevels() {
	s.defLevels = overridden(&s.cfg, s.defOver)
	if s.levels == nil || s.levels.Len() == 0 {
		return
	}
	var all []tenantLevels
	s.levels.Ascend(func(tl tenantLevels) bool {
		all = append(all, tl)
		return true
	})
	s.ownLevels = 0
	for _, tl := range all {
		tl.levels = overridden(&s.cfg, tl.over)
		s.levels.ReplaceOrInsert(tl)
		if tl.levels != nil {
			s.ownLevels++
		}
	}
}

// levelOf returns the level policy of a tenant's blocks of level l (below
// the final level): its own overrides', the default overrides', or the
// configured one.
func (s *state) levelOf(tenant string, l uint32) *LevelConfig {
	if s.ownLevels == 0 && s.defLevels == nil {
		return &s.cfg.Levels[l] // no tenant's batching differs
	}
	if s.levels != nil && s.levels.Len() > 0 {
		if tl, ok := s.levels.Get(tenantLevels{tenant: tenant}); ok {
			if tl.levels != nil {
				return &tl.levels[l]
			}
			return &s.cfg.Levels[l]
		}
	}
	if s.defLevels != nil {
		return &s.defLevels[l]
	}
	return &s.cfg.Levels[l]
}
