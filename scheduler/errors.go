package scheduler

import "errors"

// Errors returned by the scheduler's operator primitives and configuration.
// They are returned wrapped, with a message naming the offending value.
var (
	// ErrUnknownJob reports a job name the scheduler does not hold.
	ErrUnknownJob = errors.New("scheduler: unknown job")
	// ErrNotExcluded reports an operator retry of a job that is not
	// excluded.
	ErrNotExcluded = errors.New("scheduler: job not excluded")
	// ErrInvalidConfig reports a configuration that [Config.Validate]
	// rejects.
	ErrInvalidConfig = errors.New("scheduler: invalid configuration")
)
