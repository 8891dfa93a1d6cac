package planner

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/compactkit/compactkit/internal/ident"

	ck "github.com/compactkit/compactkit"
)

// Quarantine ends the claim of an evicted job: its sources leave
// compaction and are listed for operators (see [Planner.Quarantined]) with
// the reason, until an operator re-queues them ([Planner.Requeue]) or
// retention drops them. Reasons longer than 1024 bytes are
// truncated at a character boundary.
func (p *Planner) Quarantine(e ck.Entry, job string, reason string) error {
	if err := e.Validate(); err != nil {
		return fmt.Errorf("planner: quarantine: %w", err)
	}
	c, ok := p.s.getClaim(job)
	if !ok {
		return fmt.Errorf("planner: quarantine %s: %w", job, errUnknownJob)
	}
	p.tick(e.Time)
	reason = ident.ClipReason(reason)
	for _, it := range c.items {
		qe := &quarEnt{it: it, k: c.k, job: c.name.String(), reason: reason, since: p.s.clock}
		if p.s.quar.Has(qe) {
			p.s.counters.Duplicates++
			continue
		}
		p.s.quar.Mut(p.s.vmu).ReplaceOrInsert(qe)
		p.s.counters.QuarantinedBlocks++
	}
	p.endClaim(c)
	p.s.counters.Quarantines++
	return nil
}

// Requeue puts quarantined blocks back into the queue at their original
// arrival positions (an operator's command, once the cause is fixed). IDs
// that are not quarantined are ignored; it returns the number of blocks
// re-queued. An invalid ID returns an error and changes nothing.
func (p *Planner) Requeue(ids []string) (int, error) {
	for _, id := range ids {
		if err := ident.ValidateID(id); err != nil {
			return 0, fmt.Errorf("planner: requeue: %w", err)
		}
	}
	var found []*quarEnt
	for _, id := range ids {
		if qe, ok := p.s.quar.Get(&quarEnt{it: item{id: id}}); ok {
			found = append(found, qe)
		}
	}
	slices.SortFunc(found, func(a, b *quarEnt) int {
		if c := a.k.compare(b.k); c != 0 {
			return c
		}
		return cmp.Compare(a.it.arrival, b.it.arrival)
	})
	found = slices.CompactFunc(found, func(a, b *quarEnt) bool { return a == b })
	for i := 0; i < len(found); {
		j := i
		var items []item
		for ; j < len(found) && found[j].k == found[i].k; j++ {
			items = append(items, found[j].it)
			p.s.quar.Mut(p.s.vmu).Delete(found[j])
		}
		p.insert(found[i].k, items)
		i = j
	}
	p.s.counters.Requeued += uint64(len(found))
	return len(found), nil
}

// QuarantinedBlock is a block that left compaction when its job was
// evicted.
type QuarantinedBlock struct {
	// ID, Tenant, Shard and Level identify the block and its compaction
	// key (Shard is compactkit.AnyShard for a cross-shard key).
	ID     string
	Tenant string
	Shard  uint32
	Level  uint32
	// Job is the evicted job that held the block, and Reason why it was
	// evicted; Job is empty for a block an operator marked ([Planner.Mark]),
	// and Reason is then the operator's.
	Job    string
	Reason string
	// Since is the log time of the eviction; Arrived the log time the
	// block was first queued.
	Since   int64
	Arrived int64
	// MinTime, MaxTime and Size are the block's.
	MinTime, MaxTime int64
	Size             int64
}

// Quarantined lists up to limit quarantined blocks in ID order, starting
// after the ID cursor ("" for the first page). next is the cursor of the
// following page, "" after the last one. A limit below 1 means 100.
func (p *Planner) Quarantined(cursor string, limit int) (items []QuarantinedBlock, next string) {
	return p.s.quarantined(cursor, limit)
}

func (s *state) quarantined(cursor string, limit int) (items []QuarantinedBlock, next string) {
	if limit < 1 {
		limit = 100
	}
	more := false
	s.quar.AscendGreaterOrEqual(&quarEnt{it: item{id: cursor}}, func(qe *quarEnt) bool {
		if qe.it.id == cursor {
			return true
		}
		if len(items) == limit {
			more = true
			return false
		}
		items = append(items, QuarantinedBlock{
			ID: qe.it.id, Tenant: qe.k.tenant, Shard: qe.k.shard, Level: qe.k.level,
			Job: qe.job, Reason: qe.reason, Since: qe.since, Arrived: qe.it.time,
			MinTime: qe.it.minT, MaxTime: qe.it.maxT, Size: qe.it.size,
		})
		return true
	})
	if more {
		next = items[len(items)-1].ID
	}
	return items, next
}
