package raftfsm

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors of the package. They are returned wrapped, with a message
// that names the offending value; test with errors.Is. Decoding errors wrap
// the root package's sentinels (compactkit.ErrMalformed, ...), and
// component errors those of the component (planner.ErrInvalidConfig, ...).
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
	// write, one lower than the current, or a command or setting that needs
	// a cluster version the cluster has not reached.
	ErrClusterVersion = errors.New("raftfsm: unsupported cluster version")
	// ErrCorrupt reports a replica that stopped because it read an entry
	// it cannot trust: a command whose checksum does not match, of a
	// version this release does not know, or — once the cluster version is
	// 2 — that does not decode. Skipping such an entry would make the
	// replica diverge from the others, so it applies nothing more: every
	// later Apply and Prepare returns an error wrapping ErrCorrupt, and
	// [FSM.Stats] reports it, until a snapshot is restored.
	ErrCorrupt = errors.New("raftfsm: replica stopped on a corrupt entry")
	// ErrLimit reports a request or command carrying more than the
	// replicated [Limits] allow. Nothing is done for it.
	ErrLimit = errors.New("raftfsm: over a limit")
	// ErrClock reports a command time further ahead of the log's time than
	// the replicated [Config.MaxClockStep] allows. Nothing is done for it.
	ErrClock = errors.New("raftfsm: command time out of bounds")
)

// entryError is the error Apply returns for an entry it refused or could
// not apply: the entry's index and the cause, which wraps the sentinels
// above (test with errors.Is).
type entryError struct {
	Index uint64
	Err   error
}

// Error names the package and the entry once: "raftfsm: entry 14: command
// version 6 above the cluster version 5: raftfsm: unsupported cluster
// version" reads "raftfsm: entry 14: command version 6 above the cluster
// version 5: unsupported cluster version".
func (e *entryError) Error() string {
	msg := strings.TrimPrefix(e.Err.Error(), "raftfsm: ")
	return fmt.Sprintf("raftfsm: entry %d: %s", e.Index, strings.ReplaceAll(msg, ": raftfsm: ", ": "))
}

// Unwrap returns the cause.
func (e *entryError) Unwrap() error { return e.Err }
