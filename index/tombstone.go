package index

import (
	"fmt"
	"slices"

	"github.com/compactkit/compactkit/internal/ident"

	ck "github.com/compactkit/compactkit"
)

// newTombs creates unattached tombstones with the keys ks (none pending)
// at the index clock, for the entry at index. Their release time is
// the clock plus the cleanup delay, but never earlier than the release
// time of any tombstone created before them: with a constant delay this
// changes nothing, and after the delay is shortened it keeps release order
// consistent with creation order (it only ever delays). They share one
// allocation, and enter the pool, where they come last in release order,
// in one append.
func (x *Index) newTombs(ks []tkey, index uint64) {
	if len(ks) == 0 {
		return
	}
	rel := max(addSat(x.s.clock, x.s.cfg.CleanupDelay), x.s.floor)
	x.s.floor = rel
	ts := make([]tomb, len(ks))
	var buf [32]poolKey
	pks := append(buf[:0], make([]poolKey, len(ks))...)
	tree := x.wTombs()
	for i, k := range ks {
		ts[i] = tomb{tkey: k, created: x.s.clock, release: rel, index: index}
		tombOps().insert(tree, x.tombGen, newTombItem(&ts[i]))
		pks[i] = newPoolKey(&ts[i])
		if k.kind == ck.TombstonePrefix {
			x.orphans++
		}
	}
	slices.SortFunc(pks, func(a, b poolKey) int { return cmpKey(a.tkey, b.tkey) })
	poolOps().appendSorted(x.wPool(), x.poolGen, pks)
	x.s.pooled += len(pks)
	x.s.ntombs += len(ks)
}

func cmpKey(a, b tkey) int {
	switch {
	case a.less(b):
		return -1
	case b.less(a):
		return 1
	}
	return 0
}

// unpool removes the unattached tombstone t from the pool.
func (x *Index) unpool(t *tomb) {
	poolOps().delete(x.wPool(), x.poolGen, newPoolKey(t))
	x.s.pooled--
}

// setHolder replaces the pending tombstone t by a copy held by job (empty:
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
	if _, ok := x.s.getTomb(k, x.tprobe); ok {
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
// is unattached and is releasable at now; the accepted ones are returned in
// the given order (each at most once). A tombstone is attached to at most
// one job at a time. An invalid job name accepts nothing.
func (x *Index) Attach(now int64, job string, ts []ck.Tombstone) []ck.Tombstone {
	now = x.advance(now)
	if ident.ValidateJobName(job) != nil {
		return nil
	}
	var out []ck.Tombstone
	for _, t := range ts {
		k := newKey(t.Kind, t.Target)
		cur, ok := x.s.getTomb(k, x.tprobe)
		if !ok || cur.job != "" || !x.s.releasable(cur.created, cur.release, now) {
			continue
		}
		x.unpool(cur)
		x.setHolder(cur, job)
		x.s.held.Mut(x.vmu).ReplaceOrInsert(heldKey{job: job, tkey: k})
		out = append(out, t)
	}
	return out
}

// heldBy returns the keys of the tombstones job holds, in key order.
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
// tombstones name are deleted, so the tombstones are removed for good and
// a deletion record keeps their IDs (or prefixes) from re-entering the
// index for [Config.DedupHorizon]. It returns how many tombstones were
// confirmed; confirming twice is harmless (the second call returns 0).
func (x *Index) Confirm(now int64, job string) int {
	now = x.advance(now)
	ks := x.s.heldBy(job)
	for _, k := range ks {
		x.s.held.Mut(x.vmu).Delete(heldKey{job: job, tkey: k})
		x.tprobe.tkey = k
		tombOps().delete(x.wTombs(), x.tombGen, tombItem{f: k.fold(), t: x.tprobe})
		x.s.ntombs--
		x.tprobe.tkey = tkey{}
		if k.kind == ck.TombstonePrefix {
			x.orphans--
		}
		g := goneRec{tkey: k, at: now}
		x.s.gone.Mut(x.vmu).ReplaceOrInsert(g)
		x.goneQ.push(g)
	}
	return len(ks)
}

// Detach returns the tombstones held by job to the pool, unattached, for
// another job to carry: the job was evicted or cancelled, or its attempt
// will not report. It returns how many were detached. Tombstones keep their
// creation and release times.
func (x *Index) Detach(job string) int {
	ks := x.s.heldBy(job)
	for _, k := range ks {
		x.s.held.Mut(x.vmu).Delete(heldKey{job: job, tkey: k})
		cur, _ := x.s.getTomb(k, x.tprobe)
		c := x.setHolder(cur, "")
		poolOps().insert(x.wPool(), x.poolGen, newPoolKey(c))
		x.s.pooled++
	}
	return len(ks)
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

func (t *tomb) info() TombstoneInfo {
	return TombstoneInfo{Tombstone: t.tombstone(), Created: t.created, Index: t.index, ReleaseAt: t.release, Job: t.job}
}

func (s *state) tombstone(t ck.Tombstone) (TombstoneInfo, bool) {
	cur, ok := s.getTomb(newKey(t.Kind, t.Target), nil)
	if !ok {
		return TombstoneInfo{}, false
	}
	return cur.info(), true
}

func (s *state) listTombstones(after ck.Tombstone, limit int) []TombstoneInfo {
	var out []TombstoneInfo
	start := newKey(after.Kind, after.Target)
	tombOps().ascendFrom(s.tombs.BTreeG, tombItem{f: start.fold(), t: &tomb{tkey: start}}, func(it tombItem) bool {
		t := it.t
		if t.tkey == start && (after != ck.Tombstone{}) {
			return true
		}
		out = append(out, t.info())
		return limit <= 0 || len(out) < limit
	})
	return out
}
