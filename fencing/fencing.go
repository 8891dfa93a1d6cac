package fencing

import (
	"errors"
	"fmt"
	"sync"
)

// Token is a fencing token: the Raft log index of the entry whose Apply made
// an assignment. Tokens only grow; the zero Token is never issued, because
// Raft log indexes start at 1.
type Token uint64

// Owns reports whether a worker presenting the token presented owns a job
// whose state is described by inProgress and held: it does iff the job is in
// progress and presented == held. See the package documentation for why the
// rule is equality rather than "not older than".
func Owns(inProgress bool, held, presented Token) bool {
	return inProgress && presented == held
}

// ErrStaleToken is the sentinel wrapped by the errors [Guard.Check] returns
// when a token is older than one already seen for the same resource.
var ErrStaleToken = errors.New("fencing: stale token")

// Guard remembers, per resource, the highest token it has seen, and rejects
// older tokens. A host's storage layer can call [Guard.Check] before each write
// made on behalf of a compaction attempt, with the resource the write belongs
// to (a job name or an output prefix, say).
//
// A Guard is in-process only: it sees the writes of one process and forgets
// everything on restart. The real fencing guarantee is the commit-time token
// check of the state machine (see [Owns]); the Guard is an extra line of
// defence for hosts whose store can call it.
//
// The zero value is an empty Guard ready to use. A Guard is safe for
// concurrent use by multiple goroutines and must not be copied after first
// use.
type Guard struct {
	mu     sync.Mutex
	tokens map[string]Token // the highest token accepted per resource
}

// Check accepts the token t for resource if t is at least the highest token
// seen for resource so far, recording t as the new highest if it is larger.
// A token lower than the highest is rejected with an error wrapping
// [ErrStaleToken] that names the resource and both tokens; the recorded
// highest token is unchanged.
func (g *Guard) Check(resource string, t Token) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if h, ok := g.tokens[resource]; ok && t < h {
		return fmt.Errorf("%w: resource %q: token %d is older than token %d", ErrStaleToken, resource, t, h)
	}
	if g.tokens == nil {
		g.tokens = make(map[string]Token)
	}
	g.tokens[resource] = t
	return nil
}

// Forget drops everything the Guard remembers about resource, so that a
// long-running host does not accumulate entries for resources whose jobs have
// ended. Forgetting re-opens the door to old tokens: after Forget, any token
// is accepted for resource again. Call it only once the resource is finished
// and no attempt can write to it any more.
func (g *Guard) Forget(resource string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.tokens, resource)
}
