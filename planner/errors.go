package planner

import "errors"

// Errors returned by the planner, always wrapped with a message that names
// the offending value. Malformed blocks return the validation errors of
// package compactkit (ErrInvalidID, ErrTimeRange, ...); malformed snapshots
// return its decoding errors (ErrMalformed, ErrTruncated, ...).
var (
	// ErrInvalidConfig reports an invalid configuration, or a change of
	// configuration that would strand blocks (see [Planner.SetConfig]).
	ErrInvalidConfig = errors.New("planner: invalid configuration")
	// ErrNotAdmissible reports a job plan that cannot be claimed now: its
	// sources are not the oldest queued blocks of its key, or its name is
	// not the one the planner gives those sources.
	ErrNotAdmissible = errors.New("planner: plan not admissible")
	// ErrUnknownJob reports a job that claims no blocks.
	ErrUnknownJob = errors.New("planner: unknown job")
	// ErrNotSource reports a block that is not a source of the job named.
	ErrNotSource = errors.New("planner: not a source of the job")
	// ErrClaimed reports a block that a job claims: an operator cannot
	// mark it (see [Planner.Mark]) before the job ends.
	ErrClaimed = errors.New("planner: block claimed")
	// ErrFinalLevel reports a block at or beyond the final level, which is
	// never compacted.
	ErrFinalLevel = errors.New("planner: block at the final level")
	// ErrInvalidForce reports a malformed [Force] entry.
	ErrInvalidForce = errors.New("planner: invalid force")
)
