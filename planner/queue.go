package planner

import (
	"cmp"
	"math"
	"strings"
	"time"
)

// item is a queued (or claimed, or quarantined) block: the fields the
// planner needs, 56 bytes. The ID string is shared with the caller's block
// metadata, so its bytes are not copied.
type item struct {
	id string
	// arrival is the planner-wide arrival sequence number of the block
	// (1, 2, ...): the order in which Enqueue received blocks. Since
	// entries are applied in log order, it orders blocks exactly like
	// (entry index, order within the entry), in 8 bytes.
	arrival uint64
	// time is the log time at which the block was enqueued.
	time       int64
	minT, maxT int64
	size       int64
}

// seconds is the item's arrival time in whole seconds, for the debt
// statistic.
func (it *item) seconds() int64 { return it.time / int64(time.Second) }

// chunk is a run of queue items. A chunk is shared between the planner,
// the views opened on it and the claims that took items from it (see
// takeShared), so its visible items are never modified in place: the
// planner only writes beyond used (which no view or claim can see, because
// their bounds on the chunk are at most used) and replaces whole chunks
// otherwise.
type chunk struct {
	used  int // written items; read and written by the planner only
	items []item
}

// chunkCaps are the capacities of new chunks: growing, so that a key with
// few blocks takes little memory, and each filling a Go size class (448,
// 1024, 2048, 4096 and 8192 bytes) with 56-byte items — counting the
// 8-byte header the allocator puts in front of objects with pointers
// larger than 512 bytes — so that no allocation is wasted.
//
// The largest is 8 KiB. The allocator zeroes a chunk when it is made, and
// blocks then arrive in it one at a time, interleaved with the other keys'
// blocks: with 64 keys filling their tails, 8 KiB chunks (512 KiB in all)
// are still in a core's cache when their items are written, where 32 KiB
// chunks (2 MiB) are not, and each item's write waited for memory (a
// sixth of the time of enqueueing a million blocks over 64 shards).
var chunkCaps = [...]int{8, 18, 36, 73, 146}

const maxChunk = 146

// nextCap returns the capacity of the chunk that follows one of capacity c.
func nextCap(c int) int {
	for _, n := range chunkCaps {
		if n > c {
			return n
		}
	}
	return maxChunk
}

// capFor returns the smallest chunk capacity that holds n items, or the
// largest capacity.
func capFor(n int) int {
	for _, c := range chunkCaps {
		if c >= n {
			return c
		}
	}
	return maxChunk
}

// seg is a range of a chunk's items.
type seg struct {
	c      *chunk
	lo, hi int32
}

// key is a compaction key. Shard is compactkit.AnyShard for a level
// compacted across shards; tenant is empty for multi-tenant segments.
type key struct {
	tenant string
	shard  uint32
	level  uint32
}

func (a key) compare(b key) int {
	if c := strings.Compare(a.tenant, b.tenant); c != 0 {
		return c
	}
	if c := cmp.Compare(a.shard, b.shard); c != 0 {
		return c
	}
	return cmp.Compare(a.level, b.level)
}

// queue holds the blocks of one key in arrival order, as a list of chunk
// segments. The first segment's effective start is headLo and the last
// segment's effective end is tailHi, so that claiming from the front and
// appending at the back change only this struct, never the (shared)
// segment array: the array is only appended to beyond its length, or
// replaced by a fresh one.
//
// A queue reachable from a view is immutable: the planner copies it
// (copy-on-write by generation) before changing it.
type queue struct {
	k      key
	gen    uint64 // generation in which this copy was made
	segs   []seg
	headLo int32
	tailHi int32
	n      int   // queued blocks
	sumSec int64 // sum of the blocks' arrival times in seconds
	head   batch // the head batch (the next job of the key)
}

// bounds returns the effective bounds of segment i.
func (q *queue) bounds(i int) (lo, hi int32) {
	s := q.segs[i]
	lo, hi = s.lo, s.hi
	if i == 0 {
		lo = q.headLo
	}
	if i == len(q.segs)-1 {
		hi = q.tailHi
	}
	return lo, hi
}

// visit calls fn with the queued items from offset off on, one segment at
// a time, until fn returns false.
func (q *queue) visit(off int, fn func([]item) bool) {
	for i := range q.segs {
		lo, hi := q.bounds(i)
		n := int(hi - lo)
		if off >= n {
			off -= n
			continue
		}
		if !fn(q.segs[i].c.items[int(lo)+off : hi]) {
			return
		}
		off = 0
	}
}

// first returns the oldest queued item.
func (q *queue) first() *item {
	return &q.segs[0].c.items[q.headLo]
}

// last returns the newest queued item.
func (q *queue) last() *item {
	return &q.segs[len(q.segs)-1].c.items[q.tailHi-1]
}

// push appends an item newer than every queued one.
func (q *queue) push(it *item) {
	last := len(q.segs) - 1
	if last < 0 || int(q.tailHi) == len(q.segs[last].c.items) || q.segs[last].c.used != int(q.tailHi) {
		q.seal()
		last = len(q.segs) - 1
	}
	c := q.segs[last].c
	c.items[q.tailHi] = *it
	c.used++
	q.tailHi++
	q.n++
	q.sumSec += it.seconds()
}

// seal starts a new tail chunk.
func (q *queue) seal() {
	last := len(q.segs) - 1
	size := chunkCaps[0]
	if last >= 0 {
		size = nextCap(len(q.segs[last].c.items))
		if q.segs[last].hi != q.tailHi {
			// The tail's stored end is stale (it came from a rebuild):
			// fix it in a fresh array, never in one a view may hold.
			segs := make([]seg, len(q.segs), len(q.segs)+4)
			copy(segs, q.segs)
			segs[last].hi = q.tailHi
			q.segs = segs
		}
	} else {
		q.headLo = 0
	}
	c := &chunk{items: make([]item, size)}
	// Appending writes beyond the length of every view's copy of the
	// array (see queue), so the array may be shared.
	q.segs = append(q.segs, seg{c: c, lo: 0, hi: int32(size)})
	q.tailHi = 0
}

// take removes the k oldest items and returns them.
func (q *queue) take(k int) []item {
	out := q.takeShared(k)
	if out == nil {
		out = q.takeCopy(k)
	}
	q.n -= len(out)
	for i := range out {
		q.sumSec -= out[i].seconds()
	}
	return out
}

// takeShared removes the k oldest items when the first segment holds more
// than k, and returns them as a slice of its chunk without spare capacity
// (a chunk's visible items are never modified, see chunk): a claim then
// costs no copy, and keeps the chunk alive while it lasts. It returns nil
// otherwise, having changed nothing.
func (q *queue) takeShared(k int) []item {
	if len(q.segs) == 0 {
		return nil
	}
	lo, hi := q.bounds(0)
	if k >= int(hi-lo) {
		return nil
	}
	q.headLo = lo + int32(k)
	return q.segs[0].c.items[lo : int(lo)+k : int(lo)+k]
}

// takeCopy removes the k oldest items and returns a copy of them, without
// updating the counts.
func (q *queue) takeCopy(k int) []item {
	out := make([]item, 0, k)
	for len(out) < k {
		lo, hi := q.bounds(0)
		avail := int(hi - lo)
		need := k - len(out)
		s := q.segs[0].c.items[lo:hi]
		if need < avail {
			out = append(out, s[:need]...)
			q.headLo = lo + int32(need)
			break
		}
		out = append(out, s...)
		if len(q.segs) == 1 {
			q.segs, q.headLo, q.tailHi = nil, 0, 0
			break
		}
		q.segs = q.segs[1:]
		q.headLo = q.segs[0].lo
	}
	return out
}

// replace replaces segments a to b (inclusive) by fresh chunks holding
// items, which must be sorted and fit between the neighbouring segments.
func (q *queue) replace(a, b int, items []item) {
	wasTail := b == len(q.segs)-1
	chunks := (len(items) + maxChunk - 1) / maxChunk
	segs := make([]seg, 0, len(q.segs)-(b-a+1)+chunks+1)
	segs = append(segs, q.segs[:a]...)
	var lastHi int32
	for len(items) > 0 {
		c := &chunk{items: make([]item, capFor(len(items)))}
		n := copy(c.items, items)
		c.used = n
		items = items[n:]
		segs = append(segs, seg{c: c, lo: 0, hi: int32(n)})
		lastHi = int32(n)
	}
	added := len(segs) > a
	segs = append(segs, q.segs[b+1:]...)
	if len(segs) == 0 {
		q.segs, q.headLo, q.tailHi = nil, 0, 0
		return
	}
	if a == 0 {
		// Segment 0 is now a fresh chunk or a former middle segment,
		// whose stored start is its real one.
		q.headLo = segs[0].lo
	}
	if wasTail {
		if added {
			q.tailHi = lastHi
		} else {
			q.tailHi = segs[len(segs)-1].hi
		}
	}
	q.segs = segs
}

// collect returns a copy of the effective items of segments a to b.
func (q *queue) collect(a, b int) []item {
	var out []item
	for i := a; i <= b; i++ {
		lo, hi := q.bounds(i)
		out = append(out, q.segs[i].c.items[lo:hi]...)
	}
	return out
}

// segLast returns the arrival of the last effective item of segment i.
func (q *queue) segLast(i int) uint64 {
	_, hi := q.bounds(i)
	return q.segs[i].c.items[hi-1].arrival
}

// merge inserts items (sorted by arrival, distinct) at their arrival
// positions. An item whose arrival is already queued is not inserted
// again; merge returns the number of such duplicates.
func (q *queue) merge(in []item) (dups int) {
	if len(in) == 0 {
		return 0
	}
	if q.n == 0 {
		q.replace(0, len(q.segs)-1, in)
		q.n = len(in)
		q.sumSec = 0
		for i := range in {
			q.sumSec += in[i].seconds()
		}
		return 0
	}
	if in[0].arrival > q.last().arrival {
		for i := range in {
			q.push(&in[i])
		}
		return 0
	}
	// The segments from the one holding the first item not older than
	// in[0] to the one holding the first item not older than the last of
	// in are rebuilt.
	a := searchSegs(q, in[0].arrival)
	b := searchSegs(q, in[len(in)-1].arrival)
	if b == len(q.segs) {
		b--
	}
	old := q.collect(a, b)
	merged := make([]item, 0, len(old)+len(in))
	i, j := 0, 0
	for i < len(old) || j < len(in) {
		switch {
		case j == len(in) || i < len(old) && old[i].arrival < in[j].arrival:
			merged = append(merged, old[i])
			i++
		case i < len(old) && old[i].arrival == in[j].arrival:
			dups++
			j++
		default:
			merged = append(merged, in[j])
			q.n++
			q.sumSec += in[j].seconds()
			j++
		}
	}
	q.replace(a, b, merged)
	return dups
}

// searchSegs returns the index of the first segment whose last item's
// arrival is at least arr, or len(q.segs).
func searchSegs(q *queue, arr uint64) int {
	lo, hi := 0, len(q.segs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if q.segLast(m) < arr {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// remove removes the items whose IDs are in ids and returns them.
func (q *queue) remove(ids map[string]struct{}) []item {
	a, b := -1, -1
	for i := range q.segs {
		lo, hi := q.bounds(i)
		for _, it := range q.segs[i].c.items[lo:hi] {
			if _, ok := ids[it.id]; ok {
				if a < 0 {
					a = i
				}
				b = i
				break
			}
		}
	}
	if a < 0 {
		return nil
	}
	var kept, removed []item
	for _, it := range q.collect(a, b) {
		if _, ok := ids[it.id]; ok {
			removed = append(removed, it)
			q.n--
			q.sumSec -= it.seconds()
		} else {
			kept = append(kept, it)
		}
	}
	q.replace(a, b, kept)
	return removed
}

// batch summarizes the next batch of a key: the blocks taken from some
// offset of its queue by the level's rules (see LevelConfig).
type batch struct {
	count      int
	bytes      int64
	minT, maxT int64
	first      int64  // arrival time of the first block
	arr        uint64 // arrival of the first block
	full       bool
	done       int64 // when full: arrival time of the block that completed it
}

// add offers the next block to a batch that is not full. It returns false
// if the block does not join: the batch is then full without it.
func (b *batch) add(it *item, lc *LevelConfig) bool {
	if b.count == 0 {
		*b = batch{count: 1, bytes: it.size, minT: it.minT, maxT: it.maxT, first: it.time, arr: it.arrival}
	} else {
		bytes := satAdd(b.bytes, it.size)
		if lc.MaxBytes > 0 && bytes > lc.MaxBytes {
			b.full, b.done = true, it.time
			return false
		}
		minT, maxT := min(b.minT, it.minT), max(b.maxT, it.maxT)
		if lc.MaxSpan > 0 && uint64(maxT)-uint64(minT) > uint64(lc.MaxSpan) {
			b.full, b.done = true, it.time
			return false
		}
		b.count++
		b.bytes, b.minT, b.maxT = bytes, minT, maxT
	}
	if b.count >= lc.MaxBlocks || lc.MaxBytes > 0 && b.bytes >= lc.MaxBytes {
		b.full, b.done = true, it.time
	}
	return true
}

// formBatch forms the batch that starts at offset off of q.
func formBatch(q *queue, off int, lc *LevelConfig) batch {
	var b batch
	q.visit(off, func(items []item) bool {
		for i := range items {
			if !b.add(&items[i], lc) || b.full {
				return false
			}
		}
		return true
	})
	return b
}

// readySince returns the time from which the batch is ready, and whether
// it ever is without another block.
func (b *batch) readySince(lc *LevelConfig) (int64, bool) {
	switch {
	case b.full && lc.MaxAge > 0:
		return min(b.done, satAdd(b.first, int64(lc.MaxAge))), true
	case b.full:
		return b.done, true
	case lc.MaxAge > 0:
		return satAdd(b.first, int64(lc.MaxAge)), true
	default:
		return 0, false
	}
}

// ready reports whether the batch is ready at time now.
func (b *batch) ready(now int64, lc *LevelConfig) bool {
	return b.count > 0 && (b.full || lc.MaxAge > 0 && olderThan(b.first, now, lc.MaxAge))
}

// ages reports whether the ready batches of a key of the given level,
// whose tenant has the given rank, age: whether they compete at level 0
// and rank 0 once ready for longer than the level's aging threshold. A
// level-0 batch of rank 0 competes there anyway: it does not age.
func ages(level uint32, rank uint8, lc *LevelConfig) bool {
	return lc.AgingThreshold > 0 && (level > 0 || rank > 0)
}

// competes returns the level and the rank at which a ready batch of the
// given level, whose tenant has the given rank, competes at time now:
// level 0 and rank 0 once it has been ready for longer than the level's
// aging threshold (see ages), its own level and rank until then.
func (b *batch) competes(level uint32, rank uint8, now int64, lc *LevelConfig) (uint32, uint8) {
	if !ages(level, rank, lc) {
		return level, rank
	}
	if rs, ok := b.readySince(lc); ok && olderThan(rs, now, lc.AgingThreshold) {
		return 0, 0
	}
	return level, rank
}

// olderThan reports whether now - t > d, without overflow.
func olderThan(t, now int64, d time.Duration) bool {
	return now > t && uint64(now)-uint64(t) > uint64(d)
}

// satSub returns a - b for b >= 0, or MinInt64 if that overflows.
func satSub(a, b int64) int64 {
	if a < math.MinInt64+b {
		return math.MinInt64
	}
	return a - b
}

// satAdd returns a + b for b ≥ 0, saturated at the maximum int64.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
