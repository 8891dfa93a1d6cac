package compactkit

import (
	"errors"

	"github.com/compactkit/compactkit/internal/codec"
)

// Validation errors. Validate methods return errors wrapping one of these,
// with a message that names the offending field.
var (
	// ErrEmptyID reports a missing block ID, job name or worker ID.
	ErrEmptyID = errors.New("compactkit: empty identifier")
	// ErrInvalidID reports an identifier that is too long or contains
	// characters or path segments that are not allowed.
	ErrInvalidID = errors.New("compactkit: invalid identifier")
	// ErrTimeRange reports a time range whose minimum is after its maximum,
	// or a dataset outside its block's range.
	ErrTimeRange = errors.New("compactkit: invalid time range")
	// ErrNegative reports a negative size, count or slot number.
	ErrNegative = errors.New("compactkit: negative value")
	// ErrUnknownStatus reports a job or report status outside the defined
	// values.
	ErrUnknownStatus = errors.New("compactkit: unknown status")
	// ErrUnknownChange reports a change kind, outcome or tombstone kind
	// outside the defined values.
	ErrUnknownChange = errors.New("compactkit: unknown kind")
	// ErrMissingOutputs reports a success report without output blocks for
	// a job that had sources.
	ErrMissingOutputs = errors.New("compactkit: success without outputs")
	// ErrInconsistent reports fields that contradict each other, such as a
	// dataset of another tenant in a single-tenant block, a repeated source
	// or outputs on a report that is not a success.
	ErrInconsistent = errors.New("compactkit: inconsistent fields")
)

// ErrRejected is the error, wrapped, that a leader returns for a poll
// request it refused as invalid without applying it (an HTTP transport's
// 400 Bad Request; raftfsm's ErrInvalidRequest), and that a worker's
// transport returns for it: as opposed to a transport failure, after
// which the request may or may not have been applied, retrying the same
// request cannot succeed. A worker then reports the request's successes
// as failures (the only part of a request the leader checks against its
// state is a success report's outputs) and sends a new request, with the
// next sequence number, after a backoff.
var ErrRejected = errors.New("compactkit: request rejected by the leader")

// Decoding errors, shared by every decoder in compactkit (commands,
// snapshots, poll messages, block metadata): an error from any of them
// matches these with errors.Is, whichever package returned it.
var (
	// ErrMalformed reports input that is not a valid encoding.
	ErrMalformed = codec.ErrMalformed
	// ErrTruncated reports input that ends before the value does.
	ErrTruncated = codec.ErrTruncated
	// ErrUnknownVersion reports an encoding version this release does not
	// read.
	ErrUnknownVersion = codec.ErrUnknownVersion
	// ErrTooLarge reports input beyond a decode limit.
	ErrTooLarge = codec.ErrTooLarge
	// ErrChecksum reports a snapshot whose checksum does not match.
	ErrChecksum = codec.ErrChecksum
)
