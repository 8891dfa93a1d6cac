package planner

import (
	"sync"

	"github.com/google/btree"
)

// Views freeze the planner's trees lazily: this is how the copy-on-write
// rule of the package documentation is kept. Cloning a B-tree is O(1),
// but it makes every node shared, and the planner then copies each node
// it mutates once per clone.
//
// Each tree is a lazy: in the planner, the tree and its pending frozen
// (the tree as the views opened since it last changed saw it; nil if no
// view was opened since); in a view, that frozen and, once the view read
// it, the clone. Views opened while a tree does not change share one
// frozen. A view clones the tree the first time it reads it (once for all
// the views that share the frozen); the planner, before it first mutates
// a tree after views were opened, settles the pending frozen: it clones
// the tree for the views still open that may read it, and forgets it.
// While neither happens, nothing is cloned and the planner mutates the
// tree in place. A view writes (only to release a hold: PlanOptions.Release) to a clone of
// its own.
//
// One mutex per planner, shared with its views, guards the frozens: a
// view and the planner may clone from different goroutines.

// frozen is one tree as views opened on it saw it.
type frozen[T any] struct {
	live  *btree.BTreeG[T] // the planner's tree, until cloned
	clone *btree.BTreeG[T] // the views' clone, once cloned
	done  bool             // cloned (or settled unread: live is nil)
	open  int              // views holding it, not closed
}

// get clones the tree if that is not done yet and returns the clone. The
// caller holds the mutex.
func (f *frozen[T]) get() *btree.BTreeG[T] {
	if !f.done {
		f.clone, f.live, f.done = f.live.Clone(), nil, true
	}
	return f.clone
}

// lazy is one tree of a state (see above).
type lazy[T any] struct {
	*btree.BTreeG[T]
	f *frozen[T]
	// view is set in a view; mine once the view's tree is a clone of its
	// own (for writes).
	view, mine bool
}

// newLazy returns the lazy of an empty planner's tree ordered by less.
func newLazy[T any](less btree.LessFunc[T]) lazy[T] {
	return lazy[T]{BTreeG: btree.NewG(btreeDegree, less)}
}

// hand gives the view's lazy v the planner's pending frozen, making one if
// there is none. The caller holds the mutex.
func (l *lazy[T]) hand(v tree) {
	if l.f == nil {
		l.f = &frozen[T]{live: l.BTreeG}
	}
	l.f.open++
	*v.(*lazy[T]) = lazy[T]{f: l.f, view: true}
}

// read makes the view's tree readable. The caller holds the mutex.
func (l *lazy[T]) read() {
	if l.BTreeG == nil {
		l.BTreeG = l.f.get()
	}
}

// settle forgets the planner's pending frozen, cloning the tree first if
// an open view holds it, and reports whether the tree's nodes are shared
// with a view's clone.
func (l *lazy[T]) settle(mu *sync.Mutex) bool {
	if l.f == nil {
		return false
	}
	mu.Lock()
	if l.f.open > 0 {
		l.f.get()
	}
	shared := l.f.clone != nil
	l.f.live, l.f.done = nil, true
	mu.Unlock()
	l.f = nil
	return shared
}

// w returns the tree for writing: in the planner, once the pending frozen
// is settled; in a view, its own clone.
func (l *lazy[T]) w(mu *sync.Mutex) *btree.BTreeG[T] {
	if l.f != nil {
		l.own(mu)
	}
	return l.BTreeG
}

// own settles the planner's pending frozen, or makes the view's tree a
// clone of its own (see w).
func (l *lazy[T]) own(mu *sync.Mutex) {
	if !l.view {
		l.settle(mu)
		return
	}
	if !l.mine {
		mu.Lock()
		l.read()
		mu.Unlock()
		l.BTreeG, l.mine = l.BTreeG.Clone(), true
	}
}

// tree is a lazy, whatever its type, as opening, reading and closing a
// view need it.
type tree interface {
	hand(v tree) // in the planner: gives the view's tree v its frozen
	read()       // in a view: makes the tree readable
	close()      // in a view: gives the frozen up
}

// close gives the view's frozen up. The caller holds the mutex.
func (l *lazy[T]) close() { l.f.open-- }

// trees lists the trees of s in the order of the need bits below.
func (s *state) trees() [10]tree {
	return [...]tree{&s.keys, &s.full, &s.timed, &s.aging, &s.claims, &s.claimKeys, &s.quar, &s.held, &s.ranks, &s.levels}
}

// The trees a view method reads, as a mask: bit i is trees()[i].
const (
	needKeys = 1 << iota
	needFull
	needTimed
	needAging
	needClaims
	needClaimKeys
	needQuar
	needHeld
	needRanks
	needLevels
	needAll = 1<<iota - 1

	needIndexes = needFull | needTimed | needAging
	needPolicy  = needHeld | needRanks | needLevels
)

// openView returns the view's state: the planner's plain values, and its
// trees as frozens the view reads lazily.
func (p *Planner) openView() state {
	v := p.s
	vs := v.trees()
	p.s.vmu.Lock()
	for i, t := range p.s.trees() {
		t.hand(vs[i])
	}
	p.s.vmu.Unlock()
	return v
}

// read makes the view's trees of the mask readable.
func (v *View) read(need int) {
	v.s.vmu.Lock()
	defer v.s.vmu.Unlock()
	if v.closed {
		panic("planner: view used after Close")
	}
	for i, t := range v.s.trees() {
		if need&(1<<i) != 0 {
			t.read()
		}
	}
}

// Close tells the planner that the view will not be read again, so that
// the trees the view has not read yet need not be preserved for it: the
// planner's next changes to them copy nothing. Closing is optional (an
// unclosed view costs the planner copies, as if it had read every tree)
// and idempotent; a closed view must not be used.
func (v *View) Close() {
	v.s.vmu.Lock()
	defer v.s.vmu.Unlock()
	if v.closed {
		return
	}
	v.closed = true
	for _, t := range v.s.trees() {
		t.close()
	}
}
