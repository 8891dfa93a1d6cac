package planner

import "errors"

// The planner's errors are always wrapped with a message that names the
// offending value. Malformed blocks return the validation errors of
// package compactkit (ErrInvalidID, ErrTimeRange, ...); malformed
// snapshots return its decoding errors (ErrMalformed, ErrTruncated, ...).

// ErrInvalidConfig reports an invalid configuration, or a change of
// configuration that would strand blocks (see [Planner.SetConfig]).
var ErrInvalidConfig = errors.New("planner: invalid configuration")

// ErrNotAdmissible reports a job plan that cannot be claimed now: its
// sources are not the oldest queued blocks of its key, or its name is not
// the one the planner gives those sources.
var ErrNotAdmissible = errors.New("planner: plan not admissible")

// The other errors are only printed: the state machine treats each as a
// refused operation or a broken invariant, whichever the call.
var (
	errUnknownJob   = errors.New("planner: unknown job")              // a job that claims no blocks
	errNotSource    = errors.New("planner: not a source of the job")  // a block that is not a source of the job named
	errClaimed      = errors.New("planner: block claimed")            // by a job: an operator cannot mark it before the job ends
	errFinalLevel   = errors.New("planner: block at the final level") // never compacted
	errInvalidForce = errors.New("planner: invalid force")            // a malformed [Force] entry
)
