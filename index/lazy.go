package index

import (
	"github.com/google/btree"

	"github.com/compactkit/compactkit/internal/cow"
)

// Views clone the index's trees lazily, by the copy-on-write rule of
// internal/cow: each tree of the state is a lazy, frozen for the views the
// first time one reads it, or when the index is about to mutate it (Mut;
// wRuns for the runs, whose generation moves on) while a view that may
// still read it is open. The state machine opens a view per poll and reads
// one or two of its trees, so cloning all of them would make the next
// Apply copy the paths of every block, run and tombstone it touches in
// vain.
type lazy[T any] = cow.Tree[T]

// trees lists the trees of s, in the order of the need bits.
func (s *state) trees() []cow.Lazy {
	return []cow.Lazy{&s.byID, &s.runs, &s.nameID, &s.tombs, &s.pool, &s.held, &s.gone, &s.results}
}

// The trees a view method needs.
const (
	needByID = 1 << iota
	needRuns
	needNameID
	needTombs
	needPool
	needHeld
	needGone
	needResults
	needAll = 1<<iota - 1
)

// wRuns returns the tree of runs for mutation (mutRun clones a run of an
// older generation before mutating it).
func (x *Index) wRuns() *btree.BTreeG[*run] { return x.s.runs.MutGen(x.vmu, &x.gen) }

// wByID returns the tree of the live blocks' leaves (leaves.go) for
// mutation (the leaf set clones a leaf of an older generation).
func (x *Index) wByID() *btree.BTreeG[leafRef[idItem]] { return x.s.byID.MutGen(x.vmu, &x.idGen) }

// wTombs returns the tree of the pending tombstones' leaves for mutation.
func (x *Index) wTombs() *btree.BTreeG[leafRef[tombItem]] { return x.s.tombs.MutGen(x.vmu, &x.tombGen) }

// wPool returns the tree of the pool's leaves for mutation. Every
// mutation of the pool ends with setHead.
func (x *Index) wPool() *btree.BTreeG[leafRef[poolKey]] { return x.s.pool.MutGen(x.vmu, &x.poolGen) }

// setHead copies the pool's first entry into the state, where a view
// reads it without the pool (see View.first).
func (x *Index) setHead() {
	x.s.head = poolKey{}
	if r, ok := x.s.pool.BTreeG.Min(); ok {
		x.s.head = r.l.items[0]
	}
}

// openView returns a view of the index's state holding its slots.
func (x *Index) openView() *View {
	v := &View{s: x.s, mu: x.vmu}
	v.s.idFlat = nil // the index's own
	v.s.names = x.s.names[:len(x.s.names):len(x.s.names)]
	cow.Open(x.vmu, x.s.trees(), v.s.trees())
	return v
}

// state returns the view's state with the trees in need frozen. A closed
// view sees the trees it had not read as empty.
func (v *View) state(need uint) *state {
	v.mu.Lock()
	defer v.mu.Unlock()
	s := &v.s
	if v.closed {
		if s.byID.BTreeG == nil {
			s.blocks = 0 // with the blocks it had not read
		}
		e := newState(s.cfg)
		cow.Unread(s.trees(), e.trees())
		return s
	}
	cow.Read(s.trees(), need)
	return s
}

// Close tells the index that the view will not be read again, so that the
// index need not preserve, for it, the trees the view has not read yet:
// the next mutations of those trees then copy nothing. Closing is optional
// (an unclosed view costs the index copy-on-write copies, as if it had
// read every tree) and idempotent. A closed view must not be used; if it
// is, the trees it had not read appear empty.
func (v *View) Close() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return
	}
	v.closed = true
	cow.Close(v.s.trees())
}
