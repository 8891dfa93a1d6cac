package leader

import (
	"context"
	"errors"
	"fmt"

	"github.com/compactkit/compactkit/raftfsm"
)

// Log is what a host's replicated log provides to the [Service]: propose
// compactkit's command bytes and learn how they were applied, say who
// leads, and wait until what is committed is applied locally. hashicorp/raft,
// etcd-io/raft and a bucket with conditional writes all implement it; the
// host's FSM routes compactkit's entries to [raftfsm.FSM.Apply].
//
// Implementations must honour every context: no method may wait past its
// context's end.
type Log interface {
	// Propose appends an entry carrying cmd — compactkit's encoded command,
	// which the host wraps in its own envelope (a tag byte, a request ID)
	// — and waits until this node has applied it. It returns the entry's
	// position and what applying cmd returned.
	//
	// preparedAt is the index of the last entry applied to the local state
	// machine when cmd was prepared (0 for a command that does not depend
	// on the state). A log that appends only at a known tip (the bucket
	// log) refuses an append whose state is no longer the tip with an error
	// wrapping [ErrConflict], having caught up with what it missed; the
	// service prepares again and retries. Other logs ignore it.
	//
	// An error wrapping [ErrOutcomeUnknown] says the entry may or may not
	// be committed (a timeout, a lost leader, a dropped proposal); an error
	// wrapping [ErrNotLeader] (a *[NotLeaderError]) that this node does not
	// lead and nothing was appended. A command the state machine refused
	// is not an error of Propose: it is Applied.Err.
	Propose(ctx context.Context, cmd []byte, preparedAt uint64) (Applied, error)
	// Leader reports whether this node leads, in which term, and who
	// leads as far as it knows.
	Leader() Leadership
	// Barrier returns once everything committed before the call has been
	// applied to the local state machine.
	Barrier(ctx context.Context) error
}

// Applied is how an entry proposed through a [Log] was applied.
type Applied struct {
	// Index and Term are the entry's position in the log.
	Index, Term uint64
	// Result is what [raftfsm.FSM.Apply] returned, or nil with Err.
	Result *raftfsm.Result
	// Err is the state machine's refusal of the command: it changed
	// nothing, on every replica.
	Err error
}

// Leadership is what a node knows of who leads.
type Leadership struct {
	// Leads reports that this node is the leader of Term.
	Leads bool
	// Term is the node's current term (or epoch).
	Term uint64
	// LeaderID and LeaderAddr name the leader this node knows of, for a
	// client to find it; both are empty during an election.
	LeaderID, LeaderAddr string
}

// Sentinel errors. Errors are returned wrapped: test with errors.Is.
var (
	// ErrNotLeader reports a call on a node that does not lead; the error
	// is a *[NotLeaderError] naming the leader, when known.
	ErrNotLeader = errors.New("leader: not the leader")
	// ErrOutcomeUnknown reports a proposal that may or may not have been
	// committed. The service resolves it for polls (it retries the same
	// worker sequence, which the poll log answers once); for other writes
	// it is returned, and retrying is the caller's choice.
	ErrOutcomeUnknown = errors.New("leader: proposal outcome unknown")
	// ErrConflict reports an append refused because the state it was
	// prepared on is no longer the tip of the log (the bucket log lost a
	// race). The service prepares again and retries, a bounded number of
	// times.
	ErrConflict = errors.New("leader: append conflict")
	// ErrClosed reports a call on a closed [Service].
	ErrClosed = errors.New("leader: service closed")
)

// NotLeaderError is returned by every [Service] method called on a node
// that does not (or no longer) lead. It wraps [ErrNotLeader] and the
// log's error that revealed it, if any.
//
// A write that failed with it may still have been committed (leadership
// was lost after the entry was appended): a worker retries the same poll
// request (same sequence number) at the new leader and gets the recorded
// response.
type NotLeaderError struct {
	// LeaderID and LeaderAddr name the leader this node knows of; both
	// are empty during an election.
	LeaderID, LeaderAddr string
	// Cause is the log's error, or nil when the node's state said it.
	Cause error
}

// Error describes the error and names the leader.
func (e *NotLeaderError) Error() string {
	msg := "leader: not the leader"
	if e.LeaderAddr != "" || e.LeaderID != "" {
		msg += fmt.Sprintf("; leader is %s at %s", e.LeaderID, e.LeaderAddr)
	} else {
		msg += "; no known leader"
	}
	if e.Cause != nil {
		msg += ": " + e.Cause.Error()
	}
	return msg
}

// Unwrap returns ErrNotLeader and the cause, for errors.Is.
func (e *NotLeaderError) Unwrap() []error {
	if e.Cause == nil {
		return []error{ErrNotLeader}
	}
	return []error{ErrNotLeader, e.Cause}
}

// notLeader builds the error of a node that does not lead.
func notLeader(l Leadership, cause error) error {
	return &NotLeaderError{LeaderID: l.LeaderID, LeaderAddr: l.LeaderAddr, Cause: cause}
}
