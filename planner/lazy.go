package planner

import (
	"github.com/google/btree"

	"github.com/compactkit/compactkit/internal/cow"
)

// Views freeze the planner's trees lazily, by the copy-on-write rule of
// internal/cow: each tree of the state is a lazy, frozen for the views
// the first time one reads it (a snapshot), or when the planner is about
// to mutate it while a view that may still read it is open; planning
// reads the trees in place under the mutex (borrow). A view writes (only
// to release a hold: PlanOptions.Release) to a clone of its own.
type lazy[T any] = cow.Tree[T]

// newLazy returns the lazy of an empty planner's tree ordered by less.
func newLazy[T any](less btree.LessFunc[T]) lazy[T] {
	return cow.New(btree.NewG(btreeDegree, less))
}

// trees lists the trees of s in the order of the need bits below.
func (s *state) trees() []cow.Lazy {
	return []cow.Lazy{&s.keys, &s.full, &s.timed, &s.aging, &s.claims, &s.quar, &s.held, &s.ranks, &s.levels}
}

// The trees a view method reads, as a mask: bit i is trees()[i].
const (
	needKeys = 1 << iota
	needFull
	needTimed
	needAging
	needClaims
	needQuar
	needHeld
	needRanks
	needLevels
	needAll = 1<<iota - 1

	needIndexes = needFull | needTimed | needAging
	needPolicy  = needHeld | needRanks | needLevels
)

// openView returns the view's state: the planner's plain values, and its
// trees as slots the view freezes when it reads them.
func (p *Planner) openView() state {
	v := p.s
	cow.Open(p.s.vmu, p.s.trees(), v.trees())
	return v
}

// borrow makes the view's trees of the mask readable in place, without
// freezing them, and holds the mutex until giveBack: the planner then
// waits for the view before it mutates a tree, and freezes it only if the
// view is still open. Planning borrows: a view closed before the next
// change has cost the planner no copy. Between borrow and giveBack the
// view must not call read or write its trees.
func (v *View) borrow(need uint) {
	v.s.vmu.Lock()
	if v.closed {
		v.s.vmu.Unlock()
		panic("planner: view used after Close")
	}
	cow.Borrow(v.s.trees(), need)
}

// giveBack ends borrow.
func (v *View) giveBack() {
	cow.Return(v.s.trees())
	v.s.vmu.Unlock()
}

// read makes the view's trees of the mask readable.
func (v *View) read(need uint) {
	v.s.vmu.Lock()
	defer v.s.vmu.Unlock()
	if v.closed {
		panic("planner: view used after Close")
	}
	cow.Read(v.s.trees(), need)
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
	cow.Close(v.s.trees())
	if len(v.named.names) > 0 {
		v.s.names.names, v.named = v.named, viewNames{}
	}
}
