package index

import (
	"sync"

	"github.com/google/btree"
)

// Views clone the index's trees lazily. Cloning a tree is O(1), but it
// makes every node shared: the index then copies each node it mutates
// once per view. The state machine opens a view per poll and reads one or
// two of its trees, so cloning all of them would make the next Apply copy
// the paths of every block, run and tombstone it touches in vain.
//
// The ownership rule: a tree belongs to the index, which mutates it in
// place, until it is frozen for the views that may read it as it is; from
// then on the views share the frozen clone, nobody mutates it, and the
// index copies on write. A tree is frozen the first time either side needs
// it: a view when it reads the tree, the index when it is about to mutate
// it while a view that may still read it is open.
//
// Each tree of a state is a lazy (below): the tree and its slot, one
// generic home for every tree. Opening a view gives it, for each tree, the
// slot of the views opened since the tree last changed (a new one if there
// is none), holding the index's tree as it is then: views opened while a
// tree has not changed share its slot. A view's lazy has no tree until the
// view reads it: then the slot is frozen (the tree is cloned into it, once
// for all the views that share it). The index's lazy keeps the tree's
// pending slot until the index mutates the tree (mut; wRuns for the runs,
// whose generation moves on): then it settles the slot, freezing it if an
// open view holds it, and forgets it. While neither happens, nothing is
// cloned and the index mutates the tree in place, copying nothing.
//
// A view closed with [View.Close] gives its slots up, so that a tree whose
// slot no open view holds is mutated in place. (A view that is never closed
// keeps its slots until the index settles them, as if every tree had been
// cloned when it was opened.) A closed view sees the trees it had not read
// as empty and never looks at its slots again, so the index keeps a slot
// that no open view held when it settled it, for the tree's next slot:
// views closed before the next Apply cost no slot allocation.
//
// The slots of an index and its views share one mutex: the view and the
// index may freeze a slot from different goroutines.

// slot is one tree as it was when a view was opened.
type slot[T any] struct {
	live   *btree.BTreeG[T] // the index's tree; nil once frozen
	frozen *btree.BTreeG[T] // the views' clone, once made
	refs   int              // open views holding the slot
}

// freeze clones the tree into the slot if it is not done yet, and returns
// the frozen tree. The caller holds the slot's mutex.
//
// The clone is made even when no open view holds the slot: only a view
// calls freeze directly, and the index goes through settle.
func (s *slot[T]) freeze() *btree.BTreeG[T] {
	if s.live != nil {
		s.frozen, s.live = s.live.Clone(), nil
	}
	return s.frozen
}

// lazy is one tree of a state with its slot: in the index, the tree and its
// pending slot (nil if no view was opened since the tree last changed); in
// a view, the slot it holds and, once the view read it, the frozen tree.
type lazy[T any] struct {
	*btree.BTreeG[T]
	p *slot[T]
	// spare, in the index, is a slot settled while no open view held it,
	// for the next view to open (nil in a view).
	spare *slot[T]
}

// The trees of a state, whatever their types, as the views' methods on
// them need: the bit i of a need mask is trees()[i].
type lazyTree interface {
	open(index lazyTree) // holds the index's slot, for a view just opened
	read()               // freezes the tree for the view, if not done yet
	close()              // gives the slot up
	empty(e lazyTree)    // gives a closed view e's empty tree if it had not read it
}

// trees lists the trees of s, in the order of the need bits.
func (s *state) trees() [8]lazyTree {
	return [...]lazyTree{&s.byID, &s.runs, &s.nameID, &s.tombs, &s.pool, &s.held, &s.gone, &s.results}
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

// open makes l, in a view just opened, hold ix's pending slot, opening one
// (in the spare slot if there is one) if there is none. The caller holds the
// slots' mutex.
func (l *lazy[T]) open(ix lazyTree) {
	x := ix.(*lazy[T])
	if x.p == nil {
		if x.p, x.spare = x.spare, nil; x.p == nil {
			x.p = new(slot[T])
		}
		*x.p = slot[T]{live: x.BTreeG}
	}
	x.p.refs++
	l.BTreeG, l.p, l.spare = nil, x.p, nil
}

// read freezes the view's tree if it has not been yet. The caller holds
// the slots' mutex.
func (l *lazy[T]) read() {
	if l.BTreeG == nil {
		l.BTreeG = l.p.freeze()
	}
}

// close gives the view's slot up. The caller holds the slots' mutex.
func (l *lazy[T]) close() { l.p.refs-- }

func (l *lazy[T]) empty(e lazyTree) {
	if l.BTreeG == nil {
		l.BTreeG = e.(*lazy[T]).BTreeG
	}
}

// mut returns the index's tree for mutation, settling its pending slot
// first.
func (l *lazy[T]) mut(mu *sync.Mutex) *btree.BTreeG[T] {
	if l.p != nil {
		l.settle(mu)
	}
	return l.BTreeG
}

// settle freezes the index's pending slot, if any, for the open views that
// hold it, and forgets it: the index may then mutate its tree (copy-on-write
// if it was cloned). It returns whether the tree is now shared with a view
// (the slot was frozen, now or earlier by a view reading it).
func (l *lazy[T]) settle(mu *sync.Mutex) bool {
	if l.p == nil {
		return false
	}
	mu.Lock()
	s := l.p
	if s.refs > 0 {
		s.freeze()
	}
	shared := s.frozen != nil
	if s.refs == 0 {
		// No open view will read it: the views that held it are closed.
		*s, l.spare = slot[T]{}, s
	}
	mu.Unlock()
	l.p = nil
	return shared
}

// mutGen returns the index's tree for mutation, like mut, moving the
// generation gen of the items it shares on if the tree has been frozen for
// a view: those items (runs, leaves) are then shared with the view, and
// whoever mutates one clones it first when its generation is older. A tree
// no view froze (every view that held it closed without reading it) shares
// nothing, and the generation stays.
func (l *lazy[T]) mutGen(mu *sync.Mutex, gen *uint64) *btree.BTreeG[T] {
	if l.settle(mu) {
		*gen++
	}
	return l.BTreeG
}

// wRuns returns the tree of runs for mutation (mutRun clones a run of an
// older generation before mutating it).
func (x *Index) wRuns() *btree.BTreeG[*run] { return x.s.runs.mutGen(x.vmu, &x.gen) }

// wByID returns the tree of the live blocks' leaves (leaves.go) for
// mutation (the leaf set clones a leaf of an older generation).
func (x *Index) wByID() *btree.BTreeG[leafRef[idItem]] { return x.s.byID.mutGen(x.vmu, &x.idGen) }

// wTombs returns the tree of the pending tombstones' leaves for mutation.
func (x *Index) wTombs() *btree.BTreeG[leafRef[tombItem]] { return x.s.tombs.mutGen(x.vmu, &x.tombGen) }

// wPool returns the tree of the pool's leaves for mutation.
func (x *Index) wPool() *btree.BTreeG[leafRef[poolKey]] { return x.s.pool.mutGen(x.vmu, &x.poolGen) }

// openView returns a view of the index's state holding its slots.
func (x *Index) openView() *View {
	v := &View{s: x.s, mu: x.vmu}
	v.s.names = x.s.names[:len(x.s.names):len(x.s.names)]
	ts := x.s.trees()
	x.vmu.Lock()
	for i, t := range v.s.trees() {
		t.open(ts[i])
	}
	x.vmu.Unlock()
	return v
}

// state returns the view's state with the trees in need frozen.
func (v *View) state(need int) *state {
	v.mu.Lock()
	defer v.mu.Unlock()
	s := &v.s
	if v.closed {
		if s.byID.BTreeG == nil {
			s.blocks = 0 // with the blocks it had not read
		}
		e := newState(s.cfg)
		es := e.trees()
		for i, t := range s.trees() {
			t.empty(es[i])
		}
		return s
	}
	for i, t := range s.trees() {
		if need&(1<<i) != 0 {
			t.read()
		}
	}
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
	for _, t := range v.s.trees() {
		t.close()
	}
}
