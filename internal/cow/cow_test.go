package cow

import (
	"slices"
	"sync"
	"testing"

	"github.com/google/btree"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// owner is a state of two trees, as the packages that use Tree hold them.
type owner struct {
	mu   sync.Mutex
	ints Tree[int]
	strs Tree[string]
	gen  uint64 // moved on by MutGen of ints
}

func newOwner() *owner {
	return &owner{
		ints: New(btree.NewG(2, func(a, b int) bool { return a < b })),
		strs: New(btree.NewG(2, func(a, b string) bool { return a < b })),
	}
}

func (o *owner) list() []Lazy { return []Lazy{&o.ints, &o.strs} }

// view is a view of an owner's two trees.
type view struct {
	mu         *sync.Mutex
	ints       Tree[int]
	strs       Tree[string]
	wantI      []int    // the ints as they were when it was opened
	wantS      []string // likewise for the strs
	closed     bool
	readI, rdS bool // frozen by Read
}

func (v *view) list() []Lazy { return []Lazy{&v.ints, &v.strs} }

func (o *owner) open() *view {
	v := &view{mu: &o.mu, wantI: items(o.ints.BTreeG), wantS: items(o.strs.BTreeG)}
	Open(&o.mu, o.list(), v.list())
	return v
}

func items[T any](t *btree.BTreeG[T]) []T {
	out := []T{}
	t.Ascend(func(x T) bool { out = append(out, x); return true })
	return out
}

// peek returns the view's trees' items, read under the mutex in place.
func (v *view) peek() ([]int, []string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return items(v.ints.Peek()), items(v.strs.Peek())
}

// borrow reads the view's trees in place through Borrow, as a state's
// methods read them, and checks that Return leaves an unread tree
// unreadable.
func (v *view) borrow() ([]int, []string, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	hadI, hadS := v.ints.BTreeG != nil, v.strs.BTreeG != nil
	Borrow(v.list(), 3)
	is, ss := items(v.ints.BTreeG), items(v.strs.BTreeG)
	Return(v.list())
	return is, ss, (v.ints.BTreeG != nil) == hadI && (v.strs.BTreeG != nil) == hadS
}

// read freezes the trees of need and returns their items, read without
// the mutex.
func (v *view) read(need uint) ([]int, []string) {
	v.mu.Lock()
	Read(v.list(), need)
	v.mu.Unlock()
	var is []int
	var ss []string
	if need&1 != 0 {
		is = items(v.ints.BTreeG)
	}
	if need&2 != 0 {
		ss = items(v.strs.BTreeG)
	}
	return is, ss
}

func (v *view) close() {
	v.mu.Lock()
	defer v.mu.Unlock()
	Close(v.list())
	v.closed = true
}

// TestModel checks the rule against a plain model: whatever the owner does
// and whichever way a view reads, an open view reads its trees as they
// were when it was opened (or as it wrote them, in its own clone), and the
// owner reads its own.
func TestModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		o := newOwner()
		model, mstrs := []int{}, []string{}
		var views []*view
		open := func(t *rapid.T) *view {
			var vs []*view
			for _, v := range views {
				if !v.closed {
					vs = append(vs, v)
				}
			}
			if len(vs) == 0 {
				// rapid: the action does not apply now; another is drawn.
				// Not a skipped test: rapid draws another action.
				t.Skip("no open view")
			}
			return rapid.SampledFrom(vs).Draw(t, "view")
		}
		t.Repeat(map[string]func(*rapid.T){
			"insert": func(t *rapid.T) {
				x := rapid.IntRange(0, 20).Draw(t, "x")
				if _, had := o.ints.MutGen(&o.mu, &o.gen).ReplaceOrInsert(x); !had {
					model = append(model, x)
					slices.Sort(model)
				}
			},
			"delete": func(t *rapid.T) {
				x := rapid.IntRange(0, 20).Draw(t, "x")
				if _, had := o.ints.Mut(&o.mu).Delete(x); had {
					model = slices.DeleteFunc(model, func(y int) bool { return y == x })
				}
			},
			"insertStr": func(t *rapid.T) {
				x := rapid.StringMatching(`[a-e]{1,2}`).Draw(t, "x")
				if _, had := o.strs.Mut(&o.mu).ReplaceOrInsert(x); !had {
					mstrs = append(mstrs, x)
					slices.Sort(mstrs)
				}
			},
			"open": func(t *rapid.T) {
				views = append(views, o.open())
			},
			"read": func(t *rapid.T) {
				v := open(t)
				need := uint(rapid.IntRange(1, 3).Draw(t, "need"))
				is, ss := v.read(need)
				if need&1 != 0 {
					v.readI = true
					require.Equal(t, v.wantI, is)
				}
				if need&2 != 0 {
					v.rdS = true
					require.Equal(t, v.wantS, ss)
				}
			},
			"peek": func(t *rapid.T) {
				v := open(t)
				is, ss := v.peek()
				require.Equal(t, v.wantI, is)
				require.Equal(t, v.wantS, ss)
			},
			"borrow": func(t *rapid.T) {
				v := open(t)
				is, ss, back := v.borrow()
				require.Equal(t, v.wantI, is)
				require.Equal(t, v.wantS, ss)
				require.True(t, back, "Return gives back what Borrow lent")
			},
			"viewWrite": func(t *rapid.T) {
				v := open(t)
				x := rapid.IntRange(21, 30).Draw(t, "x")
				if _, had := v.ints.Mut(v.mu).ReplaceOrInsert(x); !had {
					v.wantI = append(v.wantI, x)
					slices.Sort(v.wantI)
				}
			},
			"close": func(t *rapid.T) {
				open(t).close()
			},
			"": func(t *rapid.T) {
				require.Equal(t, model, items(o.ints.BTreeG), "the owner reads its own tree")
				require.Equal(t, mstrs, items(o.strs.BTreeG))
				o.mu.Lock()
				defer o.mu.Unlock()
				for _, v := range views {
					if v.closed {
						continue
					}
					if v.readI {
						require.True(t, v.ints.Frozen(), "a tree a view read is frozen")
					}
					require.Equal(t, v.wantI, items(v.ints.Peek()), "an open view reads the tree as of its opening (and its own writes)")
					require.Equal(t, v.wantS, items(v.strs.Peek()))
				}
			},
		})
	})
}

// TestSlots checks what the rule costs: views opened while a tree does not
// change share a slot, a closed view costs the owner no clone, a tree is
// cloned only when a view reads it or the owner mutates it under an open
// view, and the generation moves on only for a frozen tree.
func TestSlots(t *testing.T) {
	o := newOwner()
	for i := range 10 {
		o.ints.Mut(&o.mu).ReplaceOrInsert(i)
	}
	v, w := o.open(), o.open()
	require.True(t, v.ints.SameSlot(&w.ints), "views opened on an unchanged tree share its slot")
	require.True(t, o.ints.Pending())
	v.close()
	w.close()
	o.ints.MutGen(&o.mu, &o.gen).ReplaceOrInsert(10)
	require.Zero(t, o.gen, "no open view: the tree is not frozen")
	require.False(t, o.ints.Pending(), "settled")

	v = o.open()
	require.False(t, v.ints.SameSlot(&w.ints), "a changed tree gets a new slot")
	require.Nil(t, v.ints.BTreeG, "not read yet")
	o.strs.Mut(&o.mu).ReplaceOrInsert("a")
	o.mu.Lock()
	require.True(t, v.strs.Frozen(), "mutated while the view was open: frozen for it")
	require.False(t, v.ints.Frozen(), "a tree neither read nor mutated is not cloned")
	o.mu.Unlock()
	is, _ := v.read(1)
	require.Len(t, is, 11)
	w = o.open()
	require.True(t, v.ints.SameSlot(&w.ints), "a view opened after a read of an unchanged tree shares the frozen slot")
	_, _ = w.read(1)
	require.Same(t, v.ints.BTreeG, w.ints.BTreeG, "frozen once for both")
	v.close()
	o.ints.MutGen(&o.mu, &o.gen).ReplaceOrInsert(11)
	require.Equal(t, uint64(1), o.gen, "frozen for a view: the items are shared")
	is, _ = w.read(1)
	require.Len(t, is, 11)
	w.close()
	o.ints.MutGen(&o.mu, &o.gen).ReplaceOrInsert(12)
	require.Equal(t, uint64(1), o.gen, "settled: no view left")

	// A closed view reads its unread trees as empty with Unread.
	v = o.open()
	_, _ = v.read(2)
	v.close()
	e := newOwner()
	Unread(v.list(), e.list())
	require.Empty(t, items(v.ints.BTreeG))
	require.Len(t, items(v.strs.BTreeG), 1, "the tree it read stays")
}

// TestConcurrentViews reads views on other goroutines, frozen and in
// place, while the owner mutates its trees and opens and closes views: run
// with -race. Each view checks it reads its trees as they were when it was
// opened.
func TestConcurrentViews(t *testing.T) {
	o := newOwner()
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	check := func(v *view, is []int, ss []string) {
		if !slices.Equal(is, v.wantI) || !slices.Equal(ss, v.wantS) {
			select {
			case errs <- "a view read a changed tree":
			default:
			}
		}
	}
	for round := range 200 {
		v := o.open()
		wg.Add(1)
		go func(v *view, mode int) {
			defer wg.Done()
			for range 5 {
				switch mode {
				case 0:
					is, ss := v.peek()
					check(v, is, ss)
				case 1:
					is, ss, _ := v.borrow()
					check(v, is, ss)
				default:
					is, ss := v.read(3)
					check(v, is, ss)
				}
			}
			v.close()
		}(v, round%3)
		for i := range 8 {
			x := (round*7 + i) % 50
			if i%3 == 0 {
				o.ints.MutGen(&o.mu, &o.gen).Delete(x)
			} else {
				o.ints.MutGen(&o.mu, &o.gen).ReplaceOrInsert(x)
			}
			if i%4 == 0 {
				o.strs.Mut(&o.mu).ReplaceOrInsert(string(rune('a' + x%26)))
			}
		}
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}

// SettleClosed settles a pending slot only once no open view holds it,
// moving the generation on if a view froze it, and leaves a slot an open
// view holds pending and unfrozen.
func TestSettleClosed(t *testing.T) {
	o := newOwner()
	for i := range 10 {
		o.ints.Mut(&o.mu).ReplaceOrInsert(i)
	}
	require.True(t, o.ints.SettleClosed(&o.mu, &o.gen), "no slot: settled")

	v := o.open()
	require.False(t, o.ints.SettleClosed(&o.mu, &o.gen), "an open view holds the slot")
	require.True(t, o.ints.Pending(), "left pending")
	o.mu.Lock()
	require.False(t, v.ints.Frozen(), "and not frozen")
	o.mu.Unlock()
	v.close()
	require.True(t, o.ints.SettleClosed(&o.mu, &o.gen))
	require.False(t, o.ints.Pending())
	require.Zero(t, o.gen, "the view never read the tree: nothing shared")

	v = o.open()
	_, _ = v.read(1)
	v.close()
	require.True(t, o.ints.SettleClosed(&o.mu, &o.gen))
	require.Equal(t, uint64(1), o.gen, "the view froze the tree: its items were shared")
}
