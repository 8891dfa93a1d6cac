package raftfsm

import "errors"

// Sentinel errors of the package. They are returned wrapped, with a message
// that names the offending value; test with errors.Is. Decoding errors wrap
// the root package's sentinels (compactkit.ErrMalformed, ...), and
// component errors those of the component (planner.ErrConfig, ...).
var (
	// ErrInvalidConfig reports a configuration Config.Validate rejects.
	ErrInvalidConfig = errors.New("raftfsm: invalid configuration")
	// ErrInvalidCommand reports a command that decodes but is not
	// well-formed: no operation, several operations, or invalid fields.
	ErrInvalidCommand = errors.New("raftfsm: invalid command")
	// ErrStaleRequest reports a poll whose sequence number is below the
	// worker's latest recorded one: an old retry, overtaken by a newer
	// request. Nothing is done for it.
	ErrStaleRequest = errors.New("raftfsm: stale poll request")
	// ErrInvalidRequest reports a poll request that is malformed or
	// inconsistent with the jobs it reports on (a success without outputs,
	// say). Nothing is done for it.
	ErrInvalidRequest = errors.New("raftfsm: invalid poll request")
	// ErrOperator reports an operator command that cannot be carried out
	// (an unknown job, a job that is not excluded, ...). Nothing changes.
	ErrOperator = errors.New("raftfsm: operator command refused")
	// ErrClusterVersion reports a cluster version this release cannot
	// write, or one lower than the current.
	ErrClusterVersion = errors.New("raftfsm: unsupported cluster version")
)
