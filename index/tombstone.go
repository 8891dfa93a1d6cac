package index

import (
	"fmt"
	"slices"
	"unsafe"

	"github.com/google/btree"

	"github.com/compactkit/compactkit/internal/ident"

	ck "github.com/compactkit/compactkit"
)

// newTombs creates unattached tombstones that stand alone, with the keys
// ks (none pending) at the index clock, for the entry at index. They share
// one allocation, and enter the pool, where they come last in release
// order, in one append.
func (x *Index) newTombs(ks []tkey, index uint64) {
	if len(ks) == 0 {
		return
	}
	rel := x.nextRelease()
	detach(len(ks), func(i int) *string { return &ks[i].target })
	ts := make([]tomb, len(ks))
	var buf [32]poolKey
	pks := append(buf[:0], make([]poolKey, len(ks))...)
	tree := x.wTombs()
	for i, k := range ks {
		ts[i] = tomb{tkey: k, created: x.s.clock, release: rel, index: index}
		x.insertTomb(tree, &ts[i])
		pks[i] = newPoolKey(&ts[i])
	}
	slices.SortFunc(pks, cmpPool)
	poolOps().appendSorted(x.wPool(), x.poolGen, pks)
	x.setHead()
	x.s.pooled += len(pks)
}

// newRecord makes the live blocks srcs (distinct) leave the index as one
// unattached record of their tombstones, at the index clock, for the entry
// at index: one tomb per source, in one allocation, sorted by key; the
// lead enters the tombstone set and the pool, where it comes last in
// release order, and the other sources' entries in the ID set become their
// marks. srcs are sorted by ID (see cmpSource).
func (x *Index) newRecord(srcs []source, index uint64) {
	if len(srcs) == 0 {
		return
	}
	rel := x.nextRelease()
	rec := &record{srcs: make([]tomb, len(srcs))}
	for i, s := range srcs {
		rec.srcs[i] = tomb{tkey: newKey(ck.TombstoneBlock, s.b.id), created: x.s.clock, release: rel, index: index, rec: rec}
	}
	detach(len(rec.srcs), func(i int) *string { return &rec.srcs[i].target })
	// The marks first: they replace entries where the lookups found
	// them, which the lead's removal (a deletion, which may merge
	// leaves) would move. Then every source leaves the time index.
	for i := 1; i < len(srcs); i++ {
		x.retire(srcs[i], &rec.srcs[i])
	}
	x.s.ids().delete(x.wByID(), x.idGen, newIDItem(srcs[0].b))
	x.unliveAll(srcs)
	x.insertTomb(x.wTombs(), &rec.srcs[0])
	poolOps().appendSorted(x.wPool(), x.poolGen, []poolKey{newPoolKey(&rec.srcs[0])})
	x.setHead()
	x.s.pooled += len(srcs)
	x.s.nrecs++
	x.s.nrecSrcs += len(srcs)
}

// detach gives n strings, *target(0) to *target(n-1), bytes of their own,
// one allocation for all: tombstones and deletion records outlive the
// blocks they name, whose IDs live in the blocks' allocations (see
// newBlock).
func detach(n int, target func(i int) *string) {
	size := 0
	for i := range n {
		size += len(*target(i))
	}
	buf := make([]byte, 0, size) // room for all: the bytes never move
	for i := range n {
		if t := target(i); *t != "" {
			start := len(buf)
			buf = append(buf, *t...)
			*t = unsafe.String(&buf[start], len(*t))
		}
	}
}

// nextRelease returns the release time of tombstones created now: the
// clock plus the cleanup delay, but never earlier than the release time of
// any tombstone created before them. With a constant delay this changes
// nothing, and after the delay is shortened it keeps release order
// consistent with creation order (it only ever delays).
func (x *Index) nextRelease() int64 {
	x.s.floor = max(addSat(x.s.clock, x.s.cfg.CleanupDelay), x.s.floor)
	return x.s.floor
}

// insertTomb adds the new pending tomb t to tree (the index's, for
// mutation).
func (x *Index) insertTomb(tree *btree.BTreeG[leafRef[tombItem]], t *tomb) {
	tombOps().insert(tree, x.tombGen, newTombItem(t))
	x.s.ntombs++
	if t.kind == ck.TombstonePrefix {
		x.orphans[t.target] = struct{}{}
	}
}

// dropTomb removes the pending tombstone with key k for good, at log time
// now: its object is deleted, and a deletion record keeps it from
// re-entering the index for the deduplication horizon. marked says that it
// is a record's source other than its lead, whose entry is a mark in the
// ID set.
func (x *Index) dropTomb(k tkey, marked bool, now int64) {
	x.tprobe.tkey = k
	if marked {
		x.s.ids().delete(x.wByID(), x.idGen, markOf(x.tprobe))
	} else {
		tombOps().delete(x.wTombs(), x.tombGen, tombProbe(k, x.tprobe))
	}
	x.tprobe.tkey = tkey{}
	x.s.ntombs--
	if k.kind == ck.TombstonePrefix {
		delete(x.orphans, k.target)
	}
	g := goneRec{tkey: k, at: now}
	x.s.gone.Mut(x.vmu).ReplaceOrInsert(g)
	x.goneQ.push(g)
}

// unpool removes the unattached lead tomb t from the pool.
func (x *Index) unpool(t *tomb) {
	poolOps().delete(x.wPool(), x.poolGen, newPoolKey(t))
	x.setHead()
	x.s.pooled -= t.size()
}

// setHolder replaces the pending lead tomb t by a copy held by job (empty:
// unattached), and returns the copy.
func (x *Index) setHolder(t *tomb, job string) *tomb {
	c := *t
	c.job = job
	tombOps().insert(x.wTombs(), x.tombGen, newTombItem(&c))
	return &c
}

// AddOrphan tombstones an attempt's output prefix (see
// [compactkit.AttemptPrefix]) at log time now: the attempt ended without
// its outputs being committed. It is idempotent: an existing tombstone for
// the prefix is left as it is. An invalid prefix returns an error wrapping
// the root package's validation error; a prefix under which a live block
// lies returns an error wrapping [ErrLiveUnderPrefix] (deleting it would
// lose committed data). Nothing changes on error.
func (x *Index) AddOrphan(now int64, prefix string) error {
	x.advance(now)
	k := newKey(ck.TombstonePrefix, prefix)
	if err := k.tombstone().Validate(); err != nil {
		return fmt.Errorf("index: orphan: %w", err)
	}
	if x.orphaned(prefix) {
		return nil
	}
	if x.s.liveUnder(prefix) {
		return fmt.Errorf("index: orphan prefix %s: %w", prefix, ErrLiveUnderPrefix)
	}
	x.newTombs([]tkey{k}, 0)
	return nil
}

// Attach records, at log time now (the Apply of a job's creation), that job
// carries the given tombstones. A tombstone is accepted only if it exists,
// is unattached and is releasable at now. A record is attached whole: a
// source of it, given, stands for the record, whose sources are accepted
// together, in key order, at the position of the first one given. The
// accepted objects are returned in the given order (each at most once). A
// tombstone is attached to at most one job at a time. An invalid job name
// accepts nothing.
func (x *Index) Attach(now int64, job string, ts []ck.Tombstone) []ck.Tombstone {
	now = x.advance(now)
	if ident.ValidateJobName(job) != nil {
		return nil
	}
	var out []ck.Tombstone
	for _, t := range ts {
		cur, ok := x.s.getTomb(newKey(t.Kind, t.Target), x.tprobe)
		if !ok {
			continue
		}
		cur = x.s.holder(cur, x.tprobe)
		if cur.job != "" || !x.s.releasable(cur.created, cur.release, now) {
			continue
		}
		x.unpool(cur)
		x.setHolder(cur, job)
		x.s.held.Mut(x.vmu).ReplaceOrInsert(heldKey{job: job, tkey: cur.tkey})
		out = cur.appendObjects(out)
	}
	return out
}

// heldBy returns the lead keys of the tombstones and records job holds,
// in key order.
func (s *state) heldBy(job string) []tkey {
	var ks []tkey
	s.held.AscendGreaterOrEqual(heldKey{job: job}, func(h heldKey) bool {
		if h.job != job {
			return false
		}
		ks = append(ks, h.tkey)
		return true
	})
	return ks
}

// Confirm records, at log time now, the success of job: the objects its
// tombstones and records name are deleted, so the tombstones are removed
// for good and a deletion record keeps their IDs (or prefixes) from
// re-entering the index for [Config.DedupHorizon]. It returns how many
// objects were confirmed; confirming twice is harmless (the second call
// returns 0).
func (x *Index) Confirm(now int64, job string) int {
	now = x.advance(now)
	n := 0
	for _, k := range x.s.heldBy(job) {
		x.s.held.Mut(x.vmu).Delete(heldKey{job: job, tkey: k})
		cur, _ := x.s.getTomb(k, x.tprobe)
		if rec := cur.rec; rec != nil {
			for i := range rec.srcs {
				x.dropTomb(rec.srcs[i].tkey, i > 0, now)
			}
			x.s.nrecs--
			x.s.nrecSrcs -= len(rec.srcs)
			n += len(rec.srcs)
			continue
		}
		x.dropTomb(k, false, now)
		n++
	}
	return n
}

// Detach returns the tombstones and records held by job to the pool,
// unattached, for another job to carry: the job was evicted or cancelled,
// or its attempt will not report. It returns how many objects were
// detached. Tombstones keep their creation and release times.
func (x *Index) Detach(job string) int {
	n := 0
	for _, k := range x.s.heldBy(job) {
		x.s.held.Mut(x.vmu).Delete(heldKey{job: job, tkey: k})
		cur, _ := x.s.getTomb(k, x.tprobe)
		c := x.setHolder(cur, "")
		poolOps().insert(x.wPool(), x.poolGen, newPoolKey(c))
		x.setHead()
		x.s.pooled += c.size()
		n += c.size()
	}
	return n
}

// SetWatermark records, at log time now, the reader watermark: the start
// time (log time) of the oldest read in flight, as a replicated command from
// the hosts (the minimum over every host serving reads). A reader with
// nothing in flight reports now.
//
// The release rule: a tombstone created at log time c is releasable at now
// when now >= its release time (c plus the cleanup delay) and
//
//   - no watermark was ever recorded (the index then relies on the cleanup
//     delay alone, like Pyroscope's), or
//   - c < oldestReader: every read that started at or before the
//     replacement has finished, or
//   - ReaderTimeout > 0 and now >= c + ReaderTimeout: reads may not run
//     longer than that, so a watermark that stopped advancing (hosts that
//     stopped reporting) cannot hold a tombstone forever.
//
// oldestReader is clamped to now (a reader cannot have started in the
// future). A later watermark replaces the earlier one even if it is older;
// tombstones already attached to a job stay attached.
func (x *Index) SetWatermark(now int64, oldestReader int64) {
	now = x.advance(now)
	x.s.wmSet = true
	x.s.watermark = min(oldestReader, now)
}

// Expire forgets, at log time now, the deletion records older than
// [Config.DedupHorizon] and the replacement results older than
// [Config.CompletedRetention], and returns how many it forgot. It only frees
// memory: Add and Replace judge those horizons by time whether or not
// Expire ran, so calling it more or less often changes no decision.
func (x *Index) Expire(now int64) int {
	now = x.advance(now)
	n := 0
	for {
		g, ok := x.goneQ.peek()
		if !ok || now < addSat(g.at, x.s.cfg.DedupHorizon) {
			break
		}
		x.goneQ.pop()
		if cur, ok := x.s.gone.Get(g); ok && cur.at == g.at {
			x.s.gone.Mut(x.vmu).Delete(g)
			n++
		}
	}
	for {
		r, ok := x.resQ.peek()
		if !ok || now < addSat(r.at, x.s.cfg.CompletedRetention) {
			break
		}
		x.resQ.pop()
		if cur, ok := x.s.results.Get(r); ok && cur == r {
			x.s.results.Mut(x.vmu).Delete(r)
			n++
		}
	}
	return n
}

// TombstoneInfo is a tombstone with its state, for operators and tests.
// A source of a record shows the record's times, index and holder.
type TombstoneInfo struct {
	ck.Tombstone
	// Created is the log time the tombstone was created, and Index the
	// entry that created it (0 for orphans added by [Index.AddOrphan]).
	Created int64
	Index   uint64
	// ReleaseAt is when the cleanup delay has passed.
	ReleaseAt int64
	// Job is the job that holds it; empty while unattached.
	Job string
}

// info returns the state of t, whose holder is the job of h.
func (t *tomb) info(h *tomb) TombstoneInfo {
	return TombstoneInfo{Tombstone: t.tombstone(), Created: t.created, Index: t.index, ReleaseAt: t.release, Job: h.job}
}

func (s *state) tombstone(t ck.Tombstone) (TombstoneInfo, bool) {
	cur, ok := s.getTomb(newKey(t.Kind, t.Target), nil)
	if !ok {
		return TombstoneInfo{}, false
	}
	return cur.info(s.holder(cur, nil)), true
}

func (s *state) listTombstones(after ck.Tombstone, limit int) []TombstoneInfo {
	start := newKey(after.Kind, after.Target)
	var tombs, marks []*tomb
	collect := func(out *[]*tomb) func(*tomb) bool {
		return func(t *tomb) bool {
			if t.tkey == start && (after != ck.Tombstone{}) {
				return true
			}
			*out = append(*out, t)
			return limit <= 0 || len(*out) < limit
		}
	}
	// The tombstone set, and the marks of the ID set (block tombstones
	// only), each in key order, up to limit each; then merged.
	addTomb := collect(&tombs)
	tombOps().ascendFrom(s.tombs.BTreeG, tombProbe(start, &tomb{tkey: start}), func(it tombItem) bool { return addTomb(it.t) })
	if start.kind <= ck.TombstoneBlock {
		from := ""
		if start.kind == ck.TombstoneBlock {
			from = start.target
		}
		addMark := collect(&marks)
		s.ids().ascendFrom(s.byID.BTreeG, idProbe(from, &block{id: from}), func(it idItem) bool {
			return it.t == nil || addMark(it.t)
		})
	}
	var out []TombstoneInfo
	probe := &tomb{}
	for (len(tombs) > 0 || len(marks) > 0) && (limit <= 0 || len(out) < limit) {
		var t *tomb
		if len(marks) == 0 || len(tombs) > 0 && tombs[0].tkey.less(marks[0].tkey) {
			t, tombs = tombs[0], tombs[1:]
		} else {
			t, marks = marks[0], marks[1:]
		}
		out = append(out, t.info(s.holder(t, probe)))
	}
	return out
}
