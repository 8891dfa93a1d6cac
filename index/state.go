package index

import (
	"fmt"
	"math/bits"
	"strings"
	"time"

	"github.com/google/btree"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/internal/dups"
	"github.com/compactkit/compactkit/internal/ident"
	"github.com/compactkit/compactkit/internal/namekey"
)

// smallDegree is the degree of the google/btree trees: the run list, the
// names, and the tombstone and result trees (a node holds up to
// 2×degree-1 items). The live blocks by ID and the runs' blocks are leaf
// sets (leaves.go).
const smallDegree = 16

// block is the stored form of a live block: 48 bytes with what searches,
// scans and filters read (ID, time range, shard, tenant), and its level,
// size and datasets packed in a few bytes (see appendPacked); the ID's
// bytes and the packed bytes follow the block in its allocation (see
// newBlock). It is immutable once built: views share block pointers with
// the index. What outlives the block (a tombstone, a deletion record)
// copies its ID.
type block struct {
	id      string
	minTime int64
	maxTime int64
	shard   uint32
	tenant  uint32 // name ID; 0 for a multi-tenant segment
	// ext points to the packed level, size and datasets (nil if all are
	// zero or none): a pointer instead of a slice header saves 16 bytes
	// per block.
	ext *byte
}

// spanClass is the number of bits of the block's span MaxTime-MinTime: a
// block of class c spans less than 2^c nanoseconds. The time index keeps one
// run per (tenant, class), ordered by MinTime, so a block of class c
// overlapping [from, to] has MinTime in [from-(2^c-1), to]: a range scan per
// run touches only the matching blocks and near misses of the same class.
func spanClass(minTime, maxTime int64) uint8 {
	return uint8(bits.Len64(uint64(maxTime) - uint64(minTime)))
}

// classLower returns the smallest MinTime a block of class c may have and
// still overlap a range starting at from.
func classLower(c uint8, from int64) int64 {
	if c >= 64 {
		return minInt64
	}
	d := uint64(1)<<c - 1
	l := from - int64(d)
	if l > from { // overflow
		return minInt64
	}
	return l
}

// Trees whose keys mostly arrive in ascending order (block IDs are
// typically time-ordered ULIDs; blocks arrive roughly in time order; the
// tombstones of their replacement follow, and release times only grow) are
// ordered descending: new items then land at the front, and google/btree's
// middle split leaves behind freshly allocated, nearly full nodes instead of
// half-empty ones, which halves the memory per item.

// idKeyBytes is the number of bytes of an ID its key holds.
const idKeyBytes = 9

// idKey returns the first 9 bytes of s, 7 bits each, zero-padded. An ID's
// bytes are printable ASCII, which 7 bits hold, unless it has UTF-8 (see
// ident.ValidateID): a byte of 0x7f or more ends the key (it counts as
// 0x7f, the bytes after it as 0). Comparing keys orders like comparing the
// strings wherever the keys differ, so search trees compare keys inline and
// dereference the string only on ties; 9 bytes cover a ULID's time to
// 8 ms, and the "b%08d" IDs of the benchmarks whole.
func idKey(s string) uint64 {
	var k uint64
	end := false
	for i := range idKeyBytes {
		k <<= 7
		if i < len(s) && !end {
			c := s[i]
			if c >= 0x7f {
				c, end = 0x7f, true
			}
			k |= uint64(c)
		}
	}
	return k
}

// idItem is an entry of the ID set, with its ID's key inline (idKey): a
// live block (b), or a mark (t): the pending tombstone of a record's
// source other than its lead. A replaced block's entry stays where it was,
// marked, instead of leaving the ID set for the tombstone set (see
// Index.newRecord), and leaves when the tombstone is confirmed. Exactly one
// of b and t is set; only entries with b are live.
type idItem struct {
	k uint64 // idKey(id)
	b *block
	t *tomb
}

func newIDItem(b *block) idItem { return idProbe(b.id, b) }

// idProbe returns the item of ID id for block b (a scratch block to search
// with, whose id the caller sets to id).
func idProbe(id string, b *block) idItem { return idItem{k: idKey(id), b: b} }

// markOf returns the ID set's mark for t, a record's source.
func markOf(t *tomb) idItem { return idItem{k: t.k, t: t} }

// id returns the ID of the entry: its block's, or its mark's target.
func (it idItem) id() string {
	if it.b != nil {
		return it.b.id
	}
	return it.t.target
}

// lessID orders the ID set by ID.
func lessID(a, b idItem) bool {
	if a.k != b.k {
		return a.k < b.k
	}
	return a.id() < b.id()
}

// idOps is the leaf-set order of the live blocks by ID.
func idOps() leafOps[idItem] { return leafOps[idItem]{less: lessID, key: keyID, max: leafMax} }

// ids returns the operations of s's ID set: with the flat copy of its
// bounds in the index's own state.
func (s *state) ids() leafOps[idItem] {
	o := idOps()
	o.f = s.idFlat
	return o
}

func keyID(it idItem) uint64 { return it.k }

// titem is a block's entry in a run of the time index, with its MinTime
// inline so that searches and scans order it without dereferencing the
// block: 16 bytes a block and run. A scan reads the block's MaxTime
// through b, as it reads the blocks it returns.
type titem struct {
	minTime int64
	b       *block
}

// lessTItem orders a run by (MinTime, ID).
func lessTItem(a, b titem) bool {
	if a.minTime != b.minTime {
		return a.minTime < b.minTime
	}
	return a.b.id < b.b.id
}

// runOps is the leaf-set order of a run's blocks.
func runOps() leafOps[titem] { return leafOps[titem]{less: lessTItem, key: keyTItem, max: leafMax} }

// keyTItem maps MinTime to an unsigned integer in the same order.
func keyTItem(it titem) uint64 { return uint64(it.minTime) ^ 1<<63 }

// run holds the live blocks of one tenant and span class, in time order.
// A multi-tenant segment appears in a run of each of its datasets' tenants.
//
// Runs are copy-on-write at three levels: the tree of runs is frozen for
// views like every tree (lazy.go); a run shared with a view (gen older than
// the index's generation, see wRuns) is replaced by a clone before the
// index mutates it; and so is a leaf of its blocks (leaves.go), under the
// same generation.
type run struct {
	tenant uint32                        // name ID of the tenant (see block.tenants)
	class  uint8                         // span class (see spanClass)
	gen    uint64                        // the index generation that made this copy
	items  *btree.BTreeG[leafRef[titem]] // the run's blocks, a leaf set
	n      int                           // the number of blocks
}

func lessRun(a, b *run) bool {
	return a.tenant < b.tenant || a.tenant == b.tenant && a.class < b.class
}

// nameEntry maps an interned name to its ID.
type nameEntry struct {
	name string
	id   uint32
}

func lessName(a, b nameEntry) bool { return a.name < b.name }

// tkey identifies a tombstone (and a deletion record). Build it with
// newKey.
type tkey struct {
	kind   ck.TombstoneKind
	k      uint64 // idKey(target)
	target string
}

func newKey(kind ck.TombstoneKind, target string) tkey {
	return tkey{kind: kind, k: idKey(target), target: target}
}

func (k tkey) less(o tkey) bool {
	if k.kind != o.kind {
		return k.kind < o.kind
	}
	if k.k != o.k {
		return k.k < o.k
	}
	return k.target < o.target
}

func (k tkey) tombstone() ck.Tombstone { return ck.Tombstone{Kind: k.kind, Target: k.target} }

// fold returns the kind and the target's key without its last byte (the
// target's first 8 bytes) in one integer, in the order of tkey.less.
func (k tkey) fold() uint64 { return uint64(k.kind)<<56 | k.k>>7 }

// tomb is a pending tombstone: one object to delete, standing alone or
// as a source of a record. A tomb in the trees is never modified (views
// share it): a change of holder replaces it with a copy.
//
// The sources of a record share its times and index, and point at it
// (rec). The record's holder is the job of its lead tomb (the tomb of its
// first source); the other sources' job stays empty, and a change of
// holder replaces the lead tomb only.
type tomb struct {
	tkey
	created int64   // log time of creation
	release int64   // log time from which the cleanup delay has passed
	index   uint64  // index of the entry that created it
	job     string  // holder; empty while unattached (and in a record's other sources)
	rec     *record // the record the tomb is a source of; nil if it stands alone
}

// record is a replacement's tombstone record: its sources, released,
// attached, detached and confirmed together. It is never modified.
type record struct {
	srcs []tomb // the sources, sorted by key; srcs[0] is the lead
}

// size returns the number of objects t stands for when it is a lead: its
// record's sources, or 1.
func (t *tomb) size() int {
	if t.rec != nil {
		return len(t.rec.srcs)
	}
	return 1
}

// appendObjects appends the objects the lead tomb t stands for (its
// record's sources in key order, or t itself) to out.
func (t *tomb) appendObjects(out []ck.Tombstone) []ck.Tombstone {
	if t.rec == nil {
		return append(out, t.tombstone())
	}
	for i := range t.rec.srcs {
		out = append(out, t.rec.srcs[i].tombstone())
	}
	return out
}

// tombItem is a pending tombstone's entry in the tree by key, with its
// key's first bytes inline (fold), so that a search dereferences a tomb
// only on ties.
type tombItem struct {
	f uint64 // t.fold()
	t *tomb
}

func newTombItem(t *tomb) tombItem { return tombProbe(t.tkey, t) }

// tombProbe returns the item of key k for tomb t (a scratch tomb to search
// with, whose key the caller sets to k).
func tombProbe(k tkey, t *tomb) tombItem { return tombItem{f: k.fold(), t: t} }

// lessTomb orders tombstones by (kind, target).
func lessTomb(a, b tombItem) bool {
	if a.f != b.f {
		return a.f < b.f
	}
	return a.t.tkey.less(b.t.tkey)
}

// tombOps is the leaf-set order of the pending tombstones, keyed by fold.
func tombOps() leafOps[tombItem] {
	return leafOps[tombItem]{less: lessTomb, key: func(it tombItem) uint64 { return it.f }, max: leafMax}
}

// poolKey orders unattached tombstones and records for release: by
// (release, created, kind, target), a record by its lead's key. Release
// times never decrease with creation time (see Index.nextRelease), so this
// order is also sorted by creation time, the releasable ones form a prefix
// of it, and new ones come last.
type poolKey struct {
	release int64
	created int64
	tkey
	rec *record // the record whose lead this is; nil for a tombstone that stands alone
}

// newPoolKey returns the pool entry of the lead tomb t.
func newPoolKey(t *tomb) poolKey {
	return poolKey{release: t.release, created: t.created, tkey: t.tkey, rec: t.rec}
}

// size returns the number of objects the entry stands for.
func (p poolKey) size() int {
	if p.rec != nil {
		return len(p.rec.srcs)
	}
	return 1
}

// cmpKey and cmpPool are the orders of tombstone keys and of the pool as
// comparisons.
var (
	cmpKey  = cmpOf(tkey.less)
	cmpPool = cmpOf(poolKey.before)
)

// cmpOf turns a strict order into a comparison (for slices.SortFunc).
func cmpOf[T any](less func(a, b T) bool) func(a, b T) int {
	return func(a, b T) int {
		switch {
		case less(a, b):
			return -1
		case less(b, a):
			return 1
		}
		return 0
	}
}

// before reports whether p comes before o in release order.
func (p poolKey) before(o poolKey) bool {
	if p.release != o.release {
		return p.release < o.release
	}
	if p.created != o.created {
		return p.created < o.created
	}
	return p.tkey.less(o.tkey)
}

// poolOps is the leaf-set order of the unattached tombstones (release
// order), keyed by release time.
func poolOps() leafOps[poolKey] {
	return leafOps[poolKey]{less: poolKey.before, key: keyPool, max: leafMax}
}

func keyPool(p poolKey) uint64 { return uint64(p.release) ^ 1<<63 }

// heldKey records that job holds a tombstone or a record (by its lead's
// key).
type heldKey struct {
	job string
	tkey
}

func lessHeld(a, b heldKey) bool {
	if a.job != b.job {
		return a.job < b.job
	}
	return a.tkey.less(b.tkey)
}

// goneRec records a confirmed deletion: the ID (or prefix) is refused
// until at + DedupHorizon.
type goneRec struct {
	tkey
	at int64
}

func lessGone(a, b goneRec) bool { return a.tkey.less(b.tkey) }

// result is the recorded outcome of a replacement, kept until
// CompletedRetention after at so that a replayed completion gets it again.
type result struct {
	job   namekey.Name  // the attempt: job name (see internal/namekey)
	token fencing.Token // and fencing token
	index uint64        // index of the entry that applied or refused it
	at    int64         // log time it was recorded
	// applied tells whether the replacement was applied; if not, reason
	// and detail say why (ReplaceResult.Reason, Detail) and orphan whether
	// the attempt's prefix was tombstoned (ReplaceResult.Orphan).
	applied bool
	orphan  bool
	reason  Refusal
	detail  string
	// missing and surviving are the sources that were not live, and those
	// that were, when the replacement was refused (sorted, distinct).
	missing   []string
	surviving []string
}

func lessResult(a, b *result) bool {
	c := a.job.Compare(b.job)
	return c < 0 || c == 0 && a.token < b.token
}

// state is everything a View needs: copy-on-write trees and scalars. The
// index owns one state; View clones it in O(1).
type state struct {
	cfg Config

	// The trees, cloned lazily for views (lazy.go): the index mutates
	// them through mut (wRuns for runs).
	byID   lazy[leafRef[idItem]] // live blocks and marks by ID, a leaf set (leaves.go)
	blocks int                   // the number of live blocks
	runs   lazy[*run]            // the time index: runs by (tenant, class)
	pivot  *block                // an empty block, never mutated, for search keys
	nameID lazy[nameEntry]       // interned tenant and dataset names by name
	names  []string              // the interned names by ID; append-only, names[0] == ""
	// idFlat is the flat copy of byID's bounds (leaves.go) in the index's
	// own state; nil in a view's.
	idFlat *flat[idItem]

	tombs    lazy[leafRef[tombItem]] // the pending tombstones by key but the marks (records' sources after the lead), a leaf set
	ntombs   int                     // the number of pending tombstones (objects)
	pool     lazy[leafRef[poolKey]]  // unattached tombstones and records in release order, a leaf set
	pooled   int                     // the number of unattached tombstones (objects)
	head     poolKey                 // the pool's first entry, valid while pooled > 0 (see View.first)
	held     lazy[heldKey]           // attached tombstones and records by job
	nrecs    int                     // the number of pending records
	nrecSrcs int                     // the number of their sources
	gone     lazy[goneRec]           // confirmed deletions by key
	results  lazy[*result]           // replacement results by (job, token)

	clock     int64 // latest log time seen by a mutation
	floor     int64 // latest release time given to a tombstone
	wmSet     bool  // a reader watermark was recorded (SetWatermark)
	watermark int64 // the oldest reader's start, capped at the log time it was recorded

	// Counters (Stats): replacements applied and refused, and blocks
	// refused by refusedID (live, tombstoned or recently deleted IDs, and
	// IDs under an orphaned or recently deleted prefix).
	applied, refused, duplicates uint64
}

func newState(cfg Config) state {
	return state{
		cfg:     cfg,
		byID:    lazy[leafRef[idItem]]{BTreeG: idOps().newTree()},
		idFlat:  new(flat[idItem]),
		runs:    lazy[*run]{BTreeG: btree.NewG(smallDegree, lessRun)},
		pivot:   &block{},
		nameID:  lazy[nameEntry]{BTreeG: btree.NewG(smallDegree, lessName)},
		names:   []string{""},
		tombs:   lazy[leafRef[tombItem]]{BTreeG: tombOps().newTree()},
		pool:    lazy[leafRef[poolKey]]{BTreeG: poolOps().newTree()},
		held:    lazy[heldKey]{BTreeG: btree.NewG(smallDegree, lessHeld)},
		gone:    lazy[goneRec]{BTreeG: btree.NewG(smallDegree, lessGone)},
		results: lazy[*result]{BTreeG: btree.NewG(smallDegree, lessResult)},
	}
}

func (s *state) lookupName(name string) (uint32, bool) {
	if name == "" {
		return 0, true
	}
	e, ok := s.nameID.Get(nameEntry{name: name})
	return e.id, ok
}

// get finds the live block with this ID. pivot is a scratch block the
// caller owns (nil allocates one).
func (s *state) get(id string, pivot *block) (*block, bool) {
	it, _ := s.entry(id, pivot)
	return it.b, it.b != nil
}

// entry finds the ID set's entry for this ID: a live block or a mark.
// pivot is as for get.
func (s *state) entry(id string, pivot *block) (idItem, bool) {
	it, _, _, ok := s.entryAt(id, pivot)
	return it, ok
}

// entryAt is entry that also returns where the entry is: its leaf and
// position in it.
func (s *state) entryAt(id string, pivot *block) (idItem, *leaf[idItem], int, bool) {
	if pivot == nil {
		pivot = &block{}
	}
	pivot.id = id
	l, i, ok := s.ids().find(s.byID.BTreeG, idProbe(id, pivot))
	pivot.id = ""
	if !ok {
		return idItem{}, nil, 0, false
	}
	return l.items[i], l, i, true
}

// live reports whether a block with this ID is live.
func (x *Index) live(id string) bool {
	_, ok := x.s.get(id, x.pivot)
	return ok
}

// meta rebuilds the BlockMeta of b.
func (s *state) meta(b *block) ck.BlockMeta {
	return s.metaInto(b, nil)
}

// metaInto is meta taking the datasets from buf (allocating if it is too
// short); the result's Datasets has no spare capacity.
func (s *state) metaInto(b *block, buf []ck.DatasetMeta) ck.BlockMeta {
	e := b.unpack()
	m := ck.BlockMeta{
		ID:      b.id,
		Tenant:  s.names[b.tenant],
		Shard:   b.shard,
		Level:   e.level,
		MinTime: b.minTime,
		MaxTime: b.maxTime,
		Size:    e.size,
	}
	if e.nds > 0 {
		if len(buf) < int(e.nds) {
			buf = make([]ck.DatasetMeta, e.nds)
		}
		m.Datasets = buf[:e.nds:e.nds]
		var tmp [8]dataset
		for i, d := range b.appendDatasets(tmp[:0]) {
			m.Datasets[i] = ck.DatasetMeta{
				Tenant:  s.names[d.tenant],
				Name:    s.names[d.name],
				Size:    d.size,
				Records: d.records,
				MinTime: d.minTime,
				MaxTime: d.maxTime,
			}
		}
	}
	return m
}

// releasable reports whether a tombstone created at created with release
// time release may be released at now (attachment aside).
//
// The rule: the cleanup delay has passed (now >= release), and either no
// watermark was ever recorded, or the recorded watermark (the start time of
// the oldest reader in flight when it was reported) is after the
// tombstone's creation (created < watermark), or ReaderTimeout > 0 and
// now >= created + ReaderTimeout. Both conditions only get easier as
// created gets smaller, which makes the releasable tombstones a prefix of
// the pool order.
func (s *state) releasable(created, release, now int64) bool {
	if now < release {
		return false
	}
	return s.readersDone(created, now)
}

func (s *state) readersDone(created, now int64) bool {
	if !s.wmSet || created < s.watermark {
		return true
	}
	return s.cfg.ReaderTimeout > 0 && now >= addSat(created, s.cfg.ReaderTimeout)
}

// liveUnder reports whether a live block's object lies under prefix.
func (s *state) liveUnder(prefix string) bool {
	p := strings.TrimPrefix(prefix, ck.BlockPrefix)
	found := false
	s.ids().ascendFrom(s.byID.BTreeG, idProbe(p, &block{id: p}), func(it idItem) bool {
		found = it.b != nil && strings.HasPrefix(it.b.id, p)
		return !found && strings.HasPrefix(it.id(), p) // past marks under p
	})
	return found
}

// goneUntil returns the log time until which the deletion record of k
// refuses it, if there is one.
func (s *state) goneUntil(k tkey) (int64, bool) {
	g, ok := s.gone.Get(goneRec{tkey: k})
	if !ok {
		return 0, false
	}
	return addSat(g.at, s.cfg.DedupHorizon), true
}

// getTomb returns the pending tombstone with key k. probe is a scratch
// tomb the caller owns (nil allocates one).
func (s *state) getTomb(k tkey, probe *tomb) (*tomb, bool) {
	if probe == nil {
		probe = &tomb{}
	}
	t, ok := s.inTombSet(k, probe)
	if !ok && k.kind == ck.TombstoneBlock {
		// A record's source other than its lead: a mark in the ID set.
		probe.tkey = k
		m, _ := s.ids().get(s.byID.BTreeG, markOf(probe))
		probe.tkey = tkey{}
		t, ok = m.t, m.t != nil
	}
	return t, ok
}

// inTombSet returns the tombstone with key k if the tombstone set holds
// it: getTomb without the marks. probe is as for getTomb, but not nil.
func (s *state) inTombSet(k tkey, probe *tomb) (*tomb, bool) {
	probe.tkey = k
	it, ok := tombOps().get(s.tombs.BTreeG, tombProbe(k, probe))
	probe.tkey = tkey{}
	return it.t, ok
}

// holder returns the tomb that carries t's holder: the lead of t's record
// (t itself if it is the lead or stands alone). probe is as for getTomb.
func (s *state) holder(t *tomb, probe *tomb) *tomb {
	if t.rec == nil || t.tkey == t.rec.srcs[0].tkey {
		return t
	}
	lead, _ := s.getTomb(t.rec.srcs[0].tkey, probe)
	return lead
}

// refusedID explains why a block with this ID may not (re-)enter the index
// at now, or returns "" if it may.
func (x *Index) refusedID(id string, now int64) string {
	s, pivot, tprobe := &x.s, x.pivot, x.tprobe
	// One search of the ID set for both a live block and a mark.
	if it, ok := s.entry(id, pivot); ok && it.b != nil {
		return "live"
	} else if ok {
		return "tombstoned"
	}
	bk := newKey(ck.TombstoneBlock, id)
	if _, ok := s.inTombSet(bk, tprobe); ok {
		return "tombstoned"
	}
	if until, ok := s.goneUntil(bk); ok && now < until {
		return "deleted less than the deduplication horizon ago"
	}
	if len(x.orphans) == 0 && !s.anyGonePrefix() {
		return ""
	}
	// Every ancestor prefix of the object key, from "blocks/" down.
	key := ck.ObjectKey(id)
	for i := len(ck.BlockPrefix) - 1; i < len(key); i++ {
		if key[i] != '/' {
			continue
		}
		pk := newKey(ck.TombstonePrefix, key[:i+1])
		if x.orphaned(pk.target) {
			return "under orphaned prefix " + pk.target
		}
		if until, ok := s.goneUntil(pk); ok && now < until {
			return "under prefix " + pk.target + " deleted less than the deduplication horizon ago"
		}
	}
	return ""
}

// orphaned reports whether a prefix tombstone for prefix is pending.
func (x *Index) orphaned(prefix string) bool {
	_, ok := x.orphans[prefix]
	return ok
}

// anyGonePrefix reports whether a prefix's deletion record is kept.
// Prefix keys sort after every block's (the kind comes first), so one
// search from the least prefix key finds one if there is one.
func (s *state) anyGonePrefix() bool {
	found := false
	s.gone.AscendGreaterOrEqual(goneRec{tkey: tkey{kind: ck.TombstonePrefix}}, func(goneRec) bool {
		found = true
		return false
	})
	return found
}

// durationOf is a helper for snapshot headers.
func durationOf(v int64) time.Duration { return time.Duration(v) }

// validName checks a tenant or dataset name with the root package's rules,
// by validating a minimal block that uses it as both.
func validName(name string) error {
	b := ck.BlockMeta{ID: "x", Tenant: name, Datasets: []ck.DatasetMeta{{Name: name}}}
	return b.Validate()
}

// checkBlock reports whether b with the size and the datasets ds, built
// from decoded columns whose names were checked by validName, satisfies
// compactkit.BlockMeta.Validate. It applies the same rules without building
// a BlockMeta, and without allocating: Validate allocates its error context
// eagerly, which would dominate restoring a million blocks. The
// equivalence is a tested property (TestCheckBlockMatchesValidate).
func (x *Index) checkBlock(b *block, size int64, ds []dataset) error {
	if err := ident.ValidateID(b.id); err != nil {
		return fmt.Errorf("block: %w", err)
	}
	switch {
	case b.minTime > b.maxTime:
		return fmt.Errorf("block %s: min time %d after max time %d: %w", b.id, b.minTime, b.maxTime, ident.ErrTimeRange)
	case size < 0:
		return fmt.Errorf("block %s: size %d: %w", b.id, size, ident.ErrNegative)
	case b.tenant == 0 && len(ds) == 0:
		return fmt.Errorf("block %s: no tenant and no datasets: %w", b.id, ident.ErrInconsistent)
	}
	eff := func(d *dataset) uint32 {
		if d.tenant != 0 {
			return d.tenant
		}
		return b.tenant
	}
	type dsKey struct{ tenant, name uint32 }
	var seen dups.Tracker[dsKey]
	for i := range ds {
		d := &ds[i]
		switch {
		case d.name == 0:
			return fmt.Errorf("block %s: dataset without a name: %w", b.id, ident.ErrEmptyID)
		case b.tenant == 0 && d.tenant == 0:
			return fmt.Errorf("block %s: dataset %s: no tenant in a multi-tenant block: %w", b.id, x.s.names[d.name], ident.ErrInconsistent)
		case b.tenant != 0 && d.tenant != 0 && d.tenant != b.tenant:
			return fmt.Errorf("block %s: dataset %s: tenant of another block: %w", b.id, x.s.names[d.name], ident.ErrInconsistent)
		case d.size < 0 || d.records < 0:
			return fmt.Errorf("block %s: dataset %s: negative size or records: %w", b.id, x.s.names[d.name], ident.ErrNegative)
		case d.minTime > d.maxTime || d.minTime < b.minTime || d.maxTime > b.maxTime:
			return fmt.Errorf("block %s: dataset %s: range [%d, %d] invalid in [%d, %d]: %w", b.id, x.s.names[d.name], d.minTime, d.maxTime, b.minTime, b.maxTime, ident.ErrTimeRange)
		}
		// A repeated (tenant, name): pairwise below a few datasets, which
		// allocates nothing, and through a set beyond.
		dup := false
		if len(ds) <= 16 {
			k := dsKey{eff(d), d.name}
			for j := range i {
				if (dsKey{eff(&ds[j]), ds[j].name}) == k {
					dup = true
					break
				}
			}
		} else {
			dup = seen.Seen(dsKey{eff(d), d.name})
		}
		if dup {
			return fmt.Errorf("block %s: dataset %s appears twice: %w", b.id, x.s.names[d.name], ident.ErrInconsistent)
		}
	}
	return nil
}
