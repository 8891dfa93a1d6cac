package leader

import (
	"context"
	"errors"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/policy"
	"github.com/compactkit/compactkit/raftfsm"
)

// Class is what an error returned by a [Service] call (or by the state
// machine behind it) means to the caller that sent the request. Every
// handler that serves the service over a network maps classes, not
// individual errors, to its status codes, so that one table decides
// whose fault a failure is.
type Class int

// The classes, from the caller's point of view.
const (
	// Internal is a fault of the service itself: a bug or a failed log
	// that the caller can do nothing about (HTTP 500).
	Internal Class = iota
	// Invalid is the caller's fault: the request is malformed or breaks a
	// rule of the vocabulary (a malformed identifier, an unknown status,
	// an over-limit poll), and sending it again cannot succeed (HTTP 400).
	Invalid
	// Conflict is a well-formed request the current state refuses: an
	// operator command on an unknown or finished job, a policy that could
	// never open, a command the cluster version does not support yet, a
	// stale poll. It may succeed after the state changes (HTTP 409).
	Conflict
	// NotLeader is a request sent to a node that does not lead; the error
	// is a [*NotLeaderError] naming the leader when one is known (HTTP
	// 421 with the leader's address, or 503 while there is none).
	NotLeader
	// Unavailable is a request whose outcome is unknown or that could not
	// be served now: the proposal's outcome is unknown, the service is
	// closed, the caller's deadline passed. Retrying is safe for polls
	// (same sequence number) and for idempotent commands (HTTP 503).
	Unavailable
)

// String returns the class's name.
func (c Class) String() string {
	switch c {
	case Invalid:
		return "invalid"
	case Conflict:
		return "conflict"
	case NotLeader:
		return "not-leader"
	case Unavailable:
		return "unavailable"
	default:
		return "internal"
	}
}

// callerFaults are the sentinels whose wrapping marks a request that can
// never succeed as it was sent.
var callerFaults = [...]error{
	ck.ErrInvalid,
	ck.ErrMalformed, ck.ErrTruncated, ck.ErrUnknownVersion, ck.ErrTooLarge,
	raftfsm.ErrInvalidCommand, raftfsm.ErrInvalidRequest, raftfsm.ErrLimit,
	policy.ErrInvalid, ck.ErrRejected,
}

// refusals are the sentinels of a request the state refuses for now,
// whatever else their error wraps: the state machine reports a policy
// that could never open, or a command the cluster version does not
// support yet, as an invalid command too.
var refusals = [...]error{raftfsm.ErrClusterVersion, policy.ErrNeverOpens}

// conflicts are the sentinels of a well-formed request the state refuses.
var conflicts = [...]error{raftfsm.ErrOperator, raftfsm.ErrStaleRequest}

// Classify returns the class of err; nil has no class and returns
// [Internal]. Not the leader is judged first (a not-leader error may wrap
// the log's own failure), then the refusals that are conflicts whatever
// else they wrap (a policy that could never open, a command the cluster
// version does not support), then the caller's faults, then the other
// conflicts, then unavailability; anything else is [Internal].
func Classify(err error) Class {
	if errors.Is(err, ErrNotLeader) {
		return NotLeader
	}
	for _, s := range refusals {
		if errors.Is(err, s) {
			return Conflict
		}
	}
	for _, s := range callerFaults {
		if errors.Is(err, s) {
			return Invalid
		}
	}
	for _, s := range conflicts {
		if errors.Is(err, s) {
			return Conflict
		}
	}
	if errors.Is(err, ErrOutcomeUnknown) || errors.Is(err, ErrClosed) || errors.Is(err, ErrConflict) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return Unavailable
	}
	return Internal
}
