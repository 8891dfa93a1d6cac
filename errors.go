package compactkit

import (
	"errors"

	"github.com/compactkit/compactkit/internal/codec"
	"github.com/compactkit/compactkit/internal/ident"
)

// ErrInvalid reports a value that breaks a rule of the vocabulary: an
// empty or malformed identifier, an inverted time range, a negative size,
// an unknown status or kind, a success without outputs, fields that
// contradict each other. Validate methods return errors wrapping it, with
// a message that names the offending field.
var ErrInvalid = ident.ErrInvalid

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
