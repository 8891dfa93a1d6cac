package planner

import (
	"fmt"
	"math"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/internal/ident"
)

// Enqueue queues block b, which arrived in entry e, under its compaction
// key: (tenant, shard, level), with the empty tenant for a multi-tenant
// level-0 segment and [compactkit.AnyShard] for a level compacted across
// shards. A block whose shard is AnyShard — the output of a cross-shard
// job — is queued under its tenant's cross-shard key at its level, whether
// or not that level is compacted across shards. It returns false, and
// changes nothing, for a block at or beyond the final level. A malformed
// block or entry returns an error and changes nothing.
//
// Enqueue checks the fields the planner relies on (ID, tenant, time range,
// size, shard); the full validation of a block, datasets included, is the
// index's, which sees every block first.
//
// Precondition: b is not queued, claimed or quarantined already. The index
// refuses duplicate IDs before the state machine enqueues a block; the
// planner keeps no per-block ID map (it would cost more memory than the
// queue itself) and does not check this again. Nothing else in the planner
// can queue a block twice: Return and Requeue put back blocks that were
// taken out of the queue, and skip any whose arrival is already queued
// (see Counters.Duplicates).
//
// The block's arrival is recorded: its arrival number (the planner numbers
// blocks in the order it receives them, which since entries are applied in
// order is the order of (entry index, position in the entry)) and its
// arrival time, max(e.Time, the latest time applied).
func (p *Planner) Enqueue(e ck.Entry, b *ck.BlockMeta) (bool, error) {
	if err := e.Validate(); err != nil {
		return false, fmt.Errorf("planner: enqueue: %w", err)
	}
	if b == nil {
		return false, fmt.Errorf("planner: enqueue: no block: %w", ident.ErrInconsistent)
	}
	if err := p.checkBlock(b); err != nil {
		return false, fmt.Errorf("planner: enqueue: %w", err)
	}
	if b.Level >= p.s.cfg.FinalLevel {
		return false, nil
	}
	if p.s.nextArrival == math.MaxUint64 {
		return false, fmt.Errorf("planner: enqueue %s: arrival numbers exhausted: %w", b.ID, ident.ErrInconsistent)
	}
	p.tick(e.Time)
	lc := p.s.levelOf(b.Tenant, b.Level)
	k := key{tenant: b.Tenant, shard: b.Shard, level: b.Level}
	if lc.CrossShard {
		k.shard = ck.AnyShard
	}
	it := item{id: b.ID, arrival: p.s.nextArrival, time: p.s.clock, minT: b.MinTime, maxT: b.MaxTime, size: b.Size}
	p.s.nextArrival++
	p.s.counters.Enqueued++
	q := p.lookup(k)
	if q == nil {
		q = p.newQueue(k)
	} else if q.gen != p.gen || p.s.keys.Pending() {
		q = p.own(q)
	}
	q.push(&it)
	if !q.head.full {
		// The head batch holds every queued block: extend it.
		old := q.head
		q.head.add(&it, lc)
		if old.count == 0 || q.head.full {
			p.s.indexHead(k, &old, false)
			p.s.indexHead(k, &q.head, true)
		}
	}
	return true, nil
}

// checkBlock validates the fields of b the planner relies on, with the
// rules (and errors) of compactkit.BlockMeta.Validate. The tenant's name is
// checked only when it differs from the last one found valid.
func (p *Planner) checkBlock(b *ck.BlockMeta) error {
	if err := ident.ValidateID(b.ID); err != nil {
		return fmt.Errorf("block: %w", err)
	}
	if !p.hasOK || b.Tenant != p.okTenant {
		if err := ident.ValidateTenant(b.Tenant); err != nil {
			return fmt.Errorf("block %s: %w", b.ID, err)
		}
		p.okTenant, p.hasOK = b.Tenant, true
	}
	switch {
	case b.MinTime > b.MaxTime:
		return fmt.Errorf("block %s: min time %d after max time %d: %w", b.ID, b.MinTime, b.MaxTime, ident.ErrTimeRange)
	case b.Size < 0:
		return fmt.Errorf("block %s: size %d: %w", b.ID, b.Size, ident.ErrNegative)
	}
	return nil
}
