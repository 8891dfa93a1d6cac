package index

import (
	"iter"
	"slices"
	"strings"
	"sync"

	ck "github.com/compactkit/compactkit"
)

// View is a read-only, copy-on-write view of an [Index] as it was when
// [Index.View] was called. Opening one costs O(1); it never changes, and it
// may be used on another goroutine while the index is mutated. A View may
// be shared by several goroutines.
type View struct {
	// s holds the scalars as they were, and the slots of the trees; its
	// trees are nil until frozen by state (lazy.go), under mu.
	s      state
	mu     *sync.Mutex
	closed bool // guarded by mu
}

// Config returns the configuration in force in the view.
func (v *View) Config() Config { return v.s.cfg }

// Now returns the index's log time when the view was opened.
func (v *View) Now() int64 { return v.s.clock }

// Len returns the number of live blocks.
func (v *View) Len() int { return v.state(0).blocks }

// Live reports whether a block with this ID is live.
func (v *View) Live(id string) bool {
	_, ok := v.state(needByID).get(id, nil)
	return ok
}

// Lookup returns the metadata of the live block with this ID.
func (v *View) Lookup(id string) (ck.BlockMeta, bool) {
	s := v.state(needByID)
	b, ok := s.get(id, nil)
	if !ok {
		return ck.BlockMeta{}, false
	}
	return s.meta(b), true
}

// Blocks returns up to limit live blocks in ID order, starting after the ID
// after ("" starts at the beginning); a limit <= 0 means no limit.
func (v *View) Blocks(after string, limit int) []ck.BlockMeta {
	var out []ck.BlockMeta
	s := v.state(needByID)
	s.ids().ascendFrom(s.byID.BTreeG, idProbe(after, &block{id: after}), func(it idItem) bool {
		if it.b == nil || it.b.id == after {
			return true
		}
		out = append(out, s.meta(it.b))
		return limit <= 0 || len(out) < limit
	})
	return out
}

// Query returns the live blocks of tenant that overlap [from, to]
// (MinTime <= to and MaxTime >= from), of the given shard only if shard is
// not nil, in time order: by (MinTime, ID). Multi-tenant level-0 segments
// are included when one of their datasets belongs to tenant.
//
// The cost is O(c·log n + k), where c is the number of span classes
// (powers of two of MaxTime-MinTime) among the tenant's blocks and k the
// number of blocks scanned: those overlapping the range, plus blocks of the
// same class that start at most one class span before from.
func (v *View) Query(tenant string, from, to int64, shard *uint32) iter.Seq[ck.BlockMeta] {
	s := v.state(needRuns | needNameID)
	bs := s.query(tenant, from, to, shard)
	return func(yield func(ck.BlockMeta) bool) {
		// One allocation for the datasets of every block.
		n := 0
		for _, b := range bs {
			n += int(b.unpack().nds)
		}
		buf := make([]ck.DatasetMeta, n)
		for _, b := range bs {
			m := s.metaInto(b, buf)
			buf = buf[len(m.Datasets):]
			if !yield(m) {
				return
			}
		}
	}
}

// QueryIDs is like [View.Query] but returns only the IDs, without building
// the blocks' metadata.
func (v *View) QueryIDs(tenant string, from, to int64, shard *uint32) []string {
	bs := v.state(needRuns|needNameID).query(tenant, from, to, shard)
	ids := make([]string, len(bs))
	for i, b := range bs {
		ids[i] = b.id
	}
	return ids
}

// ReadAmplification returns the number of objects a query of tenant over
// [from, to] must read: the number of live blocks [View.Query] returns for
// it. It is the figure compaction exists to reduce.
func (v *View) ReadAmplification(tenant string, from, to int64) int {
	return len(v.state(needRuns|needNameID).query(tenant, from, to, nil))
}

func (s *state) query(tenant string, from, to int64, shard *uint32) []*block {
	if from > to || tenant == "" {
		return nil
	}
	t, ok := s.lookupName(tenant)
	if !ok {
		return nil
	}
	var out []*block
	runs := 0
	s.eachRun(t, false, func(r *run) bool {
		n := len(out)
		s.scanRun(r, classLower(r.class, from), to, func(it titem) bool {
			if it.b.maxTime >= from && (shard == nil || it.b.shard == *shard) {
				out = append(out, it.b)
			}
			return true
		})
		if len(out) > n {
			runs++
		}
		return true
	})
	if runs > 1 {
		slices.SortFunc(out, func(a, b *block) int {
			switch {
			case a.minTime < b.minTime:
				return -1
			case a.minTime > b.minTime:
				return 1
			}
			return strings.Compare(a.id, b.id)
		})
	}
	return out
}

// eachRun calls fn for the runs of tenant t (every run if all), in
// (tenant, class) order, until fn returns false.
func (s *state) eachRun(t uint32, all bool, fn func(*run) bool) {
	s.runs.AscendGreaterOrEqual(&run{tenant: t}, func(r *run) bool {
		if !all && r.tenant != t {
			return false
		}
		return fn(r)
	})
}

// scanRun calls fn for the items of r with MinTime in [lo, hi], in
// ascending (MinTime, ID) order, until fn returns false.
func (s *state) scanRun(r *run, lo, hi int64, fn func(titem) bool) {
	if lo > hi {
		return
	}
	// The pivot (MinTime lo, the smallest ID) is at most every item with
	// MinTime >= lo.
	runOps().ascendFrom(r.items, titem{minTime: lo, b: s.pivot}, func(it titem) bool {
		if it.minTime > hi {
			return false
		}
		return fn(it)
	})
}

// Releasable returns a pull iterator over the tombstones that are
// unattached and releasable at now (see [Index.SetWatermark] for the rule),
// in a stable order: by release time, creation time, kind and target, a
// record at the place of its first source with its sources one after the
// other in (kind, target) order. Each call returns the next one, or false
// at the end. The whole iteration costs O(log n + k) for k tombstones
// pulled.
func (v *View) Releasable(now int64) func() (ck.Tombstone, bool) {
	const batch = 64
	if p, ok := v.first(); !ok || !v.s.releasable(p.created, p.release, now) {
		return func() (ck.Tombstone, bool) { return ck.Tombstone{}, false }
	}
	s := v.state(needPool)
	var (
		buf  []poolKey
		pos  int
		sub  int // the next source of buf[pos]'s record
		last poolKey
		done bool
	)
	return func() (ck.Tombstone, bool) {
		if pos == len(buf) {
			if done {
				return ck.Tombstone{}, false
			}
			skip := len(buf) > 0
			buf, pos = buf[:0], 0
			more := false
			visit := func(p poolKey) bool {
				if skip && p == last {
					return true
				}
				if !s.releasable(p.created, p.release, now) {
					return false
				}
				if len(buf) == batch {
					more = true
					return false
				}
				buf = append(buf, p)
				return true
			}
			if skip {
				poolOps().ascendFrom(s.pool.BTreeG, last, visit)
			} else {
				ascend(s.pool.BTreeG, visit)
			}
			done = !more
			if len(buf) == 0 {
				return ck.Tombstone{}, false
			}
			last = buf[len(buf)-1]
		}
		p := buf[pos]
		if p.rec == nil {
			pos++
			return p.tkey.tombstone(), true
		}
		t := p.rec.srcs[sub].tombstone()
		if sub++; sub == len(p.rec.srcs) {
			pos, sub = pos+1, 0
		}
		return t, true
	}
}

// OldestUnattachedReleasable returns the release time of the first
// unattached tombstone releasable at now, if there is one, so that the
// state machine can create a cleanup-only job when tombstones have waited
// too long for a compaction job to carry them. O(log n).
func (v *View) OldestUnattachedReleasable(now int64) (releaseAt int64, ok bool) {
	p, ok := v.first()
	if !ok || !v.s.releasable(p.created, p.release, now) {
		return 0, false
	}
	return p.release, true
}

// first returns the pool's first entry, if the pool has one. An open view
// reads the copy the state keeps (setHead), so that a poll that finds
// nothing releasable leaves the pool unread: the next Apply then appends
// to it without copying on write.
func (v *View) first() (poolKey, bool) {
	v.mu.Lock()
	closed := v.closed
	v.mu.Unlock()
	if !closed {
		return v.s.head, v.s.pooled > 0
	}
	// A closed view sees the trees it had not read as empty.
	r, ok := v.state(needPool).pool.Min()
	if !ok {
		return poolKey{}, false
	}
	return r.l.items[0], true
}

// Tombstone returns the state of the tombstone t, if it is pending.
func (v *View) Tombstone(t ck.Tombstone) (TombstoneInfo, bool) {
	return v.state(needTombs | needByID).tombstone(t)
}

// Tombstones lists up to limit pending tombstones in (kind, target) order,
// starting after the tombstone after (the zero Tombstone starts at the
// beginning); a limit <= 0 means no limit. Pass the last one returned to
// get the next page. A page of block tombstones walks the live blocks
// among them too (the sources of a replacement stay in the index's ID
// order, marked, until their deletion is confirmed).
func (v *View) Tombstones(after ck.Tombstone, limit int) []TombstoneInfo {
	return v.state(needTombs|needByID).listTombstones(after, limit)
}

// Watermark returns the recorded reader watermark, if any.
func (v *View) Watermark() (int64, bool) { return v.s.watermark, v.s.wmSet }
