// Package cow holds the copy-on-write rule by which a state's B-trees are
// shared with the read-only views opened on it: the planner's, the
// scheduler's and the index's, one [Tree] per tree.
//
// Cloning a github.com/google/btree tree is O(1), but it makes every node
// shared: the owner then copies each node it changes once per clone. A view
// opened per Prepare that cloned every tree would make the next Apply copy
// the paths of everything it touches, in trees the view never read. So the
// trees are frozen lazily.
//
// # The rule
//
// A tree belongs to its owner, which mutates it in place, until it is
// frozen for the views that may read it as it is: from then on those views
// share the frozen clone, nobody mutates the clone, and the owner copies
// on write. A tree is frozen the first time either side needs it:
//
//   - a view, when it reads the tree without the lock ([Read]: the view
//     then reads the frozen clone whenever it likes);
//   - the owner, when it is about to mutate the tree ([Tree.Mut],
//     [Tree.Settle]) while a view that may still read it is open.
//
// While neither happens, nothing is cloned: the owner mutates its tree in
// place, and a view may read the owner's tree itself under the lock
// ([Tree.Peek], or [Borrow] for a state's methods that read the embedded
// trees). A view that is closed ([Close]) before the owner's next
// mutation of a tree it has not frozen costs that mutation nothing; a view
// that is never closed costs it a clone, as if it had read the tree.
//
// Views opened while a tree does not change share one slot: the tree as
// they saw it, frozen at most once for all of them. The owner keeps that
// slot pending until it mutates the tree, then settles it (freezing it if
// an open view holds it) and forgets it; a slot that no open view held is
// kept for the tree's next views, so that views closed before the next
// mutation cost no allocation.
//
// A view that writes (the planner's view lifts holds for its own planning)
// writes to a clone of its own ([Tree.Mut] on a view's tree), never to the
// frozen clone other views share.
//
// Items that are pointers the owner modifies in place (the planner's
// queues, the index's runs and leaves, the scheduler's job records) are
// shared with the views that froze their tree: the owner keeps a
// generation for them, which [Tree.MutGen] moves on when the tree has been
// frozen, and clones an item of an older generation before modifying it.
// An item a view may read in the owner's tree itself, not frozen
// ([Tree.Peek]), is not modified in place either ([Tree.SettleClosed]).
//
// # Locking
//
// One mutex per owner, shared with its views, guards the slots: a view and
// the owner may freeze a slot from different goroutines. The owner opens
// views and mutates its trees on its own goroutine (or under its caller's
// lock) and reads them without the mutex; a view takes the mutex to read
// ([Read], [Tree.Peek]) and to close. The clones are taken under the mutex.
package cow

import (
	"sync"

	"github.com/google/btree"
)

// slot is one tree as the views that share it were opened on it.
type slot[T any] struct {
	live   *btree.BTreeG[T] // the owner's tree; nil once frozen
	frozen *btree.BTreeG[T] // the views' clone, once made
	refs   int              // open views holding the slot
}

// freeze clones the tree into the slot if that is not done yet, and returns
// the frozen tree. The caller holds the mutex.
func (s *slot[T]) freeze() *btree.BTreeG[T] {
	if s.frozen == nil {
		s.frozen, s.live = s.live.Clone(), nil
	}
	return s.frozen
}

// Tree is one B-tree under the rule of the package documentation. In the
// owner it is the tree (embedded: the owner reads it directly) and its
// pending slot; in a view, the slot it holds and, once the view read it,
// the frozen tree (or the view's own clone, once it wrote).
//
// The zero Tree has no tree; [New] makes one. A view's Trees are made by
// [Open].
type Tree[T any] struct {
	*btree.BTreeG[T]
	p *slot[T]
	// spare, in the owner, is a slot settled while no open view held it,
	// for the next views to open.
	spare *slot[T]
	// view is set in a view; mine once the view's tree is a clone of its
	// own; lent while Borrow made the embedded tree the one Peek returns.
	view, mine, lent bool
}

// New returns the owner's Tree of t.
func New[T any](t *btree.BTreeG[T]) Tree[T] { return Tree[T]{BTreeG: t} }

// Lazy is a [Tree] of any item type, as opening, reading and closing views
// on a state's trees need it: a state lists its trees as Lazies, in a
// fixed order, and the bit i of a need mask names the i-th.
type Lazy interface {
	// Frozen reports whether the tree's slot (an owner's pending slot, a
	// view's slot) has been frozen. The caller holds the mutex.
	Frozen() bool
	open(owner Lazy)
	read()
	borrow()
	giveBack()
	close()
	orEmpty(e Lazy)
}

// Open makes views[i] a view of owner[i], for every i, holding the owner's
// pending slot (opening one if there is none). It takes mu.
func Open(mu *sync.Mutex, owner, views []Lazy) {
	mu.Lock()
	defer mu.Unlock()
	for i, v := range views {
		v.open(owner[i])
	}
}

// Read freezes the trees of views whose bits are set in need (bit i for
// views[i]), if that is not done yet: each is then the view's embedded
// tree, readable without the mutex. The caller holds mu.
func Read(views []Lazy, need uint) {
	for i, v := range views {
		if need&(1<<i) != 0 {
			v.read()
		}
	}
}

// Borrow makes the trees of views whose bits are set in need readable in
// place, without freezing them: each one the view has not read is, until
// [Return], the tree [Tree.Peek] returns. The caller holds mu from Borrow
// to Return, and neither reads nor writes (Read, Mut) the views' trees in
// between otherwise.
func Borrow(views []Lazy, need uint) {
	for i, v := range views {
		if need&(1<<i) != 0 {
			v.borrow()
		}
	}
}

// Return makes the trees that [Borrow] lent unreadable again. The caller
// still holds mu.
func Return(views []Lazy) {
	for _, v := range views {
		v.giveBack()
	}
}

// Close gives up the slots of views, which must not be read again: a tree
// whose slot no open view holds is mutated in place. The caller holds mu
// and closes views once.
func Close(views []Lazy) {
	for _, v := range views {
		v.close()
	}
}

// Unread makes each tree of the closed views that they had not read the
// matching tree of empties (Trees made by [New] for an empty state), so
// that a closed view used by mistake reads nothing.
func Unread(views, empties []Lazy) {
	for i, v := range views {
		v.orEmpty(empties[i])
	}
}

func (l *Tree[T]) open(owner Lazy) {
	o := owner.(*Tree[T])
	if o.p == nil {
		if o.p, o.spare = o.spare, nil; o.p == nil {
			o.p = new(slot[T])
		}
		o.p.live = o.BTreeG
	}
	o.p.refs++
	*l = Tree[T]{p: o.p, view: true}
}

func (l *Tree[T]) read() {
	if l.BTreeG == nil {
		l.BTreeG = l.p.freeze()
	}
}

func (l *Tree[T]) borrow() {
	if l.BTreeG == nil {
		l.BTreeG, l.lent = l.Peek(), true
	}
}

func (l *Tree[T]) giveBack() {
	if l.lent {
		l.BTreeG, l.lent = nil, false
	}
}

func (l *Tree[T]) close() {
	l.p.refs--
	l.p = nil
}

func (l *Tree[T]) orEmpty(e Lazy) {
	if l.BTreeG == nil {
		l.BTreeG = e.(*Tree[T]).BTreeG
	}
}

// Peek returns a view's tree for reading under the mutex, which the caller
// holds while it reads: the frozen tree, or the owner's tree itself while
// the owner has not mutated it since the view was opened. It freezes
// nothing. The view must be open.
func (l *Tree[T]) Peek() *btree.BTreeG[T] {
	switch {
	case l.BTreeG != nil:
		return l.BTreeG
	case l.p.frozen != nil:
		return l.p.frozen
	}
	return l.p.live
}

// Mut returns the tree for mutation: in the owner, its tree once the
// pending slot is settled (see [Tree.Settle]); in a view, a clone of the
// view's own, made on its first call.
func (l *Tree[T]) Mut(mu *sync.Mutex) *btree.BTreeG[T] {
	if l.p != nil && !l.mine {
		if l.view {
			mu.Lock()
			l.BTreeG, l.mine = l.p.freeze().Clone(), true
			mu.Unlock()
		} else {
			l.Settle(mu)
		}
	}
	return l.BTreeG
}

// MutGen returns the owner's tree for mutation, like [Tree.Mut], moving the
// generation gen of the items the tree points to on if the tree has been
// frozen for a view: those items are then shared with the view, and the
// owner clones one of an older generation before modifying it. A tree no
// view froze shares nothing, and the generation stays.
func (l *Tree[T]) MutGen(mu *sync.Mutex, gen *uint64) *btree.BTreeG[T] {
	if l.Settle(mu) {
		*gen++
	}
	return l.BTreeG
}

// Settle freezes the owner's pending slot, if any, for the open views that
// hold it, and forgets it: the owner may then mutate its tree (copying on
// write if it was cloned). It reports whether the tree is now shared with
// views (the slot was frozen, now or earlier by a view that read it).
func (l *Tree[T]) Settle(mu *sync.Mutex) bool {
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

// SettleClosed is [Tree.Settle] for a slot no open view holds: it settles
// the owner's pending slot unless an open view holds it, moving gen on if
// the slot was frozen (as [Tree.MutGen] does), and reports whether the
// tree has no pending slot left. An owner that modifies in place an item of
// the current generation calls it for every tree that holds the item: a
// view that holds a slot may read the owner's tree in place ([Tree.Peek]).
func (l *Tree[T]) SettleClosed(mu *sync.Mutex, gen *uint64) bool {
	if l.p == nil {
		return true
	}
	mu.Lock()
	open := l.p.refs > 0
	mu.Unlock()
	if open {
		return false
	}
	l.MutGen(mu, gen)
	return true
}

// Pending reports whether the owner's tree has a pending slot: a view was
// opened on it since it last changed.
func (l *Tree[T]) Pending() bool { return l.p != nil }

// SameSlot reports whether the views l and o hold one slot (they were
// opened while the tree did not change).
func (l *Tree[T]) SameSlot(o *Tree[T]) bool { return l.p != nil && l.p == o.p }

// Frozen implements [Lazy].
func (l *Tree[T]) Frozen() bool { return l.p != nil && l.p.frozen != nil }
