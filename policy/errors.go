package policy

import "errors"

var (
	// ErrInvalid reports a malformed policy: a field out of range.
	ErrInvalid = errors.New("policy: invalid")
	// ErrNeverOpens reports a run policy under which no job could ever
	// start.
	ErrNeverOpens = errors.New("policy: work could never start")
)
