package planner

import (
	"fmt"
	"math/bits"

	"github.com/google/btree"
)

// Planner is the queue of blocks awaiting compaction. See the package
// documentation.
//
// A Planner is not safe for concurrent use: the state machine calls its
// methods from its Apply goroutine (or under its lock). Views opened with
// [Planner.View] may be used on other goroutines.
type Planner struct {
	s   state
	gen uint64
	// tenants finds queues by key (lookup only; never iterated), with a
	// one-entry cache of the last tenant looked up.
	tenants    map[string]*tenantQueues
	lastTenant string
	last       *tenantQueues
	// okTenant is the tenant name Enqueue last found valid (a memo of a
	// pure check: ingest sends runs of one tenant's blocks), if hasOK.
	okTenant string
	hasOK    bool
	// named remembers job names admissible computed or a view handed over
	// (a memo of a pure function, see nameMemo).
	named nameMemo
}

// New returns an empty planner with the given configuration.
func New(cfg Config) (*Planner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("planner: %w", err)
	}
	return newPlanner(newState(cfg.clone())), nil
}

func newPlanner(s state) *Planner {
	return &Planner{s: s, tenants: make(map[string]*tenantQueues)}
}

// tenantQueues holds the queues of one tenant by (shard, level), in m,
// and the queue last found or set at each of a few positions (recent, at
// recentAt of the key): a lookup that finds its key there skips the map.
// Every change of m changes recent with it, so a queue in recent is the
// queue m holds for its key. recent has a power of two of positions, as
// many as m has queues up to recentMax: a tenant of one queue keeps one.
type tenantQueues struct {
	m      map[uint64]*queue
	recent []*queue
}

// recentMax is the most positions a tenant's recent holds: as many as a
// tenant's shards often are, so that blocks spread over the shards in turn
// each find their queue there.
const recentMax = 64

func slot(shard, level uint32) uint64 { return uint64(shard)<<32 | uint64(level) }

// recentAt returns the position of recent a key's queue is kept at.
func (t *tenantQueues) recentAt(shard, level uint32) int {
	return int((shard ^ level<<4) & uint32(len(t.recent)-1))
}

// lookup returns the queue of key k, or nil.
func (p *Planner) lookup(k key) *queue {
	t := p.last
	if t == nil || k.tenant != p.lastTenant {
		if t = p.tenants[k.tenant]; t == nil {
			return nil
		}
		p.last, p.lastTenant = t, k.tenant
	}
	at := t.recentAt(k.shard, k.level)
	if q := t.recent[at]; q != nil && q.k.shard == k.shard && q.k.level == k.level {
		return q
	}
	q := t.m[slot(k.shard, k.level)]
	if q != nil {
		t.recent[at] = q
	}
	return q
}

// setLookup makes q the queue found for its key.
func (p *Planner) setLookup(q *queue) {
	t := p.tenants[q.k.tenant]
	if t == nil {
		t = &tenantQueues{m: make(map[uint64]*queue)}
		p.tenants[q.k.tenant] = t
	}
	t.m[slot(q.k.shard, q.k.level)] = q
	if n := len(t.recent); n < len(t.m) && n < recentMax {
		// Grown empty: lookups fill it again.
		t.recent = make([]*queue, min(recentMax, 1<<bits.Len(uint(len(t.m)-1))))
	}
	t.recent[t.recentAt(q.k.shard, q.k.level)] = q
}

// dropLookup forgets the queue of key k.
func (p *Planner) dropLookup(k key) {
	t := p.tenants[k.tenant]
	delete(t.m, slot(k.shard, k.level))
	at := t.recentAt(k.shard, k.level)
	if q := t.recent[at]; q != nil && q.k.shard == k.shard && q.k.level == k.level {
		t.recent[at] = nil
	}
	if len(t.m) == 0 {
		delete(p.tenants, k.tenant)
		if p.last == t {
			p.last, p.lastTenant = nil, ""
		}
	}
}

// Config returns a copy of the planner's configuration.
func (p *Planner) Config() Config { return p.s.cfg.clone() }

// tick advances the planner's clock to t if it is later: arrival and
// quarantine times never go backwards. The partial head batches whose
// times it passes become ripe (see state.ready). Every enqueued block
// ticks: tick stays within the compiler's inlining budget.
func (p *Planner) tick(t int64) {
	if t > p.s.clock {
		if p.s.nextRipe < t {
			p.s.ripen(p.s.clock, t)
		}
		p.s.clock = t
	}
}

// own returns a copy of q that the planner may modify, making one if q
// may be shared with a view.
func (p *Planner) own(q *queue) *queue {
	p.wKeys()
	if q.gen == p.gen {
		return q
	}
	c := *q
	c.gen = p.gen
	p.setLookup(&c)
	p.wKeys().ReplaceOrInsert(&c)
	return &c
}

// wKeys returns the tree of queues for writing. Once it has been frozen
// for a view (lazy.go), its queues are shared with that view: the
// generation moves on, so that own copies each queue before changing it.
// A tree no view froze shares no queue, and the generation stays.
func (p *Planner) wKeys() *btree.BTreeG[*queue] { return p.s.keys.MutGen(p.s.vmu, &p.gen) }

func (p *Planner) newQueue(k key) *queue {
	q := &queue{k: k, gen: p.gen}
	p.setLookup(q)
	p.wKeys().ReplaceOrInsert(q)
	return q
}

// refresh recomputes the head batch of a queue whose head may have
// changed (old is its previous head batch), updates the indexes, and
// removes the queue if it is empty.
func (p *Planner) refresh(q *queue, old batch) {
	p.s.indexHead(q.k, &old, false)
	if q.n == 0 {
		p.dropLookup(q.k)
		p.wKeys().Delete(q)
		return
	}
	q.head = formBatch(q, 0, p.s.levelOf(q.k.tenant, q.k.level))
	p.s.indexHead(q.k, &q.head, true)
}
