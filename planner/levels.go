package planner

import (
	"fmt"
	"slices"

	"github.com/compactkit/compactkit/policy"
)

// tenantLevels is a tenant's own batching (see Terms): the
// overrides as given, and the level policies they give under the current
// configuration (nil when they change nothing).
type tenantLevels struct {
	tenant string
	over   []policy.Level
	levels []LevelConfig
}

// CheckLevels reports whether level overrides are within the planner's
// bounds: valid (as in [policy.Tenant.Validate]), below 64, with at most 4096 blocks. The
// error wraps [ErrInvalidConfig]. A state machine checks a command's
// overrides with it before it applies them; overrides of levels at or
// beyond the final level pass (they have no effect).
func CheckLevels(over []policy.Level) error {
	if err := (policy.Tenant{Levels: over}).Validate(); err != nil {
		return fmt.Errorf("planner: %w: %w", ErrInvalidConfig, err)
	}
	for _, l := range over {
		switch {
		case l.Level >= maxLevels:
			return fmt.Errorf("planner: level override of level %d, at most %d: %w", l.Level, maxLevels-1, ErrInvalidConfig)
		case l.MaxBlocks > maxBlocksPerJob:
			return fmt.Errorf("planner: level %d: max blocks %d, at most %d: %w", l.Level, l.MaxBlocks, maxBlocksPerJob, ErrInvalidConfig)
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

// setOwnLevels gives a tenant its own batching (see [Terms]); the
// caller checked the overrides.
func (p *Planner) setOwnLevels(tenant string, over []policy.Level) {
	if tl, ok := p.s.levels.Get(tenantLevels{tenant: tenant}); ok && slices.Equal(tl.over, over) {
		return // unchanged: nothing to batch again
	}
	p.rebatchTenant(tenant, func() {
		over = slices.Clone(over)
		tl := tenantLevels{tenant: tenant, over: over, levels: overridden(&p.s.cfg, over)}
		if old, had := p.s.levels.Mut(p.s.vmu).ReplaceOrInsert(tl); had && old.levels != nil {
			p.s.ownLevels--
		}
		if tl.levels != nil {
			p.s.ownLevels++
		}
	})
}

// clearLevels takes a tenant's own batching away: it follows the
// default again. Clearing a tenant without its own batching changes
// nothing.
func (p *Planner) clearLevels(tenant string) {
	if !p.s.levels.Has(tenantLevels{tenant: tenant}) {
		return
	}
	p.rebatchTenant(tenant, func() {
		if old, _ := p.s.levels.Mut(p.s.vmu).Delete(tenantLevels{tenant: tenant}); old.levels != nil {
			p.s.ownLevels--
		}
	})
}

// setDefaultLevels sets the batching of the tenants without their own;
// the caller checked the overrides. The blocks of every such tenant are
// batched again.
func (p *Planner) setDefaultLevels(over []policy.Level) {
	if slices.Equal(p.s.defOver, over) {
		return // unchanged: nothing to batch again
	}
	own := func(tenant string) bool { return p.s.levels.Has(tenantLevels{tenant: tenant}) }
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
}

// LevelConfig returns the level policy the tenant's blocks of a level
// below the final level are batched under: the configured one, or the
// one its overrides give.
func (p *Planner) LevelConfig(tenant string, level uint32) (LevelConfig, bool) {
	if level >= p.s.cfg.FinalLevel {
		return LevelConfig{}, false
	}
	return *p.s.levelOf(tenant, level), true
}

// rebatchTenant changes a tenant's batching with change and batches its keys
// again: their index entries are removed under the former policies and
// added under the new ones.
func (p *Planner) rebatchTenant(tenant string, change func()) {
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
	if s.levels.Len() == 0 {
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
		s.levels.Mut(s.vmu).ReplaceOrInsert(tl)
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
	if s.levels.Len() > 0 {
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
