package hraft

import (
	"errors"

	"github.com/compactkit/compactkit/leader"
)

// Errors of the package, returned wrapped: test with errors.Is. The
// leadership errors are the leader service's.
var (
	// ErrNotLeader reports a call made on a node that is not the leader;
	// the error is a *[NotLeaderError] that names the leader, if known.
	ErrNotLeader = leader.ErrNotLeader
	// ErrClosed reports a call on a closed [Service].
	ErrClosed = leader.ErrClosed
	// ErrUnexpectedResponse reports an apply response that is neither a
	// *raftfsm.Result nor an error: the raft node's FSM does not hand back
	// what the service's state machine returned.
	ErrUnexpectedResponse = errors.New("hraft: unexpected apply response")
)

// NotLeaderError is returned by every [Service] method called on a node
// that is not (or is no longer) the leader; LeaderID and LeaderAddr are
// raft's server ID and address of the leader this node knows of.
type NotLeaderError = leader.NotLeaderError
