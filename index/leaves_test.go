package index

import (
	"slices"
	"testing"

	"github.com/google/btree"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	ck "github.com/compactkit/compactkit"
)

// leafItems lists t's items in order.
func leafItems[T any](t *btree.BTreeG[leafRef[T]]) []T {
	var out []T
	ascend(t, func(x T) bool {
		out = append(out, x)
		return true
	})
	return out
}

// checkLeaves checks the invariants of a leaf set: leaves non-empty, within
// capacity, sorted; each bound at most its leaf's first item and above
// every item of the leaves before it.
func checkLeaves(t require.TestingT, o leafOps[int], tr *btree.BTreeG[leafRef[int]]) {
	var prev []int
	first := true
	tr.Ascend(func(r leafRef[int]) bool {
		items := r.l.items
		require.NotEmpty(t, items)
		require.LessOrEqual(t, len(items), o.max)
		require.True(t, slices.IsSorted(items) && len(slices.Compact(slices.Clone(items))) == len(items), "leaf %v", items)
		require.LessOrEqual(t, r.lo, items[0])
		require.Equal(t, o.key(items[0]), r.l.klo)
		require.Equal(t, o.key(items[len(items)-1]), r.l.khi)
		if !first {
			require.Greater(t, r.lo, prev[len(prev)-1], "bound %d after leaf %v", r.lo, prev)
		}
		first, prev = false, items
		return true
	})
	// The owner's flat copy of the bounds, when built, is the tree's.
	if f := o.f; f != nil && f.ok {
		var refs []leafRef[int]
		var keys []uint64
		tr.Ascend(func(r leafRef[int]) bool {
			refs, keys = append(refs, r), append(keys, o.key(r.lo))
			return true
		})
		require.Equal(t, len(refs), len(f.refs))
		for i := range refs {
			require.Equal(t, refs[i].lo, f.refs[i].lo)
			require.Same(t, refs[i].l, f.refs[i].l)
		}
		require.Equal(t, append([]uint64{}, keys...), append([]uint64{}, f.keys...))
	}
}

// TestLeafSetMatchesModel: a leaf set behaves as a sorted set, keeps its
// invariants, and a clone taken for a view (the generation moving on, as
// settle does) never changes while the owner mutates.
func TestLeafSetMatchesModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		// Keys coarser than the order (ties) exercise the search's
		// fallback.
		shift := rapid.SampledFrom([]uint{0, 0, 3, 70}).Draw(t, "key shift")
		o := leafOps[int]{
			less: func(a, b int) bool { return a < b },
			key:  func(x int) uint64 { return (uint64(x) ^ 1<<63) >> min(shift, 63) },
			max:  rapid.SampledFrom([]int{4, 5, 8, 16, 64}).Draw(t, "max"),
		}
		if rapid.Bool().Draw(t, "flat") {
			// The owner's flat copy of the bounds, which floor searches
			// instead of the tree; views search their clones.
			o.f = new(flat[int])
		}
		vo := o
		vo.f = nil
		tr := o.newTree()
		var gen uint64
		var model []int
		type view struct {
			tree  *btree.BTreeG[leafRef[int]]
			items []int
		}
		var views []view
		if rapid.Bool().Draw(t, "load") {
			for i := range rapid.IntRange(0, 60).Draw(t, "loaded") {
				model = append(model, 2*i)
			}
			o.load(tr, gen, model)
		}
		key := rapid.IntRange(-5, 130)
		for range rapid.IntRange(0, 300).Draw(t, "steps") {
			x := key.Draw(t, "x")
			i, in := slices.BinarySearch(model, x)
			switch rapid.IntRange(0, 11).Draw(t, "op") {
			case 0, 1, 2, 3:
				require.Equal(t, !in, o.insert(tr, gen, x))
				if !in {
					model = slices.Insert(model, i, x)
				}
			case 4, 5, 6:
				require.Equal(t, in, o.delete(tr, gen, x))
				if in {
					model = slices.Delete(model, i, i+1)
				}
			case 7:
				got, ok := o.get(tr, x)
				require.Equal(t, in, ok)
				if in {
					require.Equal(t, x, got)
				}
			case 8:
				var got []int
				limit := rapid.IntRange(1, 20).Draw(t, "limit")
				o.ascendFrom(tr, x, func(y int) bool {
					got = append(got, y)
					return len(got) < limit
				})
				want := model[i:]
				want = want[:min(len(want), limit)]
				require.Equal(t, append([]int{}, want...), append([]int{}, got...))
			case 9:
				views = append(views, view{tree: tr.Clone(), items: slices.Clone(model)})
				gen++
			case 10:
				// A sorted batch, after every item or not.
				var xs []int
				base := x
				if len(model) > 0 && rapid.Bool().Draw(t, "after") {
					base = model[len(model)-1] + 1
				}
				for k := range rapid.IntRange(0, 40).Draw(t, "batch") {
					if y := base + 2*k; !slices.Contains(model, y) {
						xs = append(xs, y)
					}
				}
				o.appendSorted(tr, gen, xs)
				for _, y := range xs {
					j, _ := slices.BinarySearch(model, y)
					model = slices.Insert(model, j, y)
				}
			case 11:
				// A sorted batch to delete: items held, spread over
				// leaves or close together, and items not held.
				var xs []int
				step := rapid.IntRange(1, 9).Draw(t, "step")
				for y := x; y <= x+step*rapid.IntRange(0, 40).Draw(t, "batch"); y += step {
					xs = append(xs, y)
				}
				removed := 0
				for _, y := range xs {
					if j, ok := slices.BinarySearch(model, y); ok {
						model = slices.Delete(model, j, j+1)
						removed++
					}
				}
				require.Equal(t, removed, o.deleteSorted(tr, gen, xs))
			}
			checkLeaves(t, o, tr)
			require.Equal(t, append([]int{}, model...), append([]int{}, leafItems(tr)...))
		}
		for _, v := range views {
			require.Equal(t, append([]int{}, v.items...), append([]int{}, leafItems(v.tree)...))
			for _, x := range v.items {
				got, ok := vo.get(v.tree, x)
				require.True(t, ok && got == x, "view's item %d", x)
			}
		}
	})
}

// TestLeafSearch: the interpolating search finds what a binary search
// finds, whatever the spread of the keys.
func TestLeafSearch(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		o := leafOps[int]{less: func(a, b int) bool { return a < b }, key: func(x int) uint64 { return uint64(x) ^ 1<<63 }, max: 1 << 20}
		items := rapid.SliceOfNDistinct(rapid.OneOf(rapid.IntRange(-1000, 1000), rapid.Int()), 0, 300, rapid.ID).Draw(t, "items")
		slices.Sort(items)
		l := o.newLeaf(items, 0)
		for range 20 {
			x := rapid.OneOf(rapid.SampledFrom(append(items, 0)), rapid.Int()).Draw(t, "x")
			i, found := o.search(l, x)
			wi, wfound := slices.BinarySearch(items, x)
			require.Equal(t, wi, i)
			require.Equal(t, wfound, found)
		}
	})
}

// TestInlineKeyOrder: the items of the ID set (blocks and marks) and of
// the tombstone set, which compare the first bytes of their strings
// inline, order as the IDs
// and the (kind, target) keys do, ties, NUL bytes and bytes beyond 7 bits
// included.
func TestInlineKeyOrder(t *testing.T) {
	gen := rapid.Map(rapid.SliceOfN(rapid.SampledFrom([]byte{0, 'a', 'b', 0x7e, 0x7f, 0x80, 0xff}), 0, 24),
		func(b []byte) string { return string(b) })
	kinds := rapid.SampledFrom([]ck.TombstoneKind{ck.TombstoneBlock, ck.TombstonePrefix})
	rapid.Check(t, func(t *rapid.T) {
		prefix := rapid.SampledFrom([]string{"", "01J0", "01J0ABCDEFGH"}).Draw(t, "prefix")
		// Several pairs a check, b sharing a prefix of a of any length, so
		// that every word ties and every byte position decides.
		for range 16 {
			a := prefix + gen.Draw(t, "a")
			b := a[:rapid.IntRange(0, len(a)).Draw(t, "shared")] + gen.Draw(t, "b")
			if got := lessID(newIDItem(&block{id: a}), newIDItem(&block{id: b})); got != (a < b) {
				t.Fatalf("lessID(%q, %q) = %v", a, b, got)
			}
			if got := lessID(newIDItem(&block{id: a}), markOf(&tomb{tkey: newKey(ck.TombstoneBlock, b)})); got != (a < b) {
				t.Fatalf("lessID(%q, mark %q) = %v", a, b, got)
			}
			ka, kb := newKey(kinds.Draw(t, "kind a"), a), newKey(kinds.Draw(t, "kind b"), b)
			want := ka.kind < kb.kind || ka.kind == kb.kind && a < b
			if got := ka.less(kb); got != want {
				t.Fatalf("tkey less(%v %q, %v %q) = %v", ka.kind, a, kb.kind, b, got)
			}
			if got := lessTomb(newTombItem(&tomb{tkey: ka}), newTombItem(&tomb{tkey: kb})); got != want {
				t.Fatalf("lessTomb(%v %q, %v %q) = %v", ka.kind, a, kb.kind, b, got)
			}
		}
	})
}
