package hraft

import (
	"errors"
	"fmt"

	"github.com/hashicorp/raft"
)

// Sentinel errors of the package, returned wrapped: test with errors.Is.
var (
	// ErrNotLeader reports a call made on a node that is not the leader;
	// the error is a *[NotLeaderError] that names the leader, if known.
	ErrNotLeader = errors.New("hraft: not the leader")
	// ErrClosed reports a call on a closed [Service].
	ErrClosed = errors.New("hraft: service closed")
	// ErrUnexpectedResponse reports an apply response that is neither a
	// *raftfsm.Result nor an error: the raft node's FSM is not an [FSM]
	// over the service's state machine.
	ErrUnexpectedResponse = errors.New("hraft: unexpected apply response")
)

// NotLeaderError is returned by every [Service] method called on a node
// that is not (or is no longer) the leader. It wraps [ErrNotLeader] and
// the raft error that revealed it, if any. LeaderAddr and LeaderID name
// the leader this node knows of; both are empty during an election.
//
// A write that failed with it may still have been committed (leadership
// was lost after the entry was appended): a worker retries the same poll
// request (same Seq) at the new leader and gets the recorded response.
type NotLeaderError struct {
	LeaderAddr raft.ServerAddress
	LeaderID   raft.ServerID
	// Cause is the raft error (raft.ErrNotLeader, raft.ErrLeadershipLost,
	// ...) or nil when the node's state said it.
	Cause error
}

// Error describes the error and names the leader.
func (e *NotLeaderError) Error() string {
	msg := "hraft: not the leader"
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
