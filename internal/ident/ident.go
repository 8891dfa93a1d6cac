// Package ident holds the rules of compactkit's identifiers (block IDs,
// job names, tenants, worker IDs), the bounds of its names and reasons,
// and the errors of its validation: one home for the root package's
// Validate methods and the state packages that check the same values.
//
// Every error of validation wraps ErrInvalid (errors.Is), which the root
// package exports as compactkit.ErrInvalid; the finer sentinels here keep
// their own messages and let this repository's tests tell them apart.
package ident

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ErrInvalid is what every validation error wraps.
var ErrInvalid = errors.New("compactkit: invalid")

// invalid is a validation sentinel: its own message, and errors.Is
// matches it and ErrInvalid.
type invalid string

func (e invalid) Error() string { return string(e) }

// Is reports whether target is ErrInvalid.
func (e invalid) Is(target error) bool { return target == ErrInvalid }

// Validation errors: each wraps ErrInvalid, with a message of its own.
var (
	// ErrEmptyID reports a missing block ID, job name or worker ID.
	ErrEmptyID = invalid("compactkit: empty identifier")
	// ErrInvalidID reports an identifier that is too long or contains
	// characters or path segments that are not allowed.
	ErrInvalidID = invalid("compactkit: invalid identifier")
	// ErrTimeRange reports a time range whose minimum is after its maximum,
	// or a dataset outside its block's range.
	ErrTimeRange = invalid("compactkit: invalid time range")
	// ErrNegative reports a negative size, count or slot number.
	ErrNegative = invalid("compactkit: negative value")
	// ErrUnknownStatus reports a job or report status outside the defined
	// values.
	ErrUnknownStatus = invalid("compactkit: unknown status")
	// ErrUnknownChange reports a change kind, outcome or tombstone kind
	// outside the defined values.
	ErrUnknownChange = invalid("compactkit: unknown kind")
	// ErrMissingOutputs reports a success report without output blocks for
	// a job that had sources.
	ErrMissingOutputs = invalid("compactkit: success without outputs")
	// ErrInconsistent reports fields that contradict each other, such as a
	// dataset of another tenant in a single-tenant block, a repeated source
	// or outputs on a report that is not a success.
	ErrInconsistent = invalid("compactkit: inconsistent fields")
)

// Limits on identifiers. They keep keys, snapshots and object names bounded.
const (
	// MaxIDLen is the maximum length in bytes of a block ID.
	MaxIDLen = 512
	// MaxNameLen is the maximum length in bytes of a job name, worker ID,
	// tenant or dataset name.
	MaxNameLen = 256
)

// ValidateID reports whether id is a valid block ID. A block ID is a
// relative object path: 1 to [MaxIDLen] bytes of valid UTF-8 without
// control characters or backslashes, made of '/'-separated segments none of
// which is empty, "." or "..". IDs written by ingest are typically ULIDs;
// compaction outputs are named by compactkit.OutputID.
func ValidateID(id string) error {
	if plainID(id) {
		return nil
	}
	return validateID(id)
}

// plainID is the fast path of [ValidateID] for the common case, ASCII IDs:
// true means valid; false means "apply the full rules" (control or
// non-ASCII bytes, backslashes, or a segment that may be empty, "." or "..").
// It never accepts an ID the full rules refuse.
func plainID(id string) bool {
	if len(id) == 0 || len(id) > MaxIDLen {
		return false
	}
	// Eight bytes at a time while none of them needs a look of its own
	// (see ordinary8): they only lengthen the first segment.
	i := 0
	for i+8 <= len(id) && ordinary8(load8(id, i)) {
		i += 8
	}
	return plainFrom(id, i, i)
}

// plainFrom applies plainID's rules byte by byte to id from i, where the
// current segment has seg bytes before i, none of them a dot.
func plainFrom(id string, i, seg int) bool {
	dots := 0 // the dots of the current segment
	for ; i < len(id); i++ {
		c := id[i]
		switch {
		case c-0x20 >= 0x7f-0x20 || c == '\\':
			return false
		case c == '/':
			if seg == 0 || seg == dots && seg <= 2 {
				return false
			}
			seg, dots = 0, 0
			continue
		case c == '.':
			dots++
		}
		seg++
	}
	return seg != dots || seg > 2
}

// load8 returns the eight bytes of s from i, little-endian (one load).
func load8(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// SWAR constants: a byte's lowest bit, and its highest, in each byte.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// nonPrintable8 returns, in each byte's high bit, a mark for the bytes of
// w outside printable ASCII (0x20 to 0x7e) — exactly which bytes carry
// marks is not defined, but there is at least one if and only if some
// byte is outside. It tests the eight at once (SWAR): once no byte has its
// high bit set, a byte of w is below 0x20 exactly where w-0x20*ones
// borrows into a clear high bit, and equals 0x7f where w^0x7f*ones is zero.
func nonPrintable8(w uint64) uint64 {
	return w&highs | (w-0x20*ones)&^w&highs | zero8(w^0x7f*ones)
}

// zero8 marks, as nonPrintable8 does, the zero bytes of x when no byte of x
// has its high bit set.
func zero8(x uint64) uint64 { return (x - ones) &^ x & highs }

// ordinary8 reports whether the eight bytes of w are all printable ASCII
// and none is '\\', '/' or '.': bytes that plainID only counts.
func ordinary8(w uint64) bool {
	return nonPrintable8(w)|zero8(w^'\\'*ones)|zero8(w^'/'*ones)|zero8(w^'.'*ones) == 0
}

// validateID applies the full rules of [ValidateID].
func validateID(id string) error {
	if id == "" {
		return fmt.Errorf("block ID: %w", ErrEmptyID)
	}
	if len(id) > MaxIDLen {
		return fmt.Errorf("block ID of %d bytes, limit %d: %w", len(id), MaxIDLen, ErrInvalidID)
	}
	if !utf8.ValidString(id) || strings.ContainsFunc(id, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' }) {
		return fmt.Errorf("block ID %q: invalid characters: %w", id, ErrInvalidID)
	}
	for seg := range strings.SplitSeq(id, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("block ID %q: segment %q not allowed: %w", id, seg, ErrInvalidID)
		}
	}
	return nil
}

// ValidateName checks a tenant, dataset name or worker ID: at most
// MaxNameLen bytes of valid UTF-8 without control characters; empty only
// where allowed.
func ValidateName(what, s string, emptyOK bool) error {
	switch {
	case s == "" && !emptyOK:
		return fmt.Errorf("%s: %w", what, ErrEmptyID)
	case len(s) > MaxNameLen:
		return fmt.Errorf("%s: %d bytes, limit %d: %w", what, len(s), MaxNameLen, ErrInvalidID)
	case printableASCII(s):
		return nil
	case !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return fmt.Errorf("%s %q: invalid characters: %w", what, s, ErrInvalidID)
	}
	return nil
}

// printableASCII reports whether s has only printable ASCII bytes (0x20 to
// 0x7e): the fast path of ValidateName, for the common case.
func printableASCII(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if nonPrintable8(load8(s, i)) != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}

// ValidateTenant reports whether tenant is a valid tenant name: at most
// [MaxNameLen] bytes of valid UTF-8 without control characters. The empty
// tenant is valid (it keys multi-tenant level-0 segments).
func ValidateTenant(tenant string) error { return ValidateName("tenant", tenant, true) }

// ValidateWorkerID reports whether id is a valid worker ID: 1 to
// [MaxNameLen] bytes of valid UTF-8 without control characters.
func ValidateWorkerID(id string) error { return ValidateName("worker ID", id, false) }

// ValidateJobName reports whether name is a valid job name: 1 to
// [MaxNameLen] bytes of ASCII letters, digits, '.', '_' and '-', and
// neither "." nor "..". Job names are object-path segments (see
// compactkit.AttemptPrefix), hence the restricted alphabet.
func ValidateJobName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("job name: %w", ErrEmptyID)
	case len(name) > MaxNameLen:
		return fmt.Errorf("job name of %d bytes, limit %d: %w", len(name), MaxNameLen, ErrInvalidID)
	case name == "." || name == "..":
		return fmt.Errorf("job name %q: %w", name, ErrInvalidID)
	}
	i := 0
	for i+8 <= len(name) && nameBytes8(load8(name, i)) {
		i += 8
	}
	for ; i < len(name); i++ {
		if !isNameByte(name[i]) {
			return fmt.Errorf("job name %q: byte %q not allowed: %w", name, name[i], ErrInvalidID)
		}
	}
	return nil
}

// nameBytes8 reports whether the eight bytes of w are all in the job-name
// alphabet, testing them at once (SWAR): with no high bit set, a byte is
// at least lo where adding 0x80-lo carries into its high bit, and above hi
// where adding 0x7f-hi does.
func nameBytes8(w uint64) bool {
	if w&highs != 0 {
		return false
	}
	return (inRange8(w, '-', '.')|inRange8(w, '0', '9')|inRange8(w, 'A', 'Z')|
		inRange8(w, '_', '_')|inRange8(w, 'a', 'z'))&highs == highs
}

// inRange8 marks, in each byte's high bit, the bytes of w from lo to hi
// (the other bits are not defined), when no byte of w has its high bit
// set.
func inRange8(w uint64, lo, hi byte) uint64 {
	return (w + uint64(0x80-lo)*ones) &^ (w + uint64(0x7f-hi)*ones)
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

// SanitizeName maps s onto the job-name alphabet (see [ValidateJobName]),
// replacing other bytes by '_' and truncating to max bytes. Planners use it
// for the readable parts of job names; uniqueness comes from a hash.
func SanitizeName(s string, max int) string {
	b := []byte(s)
	if len(b) > max {
		b = b[:max]
	}
	for i, c := range b {
		if !isNameByte(c) {
			b[i] = '_'
		}
	}
	return string(b)
}

// MaxJobHistory bounds compactkit.JobState.History.
const MaxJobHistory = 8

// MaxReasonLen bounds a failure or quarantine reason kept in the
// replicated state, in bytes.
const MaxReasonLen = 1024

// ClipReason makes a reason valid UTF-8 (invalid bytes become U+FFFD) of at
// most [MaxReasonLen] bytes, cut at a character boundary.
func ClipReason(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= MaxReasonLen {
		return s
	}
	n := MaxReasonLen
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// MaxSignatureLen bounds a token signature, in bytes.
const MaxSignatureLen = 128

// The last value of the root package's enumerations that the state
// machine checks before it acts on one (each starts at 1); the root
// package's tests hold them equal to its constants.
const (
	LastChangeKind   = 9
	LastJobStatus    = 3
	LastReportStatus = 4
)

// CheckChangeKind reports whether k is a defined change kind.
func CheckChangeKind(k uint8) error {
	if k < 1 || k > LastChangeKind {
		return fmt.Errorf("change kind %d: %w", k, ErrUnknownChange)
	}
	return nil
}

// CheckJobStatus reports whether s is a defined job status.
func CheckJobStatus(s uint8) error {
	if s < 1 || s > LastJobStatus {
		return fmt.Errorf("job status %d: %w", s, ErrUnknownStatus)
	}
	return nil
}

// CheckReportStatus reports whether s is a defined report status.
func CheckReportStatus(s uint8) error {
	if s < 1 || s > LastReportStatus {
		return fmt.Errorf("report status %d: %w", s, ErrUnknownStatus)
	}
	return nil
}
