package hraft

import (
	"errors"
)

// ErrUnexpectedResponse reports an apply response that is neither a
// *raftfsm.Result nor an error: the raft node's FSM does not hand back
// what the service's state machine returned. It is returned wrapped: test
// with errors.Is. The leadership errors are the leader service's
// (leader.ErrNotLeader, leader.ErrClosed, *leader.NotLeaderError).
var ErrUnexpectedResponse = errors.New("hraft: unexpected apply response")
