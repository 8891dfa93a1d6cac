package index

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"

	ck "github.com/compactkit/compactkit"
)

// Index is the replicated catalogue of live blocks, with atomic
// replacement, tombstones, deduplication and retention.
//
// An Index is mutated only by the state machine's Apply goroutine; every
// mutation takes the entry's effective log time now (the index keeps the
// largest now it has seen, so time never goes backwards inside it). Readers
// on other goroutines use a [View], opened with [Index.View] under the
// caller's lock.
type Index struct {
	s state

	nameMap map[string]uint32 // fast intern lookup for Apply; s.nameID serves views

	// levels holds the live blocks' statistics by (tenant, level), for
	// Stats (not snapshotted, rebuilt on restore).
	levels map[levelKey]*LevelStats
	// lastLevel is the entry of levels that count found last, and
	// lastKey its key: the blocks a replacement or a command counts
	// share their tenant and level.
	lastLevel *LevelStats
	lastKey   levelKey
	// orphans holds the targets of the pending prefix tombstones (Apply
	// only; rebuilt on restore): refusedID looks an output's ancestors up
	// in it, and Stats counts it.
	orphans map[string]struct{}

	pivot  *block // scratch search keys for the Apply goroutine
	tprobe *tomb
	rprobe *result
	// srcs is Replace's scratch list of the sources it found, emptied
	// after each replacement so that it keeps no block alive.
	srcs []source

	// records makes Replace tombstone a replacement's sources as one
	// record (see SetRecords).
	records bool

	// gen moves on when the tree of runs is frozen for a view (see wRuns):
	// a run or a leaf of its blocks whose gen is older may be shared with
	// a view and is cloned before it is mutated. idGen does the same for
	// the leaves of the live blocks by ID (see wByID).
	gen     uint64
	idGen   uint64
	poolGen uint64 // likewise for the leaves of the pool (see wPool)
	tombGen uint64 // and of the pending tombstones (see wTombs)
	// vmu guards the slots of the trees, shared with views (lazy.go).
	vmu *sync.Mutex
	// runMap finds the runs of s.runs without a tree search (Apply only).
	runMap map[runKey]*run

	// Expiry queues in record order (record times never decrease). An entry
	// whose record was since replaced or deleted is skipped.
	goneQ queue[goneRec]
	resQ  queue[*result]
}

type levelKey struct {
	tenant uint32
	level  uint32
}

// New returns an empty index with the given configuration.
func New(cfg Config) (*Index, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return newIndex(cfg), nil
}

func newIndex(cfg Config) *Index {
	return &Index{
		s:       newState(cfg),
		nameMap: map[string]uint32{"": 0},
		pivot:   &block{},
		tprobe:  &tomb{},
		rprobe:  &result{},
		runMap:  make(map[runKey]*run),
		orphans: make(map[string]struct{}),
		vmu:     new(sync.Mutex),
		levels:  make(map[levelKey]*LevelStats),
	}
}

// SetConfig replaces the configuration. Call it only when applying a
// configuration command. Tombstones already created keep their release
// times; a shorter cleanup delay never lets a newer tombstone be released
// before an older one (see [View.Tombstones]).
func (x *Index) SetConfig(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	x.s.cfg = cfg
	return nil
}

// SetRecords chooses how [Index.Replace] tombstones the sources of the
// replacements it applies from now on: as one record listing them (on), or
// as one tombstone each (off). Tombstones and records already pending stay
// what they are. The state machine sets it from its cluster version before
// every replacement it applies (records from version 6), so it is not part
// of the snapshot.
func (x *Index) SetRecords(on bool) { x.records = on }

// advance moves the index clock to now if now is later, and returns the
// effective time.
func (x *Index) advance(now int64) int64 {
	if now > x.s.clock {
		x.s.clock = now
	}
	return x.s.clock
}

// intern returns the ID of name, adding it if needed.
func (x *Index) intern(name string) uint32 {
	if id, ok := x.nameMap[name]; ok {
		return id
	}
	id := uint32(len(x.s.names))
	x.s.names = append(x.s.names, name)
	x.nameMap[name] = id
	x.s.nameID.Mut(x.vmu).ReplaceOrInsert(nameEntry{name: name, id: id})
	return id
}

// Add adds a block ingested at the entry e, applied at log time now.
//
// Add is idempotent: a block whose ID is live, tombstoned, deleted less
// than [Config.DedupHorizon] ago, or lies under an orphaned attempt prefix
// is refused with an error wrapping [ErrDuplicate], so a delayed ingest
// retry cannot resurrect a deleted block. Malformed metadata is refused with
// the error of [compactkit.BlockMeta.Validate]. On error nothing changes
// except the count of refused duplicates in [Stats].
func (x *Index) Add(e ck.Entry, now int64, b *ck.BlockMeta) error {
	now = x.advance(now)
	if err := b.Validate(); err != nil {
		return fmt.Errorf("index: add at entry %d: %w", e.Index, err)
	}
	if why := x.refusedID(b.ID, now); why != "" {
		x.s.duplicates++
		return fmt.Errorf("index: add block %s at entry %d: %s: %w", b.ID, e.Index, why, ErrDuplicate)
	}
	x.insert(x.build(b))
	return nil
}

// build converts validated metadata into a stored block.
func (x *Index) build(m *ck.BlockMeta) *block {
	f := block{
		id:      m.ID,
		minTime: m.MinTime,
		maxTime: m.MaxTime,
		shard:   m.Shard,
		tenant:  x.intern(m.Tenant),
	}
	var buf [8]dataset
	ds := buf[:0]
	for i := range m.Datasets {
		d := &m.Datasets[i]
		ds = append(ds, dataset{
			tenant:  x.intern(d.Tenant),
			name:    x.intern(d.Name),
			size:    d.Size,
			records: d.Records,
			minTime: d.MinTime,
			maxTime: d.MaxTime,
		})
	}
	return newBlock(f, m.Level, m.Size, ds)
}

// insert makes b live: it must not be live already.
func (x *Index) insert(b *block) {
	x.s.ids().insert(x.wByID(), x.idGen, newIDItem(b))
	x.s.blocks++
	c := spanClass(b.minTime, b.maxTime)
	var tb [4]uint32
	for _, t := range b.tenants(tb[:0]) {
		r := x.mutRun(t, c)
		runOps().insert(r.items, x.gen, titem{minTime: b.minTime, b: b})
		r.n++
	}
	// A stale deletion record (past its horizon) is forgotten, so that no
	// live block has one.
	if g := (goneRec{tkey: newKey(ck.TombstoneBlock, b.id)}); x.s.gone.Has(g) {
		x.s.gone.Mut(x.vmu).Delete(g)
	}
	x.count(b, 1)
}

// remove makes the live block b leave the index.
func (x *Index) remove(b *block) {
	x.s.ids().delete(x.wByID(), x.idGen, newIDItem(b))
	x.unlive(b)
}

// source is a live block a replacement found, with where the lookup
// found its entry in the ID set: leaf l, position at.
type source struct {
	b  *block
	l  *leaf[idItem]
	at int
}

// cmpSource orders sources by ID.
func cmpSource(a, b source) int { return strings.Compare(a.b.id, b.b.id) }

// retire makes the live block s.b leave the ID set as t, the pending
// tombstone of a record's source other than its lead: b's entry becomes
// t's mark (the caller takes b out of the time index, see unliveAll). The
// entry is replaced where the lookup found it
// when that leaf is the index's own (not shared with a view, see
// leaves.go) and still holds it there — no deletion from the ID set ran
// since the lookup — and found by a search otherwise.
func (x *Index) retire(s source, t *tomb) {
	tree := x.wByID() // first: it may move the generation on
	if l := s.l; l != nil && l.gen == x.idGen && s.at < len(l.items) && l.items[s.at].b == s.b {
		l.items[s.at] = markOf(t)
	} else {
		x.s.ids().insert(tree, x.idGen, markOf(t))
	}
	x.s.ntombs++
}

// unlive makes b leave the time index and the counts of live blocks.
func (x *Index) unlive(b *block) { x.unliveAll([]source{{b: b}}) }

// unliveAll makes the blocks of srcs (distinct) leave the time index and
// the counts of live blocks, with one pass over the leaves of each run
// they leave (see leafOps.deleteSorted).
func (x *Index) unliveAll(srcs []source) {
	type runItem struct {
		k  runKey
		it titem
	}
	var buf [64]runItem
	ris := buf[:0]
	var tb [4]uint32
	for _, s := range srcs {
		b := s.b
		x.s.blocks--
		c := spanClass(b.minTime, b.maxTime)
		for _, t := range b.tenants(tb[:0]) {
			ris = append(ris, runItem{runKey{t, c}, titem{minTime: b.minTime, b: b}})
		}
		x.count(b, -1)
	}
	slices.SortFunc(ris, func(a, b runItem) int {
		switch {
		case a.k.tenant != b.k.tenant:
			return cmp.Compare(a.k.tenant, b.k.tenant)
		case a.k.class != b.k.class:
			return cmp.Compare(a.k.class, b.k.class)
		case lessTItem(a.it, b.it):
			return -1
		case lessTItem(b.it, a.it):
			return 1
		}
		return 0
	})
	var ibuf [64]titem
	for i := 0; i < len(ris); {
		k := ris[i].k
		its := ibuf[:0]
		for ; i < len(ris) && ris[i].k == k; i++ {
			its = append(its, ris[i].it)
		}
		r := x.mutRun(k.tenant, k.class)
		runOps().deleteSorted(r.items, x.gen, its)
		r.n -= len(its)
		if r.n == 0 {
			x.wRuns().Delete(r)
			delete(x.runMap, k)
		}
	}
}

// mutRun returns the run of (tenant, class), creating it if needed, in a
// form the index may mutate: a run that may be shared with a view is
// replaced by a copy-on-write clone first.
func (x *Index) mutRun(tenant uint32, class uint8) *run {
	k := runKey{tenant, class}
	runs := x.wRuns() // first: it may move the generation on
	r := x.runMap[k]
	switch {
	case r == nil:
		r = &run{tenant: tenant, class: class, gen: x.gen, items: runOps().newTree()}
	case r.gen != x.gen:
		r = &run{tenant: tenant, class: class, gen: x.gen, items: r.items.Clone(), n: r.n}
	default:
		return r
	}
	runs.ReplaceOrInsert(r)
	x.runMap[k] = r
	return r
}

type runKey struct {
	tenant uint32
	class  uint8
}

func (x *Index) count(b *block, sign int64) {
	level, size := b.levelSize()
	k := levelKey{b.tenant, level}
	l := x.lastLevel
	if l == nil || x.lastKey != k {
		if l = x.levels[k]; l == nil {
			l = &LevelStats{Tenant: x.s.names[b.tenant], Level: level}
			x.levels[k] = l
		}
		x.lastLevel, x.lastKey = l, k
	}
	l.Blocks += sign
	l.Bytes += sign * size
	if l.Blocks == 0 {
		delete(x.levels, k)
		x.lastLevel = nil
	}
}

// View returns a read-only view of the index as it is now. It costs O(1)
// (the trees are cloned lazily, under the ownership rule of the package
// documentation; see [View.Close]) and may be used on another goroutine
// while the index is mutated, provided View itself is called where no
// mutation runs concurrently (under the caller's lock, or on the Apply
// goroutine).
func (x *Index) View() *View { return x.openView() }

// LevelStats counts the live blocks of one tenant and level.
type LevelStats struct {
	// Tenant is the blocks' tenant; empty for multi-tenant level-0
	// segments.
	Tenant string
	// Level is the compaction level.
	Level uint32
	// Blocks and Bytes count the blocks and their sizes.
	Blocks int64
	Bytes  int64
}

// Stats describes the index for observability.
type Stats struct {
	// Blocks and Bytes count every live block.
	Blocks int64
	Bytes  int64
	// Levels breaks the live blocks down by tenant and level, sorted by
	// (Tenant, Level).
	Levels []LevelStats
	// TombstonesPending counts unattached tombstones that are not yet
	// releasable at the index's log time (cleanup delay or reader watermark).
	TombstonesPending int
	// TombstonesReleasable counts unattached tombstones releasable at the
	// index's log time.
	TombstonesReleasable int
	// TombstonesAttached counts tombstones held by a job. The three
	// counts are of objects: a record counts its sources.
	TombstonesAttached int
	// Orphans counts prefix tombstones (outputs of attempts that ended
	// without commit), in any of the three states above.
	Orphans int
	// ReplacementsApplied and ReplacementsRefused count replacements,
	// replays excluded.
	ReplacementsApplied uint64
	ReplacementsRefused uint64
	// DuplicatesRefused counts blocks refused by [Index.Add] as
	// duplicates.
	DuplicatesRefused uint64
	// DeletionRecords counts remembered deletions (deduplication), and
	// Results the remembered replacement results.
	DeletionRecords int
	Results         int
}

// Stats returns the index's statistics. Releasability is judged at
// the latest log time the index has seen. Its cost grows with the number of (tenant, level) pairs and
// of releasable tombstones.
func (x *Index) Stats() Stats {
	st := Stats{
		TombstonesAttached:  x.s.ntombs - x.s.pooled,
		Orphans:             len(x.orphans),
		ReplacementsApplied: x.s.applied,
		ReplacementsRefused: x.s.refused,
		DuplicatesRefused:   x.s.duplicates,
		DeletionRecords:     x.s.gone.Len(),
		Results:             x.s.results.Len(),
	}
	st.Levels = make([]LevelStats, 0, len(x.levels))
	for _, l := range x.levels {
		st.Levels = append(st.Levels, *l)
		st.Blocks += l.Blocks
		st.Bytes += l.Bytes
	}
	slices.SortFunc(st.Levels, func(a, b LevelStats) int {
		return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Level, b.Level))
	})
	now := x.s.clock
	ascend(x.s.pool.BTreeG, func(p poolKey) bool {
		if !x.s.releasable(p.created, p.release, now) {
			return false
		}
		st.TombstonesReleasable += p.size()
		return true
	})
	st.TombstonesPending = x.s.pooled - st.TombstonesReleasable
	return st
}

// queue is a FIFO of records in the order they were made.
type queue[T any] struct {
	items []T
	head  int
}

func (q *queue[T]) push(v T) { q.items = append(q.items, v) }

func (q *queue[T]) peek() (T, bool) {
	if q.head == len(q.items) {
		var zero T
		return zero, false
	}
	return q.items[q.head], true
}

func (q *queue[T]) pop() {
	var zero T
	q.items[q.head] = zero
	q.head++
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	} else if q.head >= 1024 && q.head*2 >= len(q.items) {
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items, q.head = q.items[:n], 0
	}
}
