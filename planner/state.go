package planner

import (
	"math"
	"strings"
	"sync"
	"time"

	"github.com/compactkit/compactkit/internal/namekey"
	"github.com/compactkit/compactkit/policy"
)

const btreeDegree = 16

// fullEnt indexes a key whose head batch is ready at every time from the
// clock on (full, or ripe: see state.ready) by (level it competes at,
// tenant's rank, tenant, the key's own level, arrival of the batch's first
// block). A batch competes at its own level and its tenant's rank; one
// aged at the clock (see state.aged) has a second entry at level 0 and
// rank 0 (from is its own level).
type fullEnt struct {
	level  uint32
	shard  uint32
	tenant string
	arr    uint64
	from   uint32
	rank   uint8
}

func fullLess(a, b fullEnt) bool {
	if a.level != b.level {
		return a.level < b.level
	}
	if a.rank != b.rank {
		return a.rank < b.rank
	}
	if c := strings.Compare(a.tenant, b.tenant); c != 0 {
		return c < 0
	}
	if a.from != b.from {
		return a.from < b.from
	}
	if a.arr != b.arr {
		return a.arr < b.arr
	}
	return a.shard < b.shard // arrivals are unique; a total order all the same
}

// fullOf returns the entry in full, at its own level and rank, of the key
// whose timed or aging entry is te.
func fullOf(te timeEnt) fullEnt {
	return fullEnt{level: te.level, shard: te.shard, tenant: te.tenant, arr: te.arr, from: te.level, rank: te.rank}
}

// agedEnt returns the entry in full of the batch whose aging entry is te,
// once aged.
func agedEnt(te timeEnt) fullEnt {
	return fullEnt{level: 0, shard: te.shard, tenant: te.tenant, arr: te.arr, from: te.level}
}

// timeEnt indexes a key by (level, a time, arrival of the head batch's
// first block): for partial head batches (timed), the time from which the
// batch is ready by age (its first block's arrival time plus its tenant's
// MaxAge at that level, which may differ between tenants); for full ones
// that age (aging: those of levels above 0, and those of level 0 whose
// tenant's rank is above 0), the time the batch became ready. It carries
// the tenant's rank, which does not order it.
type timeEnt struct {
	level  uint32
	shard  uint32
	t      int64
	arr    uint64
	tenant string
	rank   uint8
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

// claim records the sources a job claims. Its name carries its inline
// prefix (see internal/namekey), which orders the claims by name.
type claim struct {
	name  namekey.Name
	k     key
	items []item
}

// quarEnt is a quarantined block.
type quarEnt struct {
	it     item
	k      key
	job    string
	reason string
	since  int64
}

// state is everything a view shares with its planner: lazily frozen
// trees (lazy.go) and plain values.
type state struct {
	cfg Config
	// vmu guards the frozen trees, shared with the views (lazy.go).
	vmu *sync.Mutex
	// names passes the names of a view's plans to the planner (handoff,
	// guarded by vmu).
	names *handoff
	// keys holds the non-empty queues by key.
	keys lazy[*queue]
	// full, timed and aging index the keys by their head batch.
	full  lazy[fullEnt]
	timed lazy[timeEnt]
	aging lazy[timeEnt]
	// claims by job name (which also groups them by key: see
	// eachClaimOf).
	claims lazy[*claim]
	// quar holds the quarantined blocks by ID.
	quar lazy[*quarEnt]
	// held holds the tenants whose keys, all or those of some levels, are
	// left out of full, timed and aging (see Planner.SetHold). It is
	// derived state, not part of snapshots.
	held lazy[hold]
	// ranks holds the tenants with their own rank, and defRank is the
	// rank of the others (see Terms). They are derived state,
	// not part of snapshots, and order the entries of full, timed and
	// aging.
	ranks   lazy[tenantRank]
	defRank uint8
	// levels holds the tenants with their own batching, and defOver and
	// defLevels the batching of the others (see Terms):
	// derived state like ranks. defLevels is nil while the default
	// overrides nothing. Their slices are never modified in place (views
	// share them).
	levels    lazy[tenantLevels]
	defOver   []policy.Level
	defLevels []LevelConfig
	// ownLevels counts the entries of levels that override something
	// (non-nil levels): while it is 0 and defLevels is nil, every tenant
	// has the configured batching, and levelOf needs no lookup.
	ownLevels int

	clock int64 // the latest log time applied
	// nextRipe is at most the least time after which a batch becomes
	// ripe or aged (see ripen), MaxInt64 if none will: the clock can pass
	// it only by ripening some. agedN counts the aged entries in full.
	// Derived state, like the trees they summarize.
	nextRipe    int64
	agedN       int
	nextArrival uint64 // arrival number of the next block, from 1
	nextSeq     uint64 // the lowest job sequence number still claimable
	cursor      string // tenant of the last claimed job
	hasCursor   bool
	counters    Counters
}

func newState(cfg Config) state {
	mu := new(sync.Mutex)
	return state{
		cfg:         cfg,
		vmu:         mu,
		names:       &handoff{mu: mu},
		keys:        newLazy(func(a, b *queue) bool { return a.k.compare(b.k) < 0 }),
		full:        newLazy(fullLess),
		timed:       newLazy(timeLess),
		aging:       newLazy(timeLess),
		claims:      newLazy(func(a, b *claim) bool { return a.name.Less(b.name) }),
		quar:        newLazy(func(a, b *quarEnt) bool { return a.it.id < b.it.id }),
		held:        newLazy(holdByTenant),
		ranks:       newLazy(func(a, b tenantRank) bool { return a.tenant < b.tenant }),
		levels:      newLazy(func(a, b tenantLevels) bool { return a.tenant < b.tenant }),
		nextArrival: 1,
		nextRipe:    math.MaxInt64,
		nextSeq:     1,
	}
}

// hold is a held tenant: all its keys, or those of the levels whose bits
// are set. An entry has all or some level set.
type hold struct {
	tenant string
	all    bool
	levels uint64
}

func holdByTenant(a, b hold) bool { return a.tenant < b.tenant }

// at reports whether the hold covers a key of the level.
func (h hold) at(level uint32) bool {
	return h.all || level < 64 && h.levels&(1<<level) != 0
}

// holdOf returns the hold of tenant (the zero hold if none).
func (s *state) holdOf(tenant string) hold {
	if s.held.Len() == 0 {
		return hold{tenant: tenant}
	}
	h, ok := s.held.Get(hold{tenant: tenant})
	if !ok {
		return hold{tenant: tenant}
	}
	return h
}

// isHeld reports whether the keys of tenant at level are held (see
// Planner.SetHold).
func (s *state) isHeld(tenant string, level uint32) bool {
	return s.held.Len() > 0 && s.holdOf(tenant).at(level)
}

// indexHead adds (or removes) the index entries of key k with head batch h.
// The held keys of a tenant have no index entries: for them it does
// nothing, so every path that maintains the indexes respects the held set
// as long as the set does not change between a removal and an addition
// (SetHold moves the entries itself). The entries carry the tenant's
// rank.
func (s *state) indexHead(k key, h *batch, add bool) {
	if h.count == 0 || s.isHeld(k.tenant, k.level) {
		return
	}
	s.indexHeadRank(k, h, s.rankOf(k.tenant), add)
}

// indexHeadRank is indexHead with the tenant's rank given: the rank its
// entries were made with when they are removed (setRank moves the entries
// of a tenant whose rank changes). A full batch has an aging entry if it
// ages (see ages): at a level above 0, or at level 0 if the rank is above
// 0; so the rank decides which entries exist, not only their order.
func (s *state) indexHeadRank(k key, h *batch, rank uint8, add bool) {
	if h.count == 0 || s.isHeld(k.tenant, k.level) {
		return
	}
	lc := s.levelOf(k.tenant, k.level)
	switch {
	case h.full:
		rs, _ := h.readySince(lc)
		s.ready(timeEnt{level: k.level, shard: k.shard, t: rs, arr: h.arr, tenant: k.tenant, rank: rank}, lc, add)
	case lc.MaxAge > 0:
		te := timeEnt{level: k.level, shard: k.shard, t: satAdd(h.first, int64(lc.MaxAge)), arr: h.arr, tenant: k.tenant, rank: rank}
		if add {
			s.timed.Mut(s.vmu).ReplaceOrInsert(te)
		} else {
			s.timed.Mut(s.vmu).Delete(te)
		}
		switch {
		case te.t < s.clock:
			s.ready(te, lc, add) // ripe
		case add:
			s.nextRipe = min(s.nextRipe, te.t)
		}
	}
}

// What the indexes hold of a time the clock has passed. A partial head
// batch is ready by age at times after its timed entry's time. Once the
// clock has passed that time, the batch is ripe: ready at every later log
// time, like a full batch, and indexed as one — an entry in full, and one
// in aging (at the time it became ready) if it ages — besides its timed
// entry, which it keeps. A batch that ages (full or ripe) is aged once it
// has been ready for longer than its level's aging threshold; once it is
// at the clock, its aging entry has a second entry in full, where it
// competes aged (see agedEnt). A view then finds the ripe and aged
// batches where it finds the full ones, and gathers from timed and aging
// only those that became ready or aged between the clock and its own time
// (or, at a time before the clock, it passes over those not yet ready or
// aged then). Both happen when the clock moves (ripen), once per batch.

// ready adds (or removes) the entries of a head batch ready at every time
// from the clock on — full, or ripe — that has been ready since te.t: its
// entry in full (fullOf), and its aging entry if it ages.
func (s *state) ready(te timeEnt, lc *LevelConfig, add bool) {
	if add {
		s.full.Mut(s.vmu).ReplaceOrInsert(fullOf(te))
	} else {
		s.full.Mut(s.vmu).Delete(fullOf(te))
	}
	if ages(te.level, te.rank, lc) {
		s.agingEntry(te, add)
	}
}

// agingEntry adds (or removes) aging entry te, and its aged entry in full if
// it is aged at the clock.
func (s *state) agingEntry(te timeEnt, add bool) {
	if add {
		s.aging.Mut(s.vmu).ReplaceOrInsert(te)
	} else {
		s.aging.Mut(s.vmu).Delete(te)
	}
	at := s.cfg.level(te.level).AgingThreshold
	switch {
	case olderThan(te.t, s.clock, at):
		s.aged(te, add)
	case add:
		s.nextRipe = min(s.nextRipe, agesAt(te.t, at))
	}
}

// aged adds (or removes) the aged entry in full of aging entry te.
func (s *state) aged(te timeEnt, add bool) {
	if add {
		s.full.Mut(s.vmu).ReplaceOrInsert(agedEnt(te))
		s.agedN++
	} else {
		s.full.Mut(s.vmu).Delete(agedEnt(te))
		s.agedN--
	}
}

// agesAt returns the time after which a batch ready since t is aged, for
// an aging threshold at.
func agesAt(t int64, at time.Duration) int64 { return satAdd(t, int64(at)) }

// ripen moves the clock from from to to, later (see Planner.tick): it
// indexes the partial head batches whose timed entries' times the clock
// passes as ripe, and the batches that age in the move as aged, and sets
// nextRipe.
func (s *state) ripen(from, to int64) {
	s.clock = to
	next := int64(math.MaxInt64)
	var ripened, aged []timeEnt
	for l := range s.cfg.FinalLevel {
		s.timed.AscendGreaterOrEqual(timeEnt{level: l, t: from}, func(e timeEnt) bool {
			if e.level != l {
				return false
			}
			if e.t >= to {
				next = min(next, e.t)
				return false
			}
			ripened = append(ripened, e)
			return true
		})
		at := s.cfg.level(l).AgingThreshold
		if at <= 0 {
			continue
		}
		// Aged at to and not at from: ready since before to - at, and
		// not before from - at.
		s.aging.AscendGreaterOrEqual(timeEnt{level: l, t: satSub(from, int64(at))}, func(e timeEnt) bool {
			if e.level != l {
				return false
			}
			if !olderThan(e.t, to, at) {
				next = min(next, agesAt(e.t, at))
				return false
			}
			if !olderThan(e.t, from, at) {
				aged = append(aged, e)
			}
			return true
		})
	}
	for _, e := range aged {
		s.aged(e, true)
	}
	s.nextRipe = next
	// The ripened batches that age get their aging entries, aged if they
	// are at to, or lowering nextRipe.
	for _, e := range ripened {
		s.ready(e, s.levelOf(e.tenant, e.level), true)
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
