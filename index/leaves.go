package index

import (
	"slices"

	"github.com/google/btree"
)

// The index's big trees — live blocks by ID (with the marks of pending
// record sources, see idItem), each run of the time index, the pending
// tombstones and the pool — are leaf sets: ordered sets of distinct items
// kept in leaves, sorted slices of at most leafMax items, under a
// google/btree of the leaves' lower bounds (leafRef). Compared with a
// google/btree of the items themselves:
//
//   - a lookup searches a small tree of bounds, which stays in the CPU
//     caches, then one leaf; a google/btree of a million items has two
//     levels of nodes that do not fit;
//   - a removal shifts the items of one leaf and rebalances only when the
//     leaf is nearly empty (google/btree splits nodes in halves at its
//     minimum size, so that removals from nodes filled in order merge or
//     steal from siblings at every step);
//   - a restore builds full leaves from sorted input (load), in time linear
//     in the items, without a search per item.
//
// Copy-on-write. The tree of bounds is one of the state's trees, cloned for
// views like the others (lazy.go); its leaves are shared with the clone.
// Each leaf records the generation of the set that made it, and the owner
// moves its generation on when the tree is frozen for a view (settle), so
// that a leaf of an older generation may be shared and is cloned before it
// is mutated (mutable). A view never mutates.
//
// The ID set's owner searches a flat copy of its bounds (flat), kept in
// step with the tree of bounds, instead of the tree: its searches are most
// of a replacement's lookups.
//
// Bounds. A leaf's bound is at most its first item and greater than every
// item of the leaves before it; the first leaf's bound is at most its first
// item. A leaf therefore holds the items from its bound up to the next
// leaf's bound, and an item belongs to the last leaf whose bound is at most
// it, or to the first leaf (floor). Removing a leaf's first item leaves its
// bound as it is (still a valid bound), and inserting an item below the
// first leaf's bound lowers that bound.

// leafMax is the capacity of a leaf: wide enough that the tree of bounds
// stays small (a million items make about 5,000 leaves) and mostly in the
// CPU caches, narrow enough that a leaf spans a few kilobytes (removing an
// item shifts a quarter of a leaf on average).
const leafMax = 256

// topDegree is the degree of the trees of bounds: wide, so that the
// bounds of a million items' leaves take two levels of nodes, and a
// lookup's walk down them (a search per node, of bounds held inline) is
// short. The price: a node a view shares is copied whole before the index
// changes it (once per node and view).
const topDegree = 64

// leaf is a sorted slice of distinct items, with the keys of its first and
// last items (see search).
type leaf[T any] struct {
	items    []T
	gen      uint64 // the owner's generation when it made the leaf
	klo, khi uint64 // key(items[0]), key(items[len(items)-1])
}

// leafRef is a leaf and its bound, the item of the tree of bounds.
type leafRef[T any] struct {
	lo T
	l  *leaf[T]
}

// leafOps holds the order of a leaf set's items, a key that it refines,
// and the capacity of its leaves (leafMax but in tests).
type leafOps[T any] struct {
	less func(a, b T) bool
	// key maps items to integers in the same order, ties allowed:
	// key(a) < key(b) implies less(a, b), and less(a, b) implies
	// key(a) <= key(b).
	key func(T) uint64
	max int
	// f, in the owner of the set it is used on, is the flat copy of the
	// set's bounds (see flat); nil elsewhere.
	f *flat[T]
}

// newLeaf returns a leaf of generation gen holding items.
func (o leafOps[T]) newLeaf(items []T, gen uint64) *leaf[T] {
	l := &leaf[T]{items: items, gen: gen}
	o.bounds(l)
	return l
}

// bounds records the keys of l's first and last items.
func (o leafOps[T]) bounds(l *leaf[T]) {
	if n := len(l.items); n > 0 {
		l.klo, l.khi = o.key(l.items[0]), o.key(l.items[n-1])
	}
}

// newTree returns an empty tree of bounds.
func (o leafOps[T]) newTree() *btree.BTreeG[leafRef[T]] {
	less := o.less
	return btree.NewG(topDegree, func(a, b leafRef[T]) bool { return less(a.lo, b.lo) })
}

// search returns the position of the first item of l not less than x, and
// whether it equals x.
//
// A leaf lives in memory that a lookup rarely finds in the CPU caches, and
// each probe of a binary search waits for one more cache line. So the
// search starts where x's key falls between the keys of the first and last
// items (interpolation: keys — IDs' first bytes, start times — spread
// evenly within a leaf, so the guess is within a few items), then gallops
// away from the guess by doubling steps until it brackets x, and finishes
// with a binary search in the bracket: a probe or two near the guess in
// the usual case, and O(log n) probes at worst.
func (o leafOps[T]) search(l *leaf[T], x T) (int, bool) {
	items := l.items
	n := len(items)
	lo, hi := 0, n // the position is in [lo, hi]
	if n > 8 && l.khi > l.klo {
		g := n - 1
		if kx := o.key(x); kx <= l.klo {
			g = 0
		} else if kx < l.khi {
			g = int(float64(kx-l.klo) / float64(l.khi-l.klo) * float64(n-1))
		}
		if o.less(items[g], x) {
			lo = g + 1
			for step := 1; g+step < n; step *= 2 {
				if !o.less(items[g+step], x) {
					hi = g + step
					break
				}
				lo = g + step + 1
			}
		} else {
			hi = g
			for step := 1; g-step >= 0; step *= 2 {
				if o.less(items[g-step], x) {
					lo = g - step + 1
					break
				}
				hi = g - step
			}
		}
	}
	for lo < hi {
		h := int(uint(lo+hi) >> 1)
		if o.less(items[h], x) {
			lo = h + 1
		} else {
			hi = h
		}
	}
	return lo, lo < n && !o.less(x, items[lo])
}

// floor returns the leaf that holds x's place: the last whose bound is at
// most x, or the first. ok is false if t is empty.
func (o leafOps[T]) floor(t *btree.BTreeG[leafRef[T]], x T) (r leafRef[T], ok bool) {
	if f := o.flatOf(t); f != nil {
		return f.floor(o, x)
	}
	t.DescendLessOrEqual(leafRef[T]{lo: x}, func(l leafRef[T]) bool {
		r, ok = l, true
		return false
	})
	if !ok {
		r, ok = t.Min()
	}
	return r, ok
}

// get returns the item of t equal to x.
func (o leafOps[T]) get(t *btree.BTreeG[leafRef[T]], x T) (T, bool) {
	if l, i, ok := o.find(t, x); ok {
		return l.items[i], true
	}
	var zero T
	return zero, false
}

// find returns the leaf of t holding the item equal to x, and its
// position there.
func (o leafOps[T]) find(t *btree.BTreeG[leafRef[T]], x T) (*leaf[T], int, bool) {
	r, ok := o.floor(t, x)
	if !ok {
		return nil, 0, false
	}
	i, found := o.search(r.l, x)
	if !found {
		return nil, 0, false
	}
	return r.l, i, true
}

// mutable returns r's leaf in a form the owner at generation gen may
// mutate: a leaf of an older generation, which a view may share, is
// replaced in t by a copy first.
func (o leafOps[T]) mutable(t *btree.BTreeG[leafRef[T]], r leafRef[T], gen uint64) *leaf[T] {
	if r.l.gen == gen {
		return r.l
	}
	items := make([]T, len(r.l.items), min(o.max, len(r.l.items)+len(r.l.items)/4+1))
	copy(items, r.l.items)
	l := &leaf[T]{items: items, gen: gen, klo: r.l.klo, khi: r.l.khi}
	o.set(t, leafRef[T]{lo: r.lo, l: l})
	return l
}

// insert adds x to t (the owner's, at generation gen), or replaces the
// item equal to it; it returns whether it added x.
func (o leafOps[T]) insert(t *btree.BTreeG[leafRef[T]], gen uint64, x T) bool {
	r, ok := o.floor(t, x)
	if !ok {
		o.set(t, leafRef[T]{lo: x, l: o.newLeaf(append(make([]T, 0, 4), x), gen)})
		return true
	}
	if o.less(x, r.lo) { // below the first leaf's bound: lower it
		o.del(t, r)
		r.lo = x
		o.set(t, r)
	}
	l := o.mutable(t, r, gen)
	i, found := o.search(l, x)
	if found {
		l.items[i] = x
		return false
	}
	n := len(l.items)
	switch {
	case n < o.max:
		l.items = o.grow(l.items, 1)[:n+1]
		copy(l.items[i+1:], l.items[i:n])
		l.items[i] = x
		if i == 0 {
			l.klo = o.key(x)
		}
		if i == n {
			l.khi = o.key(x)
		}
	case i == n:
		// Past the end of a full leaf: a new leaf, so that items added
		// in order fill their leaves.
		o.set(t, leafRef[T]{lo: x, l: o.newLeaf(append(make([]T, 0, 4), x), gen)})
	default:
		// Split in halves, each in an array with a little room: in a
		// leaf set that grows by inserts at random places, a half fills
		// up again, reallocating as append does; where items arrive
		// nearly in order (blocks by ID, a run's blocks by start time),
		// the left half is not touched again and wastes no room. An item
		// in the last quarter of the leaf splits it at the item, so that
		// the left part keeps most of the items.
		m, left := n/2, i < n/2
		if i >= n-n/4 {
			m, left = i, false
		}
		lo, hi := o.tight(l.items[:m], 1), o.tight(l.items[m:], 1)
		if left {
			lo = lo[:m+1]
			copy(lo[i+1:], lo[i:m])
			lo[i] = x
		} else {
			j := i - m
			hi = hi[:n-m+1]
			copy(hi[j+1:], hi[j:n-m])
			hi[j] = x
		}
		l.items = lo
		o.bounds(l)
		o.set(t, leafRef[T]{lo: hi[0], l: o.newLeaf(hi, gen)})
	}
	return true
}

// delete removes the item equal to x from t (the owner's, at generation
// gen), and returns whether there was one. A leaf left with fewer than a
// quarter of leafMax items is merged with a neighbour they fit in.
func (o leafOps[T]) delete(t *btree.BTreeG[leafRef[T]], gen uint64, x T) bool {
	r, ok := o.floor(t, x)
	if !ok {
		return false
	}
	i, found := o.search(r.l, x)
	if !found {
		return false
	}
	l := o.mutable(t, r, gen)
	n := len(l.items)
	var zero T
	if i < n/2 {
		// Shift the items before x instead of those after: the leaf's
		// array loses a slot at its front until it is reallocated, and
		// removing the first items (the oldest tombstones from the
		// pool) moves nothing.
		copy(l.items[1:i+1], l.items[:i])
		l.items[0] = zero
		l.items = l.items[1:]
	} else {
		copy(l.items[i:], l.items[i+1:])
		l.items[n-1] = zero
		l.items = l.items[:n-1]
	}
	switch {
	case n == 1:
		o.del(t, r)
		return true
	case i == 0:
		l.klo = o.key(l.items[0])
	case i == n-1:
		l.khi = o.key(l.items[n-2])
	}
	if n-1 < o.max/4 {
		o.merge(t, r, l, gen)
	}
	return true
}

// deleteSorted removes the items of xs, sorted and distinct, from t (the
// owner's, at generation gen), leaving the set delete would leave removing
// them one by one: one search of the bounds for each leaf they fall in,
// and one pass over the leaf's items after the first removed. Items of xs
// that t does not hold are skipped. It returns the number removed.
func (o leafOps[T]) deleteSorted(t *btree.BTreeG[leafRef[T]], gen uint64, xs []T) int {
	removed := 0
	var buf [32]int
	for len(xs) > 0 {
		r, ok := o.floor(t, xs[0])
		if !ok {
			return removed
		}
		// The items of xs up to the leaf's last item belong to it.
		last := r.l.items[len(r.l.items)-1]
		k := 1
		for k < len(xs) && !o.less(last, xs[k]) {
			k++
		}
		batch := xs[:k]
		xs = xs[k:]
		if k == 1 {
			if o.delete(t, gen, batch[0]) {
				removed++
			}
			continue
		}
		pos := buf[:0]
		for _, x := range batch {
			if i, found := o.search(r.l, x); found {
				pos = append(pos, i)
			}
		}
		if len(pos) == 0 {
			continue
		}
		l := o.mutable(t, r, gen)
		n, w := len(l.items), pos[0]
		for m, p := range pos {
			end := n
			if m+1 < len(pos) {
				end = pos[m+1]
			}
			w += copy(l.items[w:], l.items[p+1:end])
		}
		clear(l.items[w:n])
		l.items = l.items[:w]
		removed += len(pos)
		if w == 0 {
			o.del(t, r)
			continue
		}
		o.bounds(l)
		if w < o.max/4 {
			o.merge(t, r, l, gen)
		}
	}
	return removed
}

// merge merges the leaf of r (l, mutable) with its next or previous leaf if
// both fit in three quarters of a leaf.
func (o leafOps[T]) merge(t *btree.BTreeG[leafRef[T]], r leafRef[T], l *leaf[T], gen uint64) {
	if next := neighbour(t.AscendGreaterOrEqual, r); next.l != nil && len(l.items)+len(next.l.items) <= o.max*3/4 {
		l.items = append(o.grow(l.items, len(next.l.items)), next.l.items...)
		o.bounds(l)
		o.del(t, next)
		return
	}
	if prev := neighbour(t.DescendLessOrEqual, r); prev.l != nil && len(l.items)+len(prev.l.items) <= o.max*3/4 {
		p := o.mutable(t, prev, gen)
		p.items = append(o.grow(p.items, len(l.items)), l.items...)
		o.bounds(p)
		o.del(t, r)
	}
}

// neighbour returns the leaf next to r in the direction walk visits the
// tree from r (AscendGreaterOrEqual or DescendLessOrEqual), or a zero
// leafRef if there is none.
func neighbour[T any](walk func(leafRef[T], btree.ItemIteratorG[leafRef[T]]), r leafRef[T]) leafRef[T] {
	var out leafRef[T]
	seen := 0
	walk(r, func(n leafRef[T]) bool {
		if seen++; seen == 2 {
			out = n
			return false
		}
		return true
	})
	return out
}

// appendSorted adds to t (the owner's, at generation gen) sorted, distinct
// items, which are all greater than t's items when t's last leaf can take
// them (as new tombstones are in release order): then they are appended to
// it, and to new leaves as it fills, with one search in all. Otherwise it
// inserts them one by one.
func (o leafOps[T]) appendSorted(t *btree.BTreeG[leafRef[T]], gen uint64, xs []T) {
	r, ok := t.Max()
	if !ok || len(xs) == 0 || !o.less(r.l.items[len(r.l.items)-1], xs[0]) {
		for _, x := range xs {
			o.insert(t, gen, x)
		}
		return
	}
	l := o.mutable(t, r, gen)
	for len(xs) > 0 {
		if len(l.items) == o.max {
			l = o.newLeaf(make([]T, 0, min(o.max, max(4, len(xs)))), gen)
			o.set(t, leafRef[T]{lo: xs[0], l: l})
		}
		k := min(len(xs), o.max-len(l.items))
		l.items = append(o.grow(l.items, k), xs[:k]...)
		o.bounds(l)
		xs = xs[k:]
	}
}

// ascendFrom calls fn for the items of t not less than pivot, in order,
// until fn returns false.
func (o leafOps[T]) ascendFrom(t *btree.BTreeG[leafRef[T]], pivot T, fn func(T) bool) {
	r, ok := o.floor(t, pivot)
	if !ok {
		return
	}
	first := true
	t.AscendGreaterOrEqual(r, func(n leafRef[T]) bool {
		items := n.l.items
		if first {
			first = false
			i, _ := o.search(n.l, pivot)
			items = items[i:]
		}
		for _, it := range items {
			if !fn(it) {
				return false
			}
		}
		return true
	})
}

// ascend calls fn for every item of t, in order, until fn returns false.
func ascend[T any](t *btree.BTreeG[leafRef[T]], fn func(T) bool) {
	t.Ascend(func(n leafRef[T]) bool {
		for _, it := range n.l.items {
			if !fn(it) {
				return false
			}
		}
		return true
	})
}

// load adds sorted, distinct items to the empty t, in full leaves of
// generation gen.
func (o leafOps[T]) load(t *btree.BTreeG[leafRef[T]], gen uint64, sorted []T) {
	if o.f != nil {
		o.f.ok = false // built again when next read
	}
	for len(sorted) > 0 {
		n := min(len(sorted), o.max)
		items := make([]T, n)
		copy(items, sorted[:n])
		o.set(t, leafRef[T]{lo: items[0], l: o.newLeaf(items, gen)})
		sorted = sorted[n:]
	}
}

// tight returns a copy of items in a new array with room for n more and a
// little beyond (an eighth), within a leaf.
func (o leafOps[T]) tight(items []T, n int) []T {
	out := make([]T, len(items), min(o.max, len(items)+n+len(items)/8))
	copy(out, items)
	return out
}

// grow returns items with room for n more (at most a leaf in all): the
// capacity doubles (from 4), as append's would, but stays within a leaf.
func (o leafOps[T]) grow(items []T, n int) []T {
	if len(items)+n <= cap(items) {
		return items
	}
	out := make([]T, len(items), min(o.max, max(4, 2*cap(items), len(items)+n)))
	copy(out, items)
	return out
}

// flat is a copy of a leaf set's tree of bounds in two sorted arrays, the
// bounds' keys and the bounds with their leaves, which the set's owner
// keeps (leafOps.f) for its own searches: the index's ID set, whose
// searches for a replacement's sources and outputs are most of a
// replacement's lookups. A search of the flat copy compares integers held
// in one array and calls nothing until the keys tie; a search of the tree
// calls its comparison, through two closures, at every step of every
// node. Every change of the tree's bounds (set, del) changes the copy
// alike, by a binary search and, when a leaf is added or removed, a move
// of the bounds after it: leaves are added and removed rarely (a set of a
// million items has about 5,000), while a leaf copied on write only
// replaces its bound's leaf. Views search their frozen trees, never the
// owner's copy.
//
// The copy is built from the tree when first read (ok false: new, or
// loaded), and mutations while it is not built leave it unbuilt.
type flat[T any] struct {
	ok   bool
	keys []uint64     // key(refs[i].lo)
	refs []leafRef[T] // the tree's items, in order
}

// flatOf returns o's flat copy of t's bounds, built first if it is not,
// or nil if o has none.
func (o leafOps[T]) flatOf(t *btree.BTreeG[leafRef[T]]) *flat[T] {
	f := o.f
	if f == nil || f.ok {
		return f
	}
	f.keys, f.refs = f.keys[:0], f.refs[:0]
	t.Ascend(func(r leafRef[T]) bool {
		f.keys = append(f.keys, o.key(r.lo))
		f.refs = append(f.refs, r)
		return true
	})
	f.ok = true
	return f
}

// set puts r in t, replacing the bound equal to r.lo, and in o's flat
// copy if it is built.
func (o leafOps[T]) set(t *btree.BTreeG[leafRef[T]], r leafRef[T]) {
	t.ReplaceOrInsert(r)
	if f := o.f; f != nil && f.ok {
		i, found := f.search(o, r.lo)
		if found {
			f.refs[i] = r
			return
		}
		f.keys = slices.Insert(f.keys, i, o.key(r.lo))
		f.refs = slices.Insert(f.refs, i, r)
	}
}

// del removes the bound equal to r.lo from t, and from o's flat copy if it
// is built.
func (o leafOps[T]) del(t *btree.BTreeG[leafRef[T]], r leafRef[T]) {
	t.Delete(r)
	if f := o.f; f != nil && f.ok {
		if i, found := f.search(o, r.lo); found {
			f.keys = slices.Delete(f.keys, i, i+1)
			f.refs = slices.Delete(f.refs, i, i+1)
		}
	}
}

// search returns the position of the first bound not less than x, and
// whether it equals x.
func (f *flat[T]) search(o leafOps[T], x T) (int, bool) {
	k, keys := o.key(x), f.keys
	lo, hi := 0, len(keys)
	for lo < hi {
		h := int(uint(lo+hi) >> 1)
		if keys[h] < k {
			lo = h + 1
		} else {
			hi = h
		}
	}
	for lo < len(keys) && keys[lo] == k && o.less(f.refs[lo].lo, x) {
		lo++
	}
	return lo, lo < len(keys) && keys[lo] == k && !o.less(x, f.refs[lo].lo)
}

// floor is leafOps.floor on the flat copy: the last bound at most x, or
// the first.
func (f *flat[T]) floor(o leafOps[T], x T) (leafRef[T], bool) {
	keys := f.keys
	if len(keys) == 0 {
		return leafRef[T]{}, false
	}
	// The first bound whose key is above x's: every bound before it is
	// at most x but those of x's key that are greater.
	k := o.key(x)
	lo, hi := 0, len(keys)
	for lo < hi {
		h := int(uint(lo+hi) >> 1)
		if keys[h] <= k {
			lo = h + 1
		} else {
			hi = h
		}
	}
	for lo > 0 && keys[lo-1] == k && o.less(x, f.refs[lo-1].lo) {
		lo--
	}
	if lo == 0 {
		return f.refs[0], true
	}
	return f.refs[lo-1], true
}
