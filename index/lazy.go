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
// Instead, View records, for each tree, a slot holding the index's tree as
// it is then. The tree is cloned into the slot (frozen) the first time
// either side needs it: the view when it reads the tree, the index when it
// is about to mutate it. While neither happens, nothing is cloned and the
// index mutates the tree in place, copying nothing. Views opened while a
// tree has not changed share its slot.
//
// Freezing when the index mutates the tree is needed only while a view
// that may still read it is open: a view closed with [View.Close] gives its
// slots up, and a tree whose slot no open view holds is mutated in place.
// (A view that is never closed keeps its slots until the index settles
// them, as if every tree had been cloned when it was opened.)
//
// The slots of an index and its views share one mutex: the view and the
// index may freeze a slot from different goroutines.

// slot is one tree as it was when a view was opened.
type slot[T any] struct {
	live   *btree.BTreeG[T] // the index's tree; nil once frozen
	frozen *btree.BTreeG[T] // the view's clone, once made
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

// slots are the pending slots of every tree of a state. A nil slot means
// no view was opened since the tree last changed.
type slots struct {
	byID    *slot[idItem]
	runs    *slot[*run]
	nameID  *slot[nameEntry]
	tombs   *slot[tomb]
	pool    *slot[poolKey]
	held    *slot[heldKey]
	gone    *slot[goneRec]
	results *slot[*result]
}

// slotSet holds a fresh slot for each tree, allocated together.
type slotSet struct {
	byID    slot[idItem]
	runs    slot[*run]
	nameID  slot[nameEntry]
	tombs   slot[tomb]
	pool    slot[poolKey]
	held    slot[heldKey]
	gone    slot[goneRec]
	results slot[*result]
}

// fill gives every tree of s without a pending slot a fresh one from a
// single allocation, holding its tree as it is now.
func (p *slots) fill(s *state) {
	if p.byID != nil && p.runs != nil && p.nameID != nil && p.tombs != nil &&
		p.pool != nil && p.held != nil && p.gone != nil && p.results != nil {
		return
	}
	n := new(slotSet)
	if p.byID == nil {
		n.byID.live, p.byID = s.byID, &n.byID
	}
	if p.runs == nil {
		n.runs.live, p.runs = s.runs, &n.runs
	}
	if p.nameID == nil {
		n.nameID.live, p.nameID = s.nameID, &n.nameID
	}
	if p.tombs == nil {
		n.tombs.live, p.tombs = s.tombs, &n.tombs
	}
	if p.pool == nil {
		n.pool.live, p.pool = s.pool, &n.pool
	}
	if p.held == nil {
		n.held.live, p.held = s.held, &n.held
	}
	if p.gone == nil {
		n.gone.live, p.gone = s.gone, &n.gone
	}
	if p.results == nil {
		n.results.live, p.results = s.results, &n.results
	}
}

// settle freezes the pending slot *p, if any, for the open views that hold it,
// and forgets it: the index may then mutate its tree (copy-on-write if it
// was cloned). It returns whether the tree is now shared with a view (the
// slot was frozen, now or earlier by a view reading it). Only the index
// calls it, before mutating the tree.
func settle[T any](mu *sync.Mutex, p **slot[T]) bool {
	if *p == nil {
		return false
	}
	mu.Lock()
	s := *p
	if s.refs > 0 {
		s.freeze()
	} else {
		s.live = nil // no open view will read it
	}
	shared := s.frozen != nil
	mu.Unlock()
	*p = nil
	return shared
}

// The index's trees, for mutation: each settles the tree's pending slot
// first.

func (x *Index) wByID() *btree.BTreeG[idItem] {
	settle(x.vmu, &x.pend.byID)
	return x.s.byID
}

func (x *Index) wNameID() *btree.BTreeG[nameEntry] {
	settle(x.vmu, &x.pend.nameID)
	return x.s.nameID
}

func (x *Index) wTombs() *btree.BTreeG[tomb] {
	settle(x.vmu, &x.pend.tombs)
	return x.s.tombs
}

func (x *Index) wPool() *btree.BTreeG[poolKey] {
	settle(x.vmu, &x.pend.pool)
	return x.s.pool
}

func (x *Index) wHeld() *btree.BTreeG[heldKey] {
	settle(x.vmu, &x.pend.held)
	return x.s.held
}

func (x *Index) wGone() *btree.BTreeG[goneRec] {
	settle(x.vmu, &x.pend.gone)
	return x.s.gone
}

func (x *Index) wResults() *btree.BTreeG[*result] {
	settle(x.vmu, &x.pend.results)
	return x.s.results
}

// wRuns returns the tree of runs for mutation. Once it has been frozen for
// a view, the runs it holds are shared with that view: the generation moves
// on, so that mutRun clones each run before mutating it. A tree no view
// froze (every view that held it closed without reading it) shares no run,
// and the generation stays.
func (x *Index) wRuns() *btree.BTreeG[*run] {
	if settle(x.vmu, &x.pend.runs) {
		x.gen++
	}
	return x.s.runs
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

// state returns the view's state with the trees in need frozen.
func (v *View) state(need int) *state {
	v.mu.Lock()
	defer v.mu.Unlock()
	s := &v.s
	if v.closed {
		v.emptyTrees()
		return s
	}
	if need&needByID != 0 && s.byID == nil {
		s.byID = v.p.byID.freeze()
	}
	if need&needRuns != 0 && s.runs == nil {
		s.runs = v.p.runs.freeze()
	}
	if need&needNameID != 0 && s.nameID == nil {
		s.nameID = v.p.nameID.freeze()
	}
	if need&needTombs != 0 && s.tombs == nil {
		s.tombs = v.p.tombs.freeze()
	}
	if need&needPool != 0 && s.pool == nil {
		s.pool = v.p.pool.freeze()
	}
	if need&needHeld != 0 && s.held == nil {
		s.held = v.p.held.freeze()
	}
	if need&needGone != 0 && s.gone == nil {
		s.gone = v.p.gone.freeze()
	}
	if need&needResults != 0 && s.results == nil {
		s.results = v.p.results.freeze()
	}
	return s
}

// hold counts a new view in every slot of p. The caller holds the mutex.
func (p *slots) hold(d int) {
	p.byID.refs += d
	p.runs.refs += d
	p.nameID.refs += d
	p.tombs.refs += d
	p.pool.refs += d
	p.held.refs += d
	p.gone.refs += d
	p.results.refs += d
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
	v.p.hold(-1)
}

// emptyTrees gives a closed view empty trees for those it had not read.
func (v *View) emptyTrees() {
	e := newState(v.s.cfg)
	s := &v.s
	if s.byID == nil {
		s.byID = e.byID
	}
	if s.runs == nil {
		s.runs = e.runs
	}
	if s.nameID == nil {
		s.nameID = e.nameID
	}
	if s.tombs == nil {
		s.tombs = e.tombs
	}
	if s.pool == nil {
		s.pool = e.pool
	}
	if s.held == nil {
		s.held = e.held
	}
	if s.gone == nil {
		s.gone = e.gone
	}
	if s.results == nil {
		s.results = e.results
	}
}
