package leader

import (
	"context"
	"fmt"
	"sync"
)

// Requests matches proposals to the entries that apply them, for a [Log]
// whose underlying log learns an entry's index only when it is applied
// (etcd-io/raft), or may drop a proposal without a word. The host puts the
// request ID in its entry's envelope; its apply loop hands each applied
// compactkit entry back with [Requests.Deliver]. Entries proposed by
// another node carry IDs this node never registered, and are ignored.
//
// IDs are unique per Requests: start each process incarnation from a base
// no earlier incarnation used (a random number, or a clock), so that an
// entry proposed before a restart is never taken for a new request.
//
// A Requests is safe for concurrent use.
type Requests struct {
	mu      sync.Mutex
	next    uint64
	waiting map[uint64]chan Applied
}

// NewRequests returns a matcher whose first ID is base (0 is never an ID).
func NewRequests(base uint64) *Requests {
	return &Requests{next: max(base, 1), waiting: map[uint64]chan Applied{}}
}

// Register allocates the ID of a new proposal; [Requests.Wait] then waits
// for it. Every registered ID must be waited for (or released by
// [Requests.Forget]).
func (r *Requests) Register() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := r.next
	r.next++
	if r.next == 0 {
		r.next = 1
	}
	r.waiting[id] = make(chan Applied, 1)
	return id
}

// Deliver hands the entry that applied the proposal id to its waiter,
// whether Wait was called yet or not; only the first delivery counts (a
// proposal appended twice is applied once by the state machine's
// idempotence, and its first entry is the one that acted). It reports
// whether the proposal is registered (false for another node's entry, or
// a proposal whose waiter gave up).
func (r *Requests) Deliver(id uint64, a Applied) bool {
	r.mu.Lock()
	ch, ok := r.waiting[id]
	r.mu.Unlock()
	if ok {
		select {
		case ch <- a:
		default:
		}
	}
	return ok
}

// Wait waits until the proposal id is delivered, or ctx ends: then the
// proposal is forgotten and the error wraps [ErrOutcomeUnknown] and the
// context's error (the entry may still be applied later; nobody waits for
// it any more).
func (r *Requests) Wait(ctx context.Context, id uint64) (Applied, error) {
	r.mu.Lock()
	ch, ok := r.waiting[id]
	r.mu.Unlock()
	if !ok {
		return Applied{}, fmt.Errorf("leader: request %d: not registered: %w", id, ErrOutcomeUnknown)
	}
	select {
	case a := <-ch:
		r.Forget(id)
		return a, nil
	case <-ctx.Done():
		r.Forget(id)
		// Deliver may have won the race.
		select {
		case a := <-ch:
			return a, nil
		default:
		}
		return Applied{}, fmt.Errorf("leader: request %d: %w: %w", id, ErrOutcomeUnknown, ctx.Err())
	}
}

// Forget stops waiting for the proposal id.
func (r *Requests) Forget(id uint64) {
	r.mu.Lock()
	delete(r.waiting, id)
	r.mu.Unlock()
}
