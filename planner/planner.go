package planner

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/google/btree"

	ck "github.com/compactkit/compactkit"
)

const btreeDegree = 16

// MaxReasonLen bounds the quarantine reason kept per block; longer reasons
// are truncated (see compactkit.ClipReason).
const MaxReasonLen = ck.MaxReasonLen

// fullEnt indexes a key whose head batch is full, by (level, tenant,
// arrival of the batch's first block).
type fullEnt struct {
	level  uint32
	shard  uint32
	tenant string
	arr    uint64
}

func fullLess(a, b fullEnt) bool {
	if a.level != b.level {
		return a.level < b.level
	}
	if c := strings.Compare(a.tenant, b.tenant); c != 0 {
		return c < 0
	}
	if a.arr != b.arr {
		return a.arr < b.arr
	}
	return a.shard < b.shard // arrivals are unique; a total order all the same
}

// timeEnt indexes a key by (level, a time, arrival of the head batch's
// first block): the first block's arrival time for partial head batches
// (timed), the time the batch became ready for full ones (aging).
type timeEnt struct {
	level  uint32
	shard  uint32
	t      int64
	arr    uint64
	tenant string
}

func timeLess(a, b timeEnt) bool {
	if a.level != b.level {
		return a.level < b.level
	}
	if a.t != b.t {
		return a.t < b.t
	}
	if a.arr != b.arr {
		return a.arr < b.arr
	}
	if c := strings.Compare(a.tenant, b.tenant); c != 0 {
		return c < 0
	}
	return a.shard < b.shard
}

// claim records the sources a job claims.
type claim struct {
	name  string
	k     key
	items []item
}

// claimRef indexes claims by key, for retention.
type claimRef struct {
	k    key
	name string
}

func claimRefLess(a, b claimRef) bool {
	if c := a.k.compare(b.k); c != 0 {
		return c < 0
	}
	return a.name < b.name
}

// quarEnt is a quarantined block.
type quarEnt struct {
	it     item
	k      key
	job    string
	reason string
	since  int64
}

// Counters count what the planner did since its state began (they are
// replicated state: part of the snapshot).
type Counters struct {
	// Enqueued counts blocks queued by Enqueue.
	Enqueued uint64
	// Claims counts jobs that claimed their sources.
	Claims uint64
	// Completions counts jobs completed.
	Completions uint64
	// Returns counts jobs whose claims ended by Return, and ReturnedBlocks
	// the sources that went back into the queue.
	Returns, ReturnedBlocks uint64
	// Quarantines counts evicted jobs, and QuarantinedBlocks their sources.
	Quarantines, QuarantinedBlocks uint64
	// Requeued counts quarantined blocks an operator re-queued.
	Requeued uint64
	// Dropped counts blocks removed from the queue or the quarantine by
	// retention (Drop).
	Dropped uint64
	// Duplicates counts blocks that were already queued (or quarantined)
	// when Return, Requeue or Quarantine tried to add them again; they were
	// not added twice.
	Duplicates uint64
	// MissedRemovals counts blocks Drop did not find queued, claimed or
	// quarantined.
	MissedRemovals uint64
}

// state is everything a view shares with its planner: copy-on-write trees
// and plain values.
type state struct {
	cfg Config
	// keys holds the non-empty queues by key.
	keys *btree.BTreeG[*queue]
	// full, timed and aging index the keys by their head batch.
	full  *btree.BTreeG[fullEnt]
	timed *btree.BTreeG[timeEnt]
	aging *btree.BTreeG[timeEnt]
	// claims by job name, and by key.
	claims    *btree.BTreeG[*claim]
	claimKeys *btree.BTreeG[claimRef]
	// quar holds the quarantined blocks by ID.
	quar *btree.BTreeG[*quarEnt]

	clock       int64  // the latest log time applied
	nextArrival uint64 // arrival number of the next block, from 1
	nextSeq     uint64 // the lowest job sequence number still claimable
	cursor      string // tenant of the last claimed job
	hasCursor   bool
	counters    Counters
}

func newState(cfg Config) state {
	return state{
		cfg:         cfg,
		keys:        btree.NewG(btreeDegree, func(a, b *queue) bool { return a.k.compare(b.k) < 0 }),
		full:        btree.NewG(btreeDegree, fullLess),
		timed:       btree.NewG(btreeDegree, timeLess),
		aging:       btree.NewG(btreeDegree, timeLess),
		claims:      btree.NewG(btreeDegree, func(a, b *claim) bool { return a.name < b.name }),
		claimKeys:   btree.NewG(btreeDegree, claimRefLess),
		quar:        btree.NewG(btreeDegree, func(a, b *quarEnt) bool { return a.it.id < b.it.id }),
		nextArrival: 1,
		nextSeq:     1,
	}
}

// clone returns a copy that shares every tree copy-on-write.
func (s *state) clone() state {
	c := *s
	c.keys = s.keys.Clone()
	c.full = s.full.Clone()
	c.timed = s.timed.Clone()
	c.aging = s.aging.Clone()
	c.claims = s.claims.Clone()
	c.claimKeys = s.claimKeys.Clone()
	c.quar = s.quar.Clone()
	return c
}

// indexHead adds (or removes) the index entries of key k with head batch h.
func (s *state) indexHead(k key, h *batch, add bool) {
	if h.count == 0 {
		return
	}
	lc := s.cfg.level(k.level)
	switch {
	case h.full:
		fe := fullEnt{level: k.level, shard: k.shard, tenant: k.tenant, arr: h.arr}
		if add {
			s.full.ReplaceOrInsert(fe)
		} else {
			s.full.Delete(fe)
		}
		if k.level > 0 && lc.AgingThreshold > 0 {
			rs, _ := h.readySince(lc)
			te := timeEnt{level: k.level, shard: k.shard, t: rs, arr: h.arr, tenant: k.tenant}
			if add {
				s.aging.ReplaceOrInsert(te)
			} else {
				s.aging.Delete(te)
			}
		}
	case lc.MaxAge > 0:
		te := timeEnt{level: k.level, shard: k.shard, t: h.first, arr: h.arr, tenant: k.tenant}
		if add {
			s.timed.ReplaceOrInsert(te)
		} else {
			s.timed.Delete(te)
		}
	}
}

// getQueue returns the queue of key k, or nil. pivot is scratch space
// owned by the caller (a B-tree search key would otherwise escape to the
// heap on every call).
func (s *state) getQueue(k key, pivot *queue) *queue {
	pivot.k = k
	q, _ := s.keys.Get(pivot)
	return q
}

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
	hash       xxWords // scratch
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

// tenantQueues holds the queues of one tenant by (shard, level).
type tenantQueues struct {
	m map[uint64]*queue
}

func slot(shard, level uint32) uint64 { return uint64(shard)<<32 | uint64(level) }

// lookup returns the queue of key k, or nil.
func (p *Planner) lookup(k key) *queue {
	t := p.last
	if t == nil || k.tenant != p.lastTenant {
		if t = p.tenants[k.tenant]; t == nil {
			return nil
		}
		p.last, p.lastTenant = t, k.tenant
	}
	return t.m[slot(k.shard, k.level)]
}

// setLookup makes q the queue found for its key.
func (p *Planner) setLookup(q *queue) {
	t := p.tenants[q.k.tenant]
	if t == nil {
		t = &tenantQueues{m: make(map[uint64]*queue)}
		p.tenants[q.k.tenant] = t
	}
	t.m[slot(q.k.shard, q.k.level)] = q
}

// dropLookup forgets the queue of key k.
func (p *Planner) dropLookup(k key) {
	t := p.tenants[k.tenant]
	delete(t.m, slot(k.shard, k.level))
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
// quarantine times never go backwards.
func (p *Planner) tick(t int64) {
	p.s.clock = max(p.s.clock, t)
}

// own returns a copy of q that the planner may modify, making one if q
// may be shared with a view.
func (p *Planner) own(q *queue) *queue {
	if q.gen == p.gen {
		return q
	}
	c := *q
	c.gen = p.gen
	p.setLookup(&c)
	p.s.keys.ReplaceOrInsert(&c)
	return &c
}

func (p *Planner) newQueue(k key) *queue {
	q := &queue{k: k, gen: p.gen}
	p.setLookup(q)
	p.s.keys.ReplaceOrInsert(q)
	return q
}

// refresh recomputes the head batch of a queue whose head may have
// changed (old is its previous head batch), updates the indexes, and
// removes the queue if it is empty.
func (p *Planner) refresh(q *queue, old batch) {
	p.s.indexHead(q.k, &old, false)
	if q.n == 0 {
		p.dropLookup(q.k)
		p.s.keys.Delete(q)
		return
	}
	q.head = formBatch(q, 0, p.s.cfg.level(q.k.level))
	p.s.indexHead(q.k, &q.head, true)
}

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
		return false, fmt.Errorf("planner: enqueue: no block: %w", ck.ErrInconsistent)
	}
	if err := checkBlock(b); err != nil {
		return false, fmt.Errorf("planner: enqueue: %w", err)
	}
	if b.Level >= p.s.cfg.FinalLevel {
		return false, nil
	}
	if p.s.nextArrival == math.MaxUint64 {
		return false, fmt.Errorf("planner: enqueue %s: arrival numbers exhausted: %w", b.ID, ck.ErrInconsistent)
	}
	p.tick(e.Time)
	lc := p.s.cfg.level(b.Level)
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
	} else if q.gen != p.gen {
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
// rules (and errors) of compactkit.BlockMeta.Validate.
func checkBlock(b *ck.BlockMeta) error {
	if err := checkID(b.ID); err != nil {
		return fmt.Errorf("block: %w", err)
	}
	if err := checkName(b.Tenant); err != nil {
		return fmt.Errorf("block %s: tenant: %w", b.ID, err)
	}
	switch {
	case b.MinTime > b.MaxTime:
		return fmt.Errorf("block %s: min time %d after max time %d: %w", b.ID, b.MinTime, b.MaxTime, ck.ErrTimeRange)
	case b.Size < 0:
		return fmt.Errorf("block %s: size %d: %w", b.ID, b.Size, ck.ErrNegative)
	}
	return nil
}

// checkID is compactkit.ValidateID with a fast path for the common case,
// ASCII IDs: it accepts exactly the IDs ValidateID accepts.
func checkID(id string) error {
	if len(id) == 0 || len(id) > ck.MaxIDLen {
		return ck.ValidateID(id)
	}
	seg, dots := 0, 0 // length of the current segment, and its dots
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c-0x20 >= 0x7f-0x20 || c == '\\':
			return ck.ValidateID(id) // control or non-ASCII: the full rules
		case c == '/':
			if seg == 0 || seg == dots && seg <= 2 {
				return ck.ValidateID(id)
			}
			seg, dots = 0, 0
			continue
		case c == '.':
			dots++
		}
		seg++
	}
	if seg == dots && seg <= 2 {
		return ck.ValidateID(id)
	}
	return nil
}

// checkName applies compactkit's rules for tenants: at most MaxNameLen
// bytes of valid UTF-8 without control characters, empty allowed.
func checkName(s string) error {
	if len(s) > ck.MaxNameLen {
		return fmt.Errorf("%d bytes, limit %d: %w", len(s), ck.MaxNameLen, ck.ErrInvalidID)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			if !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
				return fmt.Errorf("%q: invalid characters: %w", s, ck.ErrInvalidID)
			}
			return nil
		}
	}
	return nil
}

// Admissible reports whether plan can be claimed now: nil if so, else an
// error wrapping [ErrNotAdmissible] that says why.
//
// The rule is stricter than "every source is queued and unclaimed", and
// cheap (O(k) for k sources, no per-block map): the sources must be exactly
// the k oldest queued blocks of the plan's key, in order — which is how the
// planner forms batches — and the plan's name must be the one the planner
// gives that key, those sources and the plan's sequence number, a number
// not below the planner's next one (see the package documentation on job
// names). A plan prepared on a view is refused if, meanwhile, its sources
// were claimed, returned to another position, dropped, or joined by an
// older returned block; refusing only costs a job this time.
func (p *Planner) Admissible(plan *ck.JobPlan) error {
	_, _, err := p.admissible(plan)
	return err
}

func (p *Planner) admissible(plan *ck.JobPlan) (*queue, uint64, error) {
	if plan == nil {
		return nil, 0, fmt.Errorf("no plan: %w", ErrNotAdmissible)
	}
	if len(plan.Sources) == 0 {
		return nil, 0, fmt.Errorf("job %s: no sources: %w", plan.Name, ErrNotAdmissible)
	}
	if plan.Level >= p.s.cfg.FinalLevel {
		return nil, 0, fmt.Errorf("job %s: level %d at or beyond the final level %d: %w", plan.Name, plan.Level, p.s.cfg.FinalLevel, ErrNotAdmissible)
	}
	seq, ok := nameSeq(plan.Name)
	if !ok {
		return nil, 0, fmt.Errorf("job %q: not a name the planner gives: %w", plan.Name, ErrNotAdmissible)
	}
	if seq < p.s.nextSeq || seq == math.MaxUint64 {
		return nil, 0, fmt.Errorf("job %s: sequence number %d already used (next is %d): %w", plan.Name, seq, p.s.nextSeq, ErrNotAdmissible)
	}
	k := key{tenant: plan.Tenant, shard: plan.Shard, level: plan.Level}
	q := p.lookup(k)
	if q == nil {
		return nil, 0, fmt.Errorf("job %s: no block queued for tenant %q, shard %d, level %d: %w", plan.Name, plan.Tenant, plan.Shard, plan.Level, ErrNotAdmissible)
	}
	if len(plan.Sources) > q.n {
		return nil, 0, fmt.Errorf("job %s: %d sources, %d blocks queued for its key: %w", plan.Name, len(plan.Sources), q.n, ErrNotAdmissible)
	}
	i, bad := 0, ""
	q.visit(0, func(items []item) bool {
		for j := range items {
			if i == len(plan.Sources) {
				return false
			}
			if items[j].id != plan.Sources[i] {
				bad = items[j].id
				return false
			}
			i++
		}
		return true
	})
	if i < len(plan.Sources) {
		return nil, 0, fmt.Errorf("job %s: source %d is %s, but the block queued at that position of its key is %s: %w", plan.Name, i, plan.Sources[i], bad, ErrNotAdmissible)
	}
	name := jobName(&p.hash, k, seq, plan.Sources)
	if name != plan.Name {
		return nil, 0, fmt.Errorf("job %s: the planner names these sources %s: %w", plan.Name, name, ErrNotAdmissible)
	}
	return q, seq, nil
}

// Claim creates the claim of a new job: if plan is admissible (see
// [Planner.Admissible]), its sources leave the queue and are recorded as
// claimed by plan.Name, the planner's next job sequence number moves past
// the plan's, and the fairness cursor moves to the plan's tenant. All or
// nothing: on error nothing changes.
func (p *Planner) Claim(e ck.Entry, plan *ck.JobPlan) error {
	if err := e.Validate(); err != nil {
		return fmt.Errorf("planner: claim: %w", err)
	}
	q, seq, err := p.admissible(plan)
	if err != nil {
		return fmt.Errorf("planner: claim: %w", err)
	}
	p.tick(e.Time)
	q = p.own(q)
	old := q.head
	c := &claim{name: plan.Name, k: q.k, items: q.take(len(plan.Sources))}
	p.s.claims.ReplaceOrInsert(c)
	p.s.claimKeys.ReplaceOrInsert(claimRef{k: c.k, name: c.name})
	p.s.nextSeq = seq + 1
	p.s.cursor, p.s.hasCursor = plan.Tenant, true
	p.s.counters.Claims++
	p.refresh(q, old)
	return nil
}

// getClaim returns the claim of a job.
func (s *state) getClaim(job string) (*claim, bool) {
	return s.claims.Get(&claim{name: job})
}

// endClaim removes a claim.
func (p *Planner) endClaim(c *claim) {
	p.s.claims.Delete(c)
	p.s.claimKeys.Delete(claimRef{k: c.k, name: c.name})
}

// Return ends the claim of job: the sources listed in keep go back into
// the queue at their original arrival positions, the others are forgotten.
// The state machine uses it for a cancelled job (keep = all sources), for
// a completion the index refused (keep = the surviving sources) and after
// retention (keep = the sources still live). A job without a claim, or a
// kept ID that is not a source of the job, returns an error and changes
// nothing.
func (p *Planner) Return(job string, keep []string) error {
	c, ok := p.s.getClaim(job)
	if !ok {
		return fmt.Errorf("planner: return %s: %w", job, ErrUnknownJob)
	}
	want := make(map[string]bool, len(keep))
	for _, id := range keep {
		want[id] = false
	}
	items := make([]item, 0, len(keep))
	for _, it := range c.items {
		if _, ok := want[it.id]; ok {
			want[it.id] = true
			items = append(items, it)
		}
	}
	if len(items) != len(want) {
		for _, id := range keep {
			if !want[id] {
				return fmt.Errorf("planner: return %s: block %s: %w", job, id, ErrNotSource)
			}
		}
	}
	p.endClaim(c)
	p.s.counters.Returns++
	p.s.counters.ReturnedBlocks += uint64(len(items))
	p.insert(c.k, items)
	return nil
}

// insert puts items (sorted by arrival) back into the queue of key k.
func (p *Planner) insert(k key, items []item) {
	if len(items) == 0 {
		return
	}
	q := p.lookup(k)
	if q == nil {
		q = p.newQueue(k)
	} else {
		q = p.own(q)
	}
	old := q.head
	p.s.counters.Duplicates += uint64(q.merge(items))
	p.refresh(q, old)
}

// Complete ends the claim of job after its sources were replaced by its
// outputs: the sources are gone for good.
func (p *Planner) Complete(job string) error {
	c, ok := p.s.getClaim(job)
	if !ok {
		return fmt.Errorf("planner: complete %s: %w", job, ErrUnknownJob)
	}
	p.endClaim(c)
	p.s.counters.Completions++
	return nil
}

// Quarantine ends the claim of an evicted job: its sources leave
// compaction and are listed for operators (see [Planner.Quarantined]) with
// the reason, until an operator re-queues them ([Planner.Requeue]) or
// retention drops them. Reasons longer than [MaxReasonLen] bytes are
// truncated.
func (p *Planner) Quarantine(e ck.Entry, job string, reason string) error {
	if err := e.Validate(); err != nil {
		return fmt.Errorf("planner: quarantine: %w", err)
	}
	c, ok := p.s.getClaim(job)
	if !ok {
		return fmt.Errorf("planner: quarantine %s: %w", job, ErrUnknownJob)
	}
	p.tick(e.Time)
	reason = ck.ClipReason(reason)
	for _, it := range c.items {
		qe := &quarEnt{it: it, k: c.k, job: c.name, reason: reason, since: p.s.clock}
		if p.s.quar.Has(qe) {
			p.s.counters.Duplicates++
			continue
		}
		p.s.quar.ReplaceOrInsert(qe)
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
		if err := checkID(id); err != nil {
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
			p.s.quar.Delete(found[j])
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
	// evicted.
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

// Drop removes blocks that retention dropped from the index: from the
// queue and from the quarantine. Retention is decided by the index, which
// owns the blocks' metadata: the state machine passes the blocks that
// index.DropBefore returned (a tenant's blocks older than t), in the same
// entry. It returns the sorted, distinct names of
// the jobs that claim any of them; the state machine cancels those jobs and
// returns their sources that are still live ([Planner.Return]). Blocks at
// or beyond the final level are ignored (the planner never holds them);
// others found nowhere are counted as missed removals.
//
// The cost is linear in the queue length of each key concerned (there is
// no per-block ID map), which suits retention: rare, and by tenant.
func (p *Planner) Drop(blocks []ck.BlockMeta) (claimedBy []string) {
	type want struct {
		id    string
		found bool
	}
	wanted := make(map[string]*want)
	perKey := make(map[key]map[string]*want)
	var keys []key
	addKey := func(k key, w *want) {
		m := perKey[k]
		if m == nil {
			m = make(map[string]*want)
			perKey[k] = m
			keys = append(keys, k)
		}
		m[w.id] = w
	}
	for i := range blocks {
		b := &blocks[i]
		if b.Level >= p.s.cfg.FinalLevel {
			continue
		}
		if _, dup := wanted[b.ID]; dup {
			continue
		}
		w := &want{id: b.ID}
		wanted[b.ID] = w
		if qe, ok := p.s.quar.Get(&quarEnt{it: item{id: b.ID}}); ok {
			p.s.quar.Delete(qe)
			p.s.counters.Dropped++
			w.found = true
			continue
		}
		addKey(key{tenant: b.Tenant, shard: b.Shard, level: b.Level}, w)
		if b.Shard != ck.AnyShard {
			addKey(key{tenant: b.Tenant, shard: ck.AnyShard, level: b.Level}, w)
		}
	}
	slices.SortFunc(keys, key.compare)
	var jobs []string
	for _, k := range keys {
		ids := make(map[string]struct{})
		for id, w := range perKey[k] {
			if !w.found {
				ids[id] = struct{}{}
			}
		}
		if len(ids) == 0 {
			continue
		}
		if q := p.lookup(k); q != nil {
			q = p.own(q)
			old := q.head
			removed := q.remove(ids)
			for _, it := range removed {
				wanted[it.id].found = true
				delete(ids, it.id)
			}
			p.s.counters.Dropped += uint64(len(removed))
			p.refresh(q, old)
		}
		if len(ids) == 0 {
			continue
		}
		p.s.claimKeys.AscendGreaterOrEqual(claimRef{k: k}, func(r claimRef) bool {
			if r.k != k {
				return false
			}
			c, _ := p.s.getClaim(r.name)
			hit := false
			for _, it := range c.items {
				if _, ok := ids[it.id]; ok {
					wanted[it.id].found = true
					hit = true
				}
			}
			if hit {
				jobs = append(jobs, r.name)
			}
			return true
		})
	}
	for _, w := range wanted {
		if !w.found {
			p.s.counters.MissedRemovals++
		}
	}
	slices.Sort(jobs)
	return slices.Compact(jobs)
}

// Claimed returns the sources job claims, in arrival order.
func (p *Planner) Claimed(job string) ([]string, bool) { return p.s.claimed(job) }

func (s *state) claimed(job string) ([]string, bool) {
	c, ok := s.getClaim(job)
	if !ok {
		return nil, false
	}
	ids := make([]string, len(c.items))
	for i := range c.items {
		ids[i] = c.items[i].id
	}
	return ids, true
}

// SetConfig replaces the configuration; the state machine calls it when it
// applies a config command. Every queued block stays queued; batches are
// formed under the new policy from now on. Keys keep their shape: after
// CrossShard changes for a level, the blocks queued under the former shape
// stay in their keys and are planned there until drained, while new blocks
// are queued under the new shape.
//
// Lowering the final level below a level that still holds queued, claimed
// or quarantined blocks is refused (ErrInvalidConfig): those blocks would be
// stranded. An invalid configuration is refused too; on error nothing
// changes.
func (p *Planner) SetConfig(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("planner: %w", err)
	}
	if cfg.FinalLevel < p.s.cfg.FinalLevel {
		if l, ok := p.s.highestLevel(); ok && l >= cfg.FinalLevel {
			return fmt.Errorf("planner: final level %d: level %d still holds blocks: %w", cfg.FinalLevel, l, ErrInvalidConfig)
		}
	}
	p.s.cfg = cfg.clone()
	var qs []*queue
	p.s.keys.Ascend(func(q *queue) bool {
		qs = append(qs, q)
		return true
	})
	p.s.full = btree.NewG(btreeDegree, fullLess)
	p.s.timed = btree.NewG(btreeDegree, timeLess)
	p.s.aging = btree.NewG(btreeDegree, timeLess)
	for _, q := range qs {
		q = p.own(q)
		q.head = formBatch(q, 0, p.s.cfg.level(q.k.level))
		p.s.indexHead(q.k, &q.head, true)
	}
	return nil
}

// highestLevel returns the highest level that holds queued, claimed or
// quarantined blocks.
func (s *state) highestLevel() (uint32, bool) {
	var l uint32
	found := false
	see := func(k key) {
		if !found || k.level > l {
			l, found = k.level, true
		}
	}
	s.keys.Ascend(func(q *queue) bool { see(q.k); return true })
	s.claims.Ascend(func(c *claim) bool { see(c.k); return true })
	s.quar.Ascend(func(qe *quarEnt) bool { see(qe.k); return true })
	return l, found
}
