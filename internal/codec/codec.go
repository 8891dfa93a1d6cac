package codec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"

	"github.com/fxamacker/cbor/v2"
)

// Sentinel errors. Every decoding failure wraps exactly one of them.
var (
	// ErrMalformed reports input that is not a valid encoding of the
	// expected value.
	ErrMalformed = errors.New("malformed encoding")
	// ErrTruncated reports input that ends before the value does.
	ErrTruncated = errors.New("truncated input")
	// ErrUnknownVersion reports a header whose magic or version this
	// release does not understand.
	ErrUnknownVersion = errors.New("unknown encoding version")
	// ErrTooLarge reports input that exceeds a decode limit.
	ErrTooLarge = errors.New("input exceeds decode limit")
	// ErrChecksum reports a stream whose checksum does not match its
	// contents.
	ErrChecksum = errors.New("checksum mismatch")
)

// Limits bound what a decoder accepts, so that hostile input cannot exhaust
// memory. Zero fields take the value of [DefaultLimits].
type Limits struct {
	// MaxArrayElements bounds the length of any array.
	MaxArrayElements int
	// MaxMapPairs bounds the size of any map.
	MaxMapPairs int
	// MaxNestedLevels bounds the nesting depth of arrays and maps.
	MaxNestedLevels int
	// MaxBytes bounds the size of one encoded message or stream frame.
	MaxBytes int
}

// DefaultLimits are the limits for commands and poll messages: generous
// for legitimate traffic, small enough that a single message cannot take
// more than a few tens of megabytes.
var DefaultLimits = Limits{
	MaxArrayElements: 1 << 17,
	MaxMapPairs:      1 << 10,
	MaxNestedLevels:  12,
	MaxBytes:         32 << 20,
}

// SnapshotLimits are the limits for snapshot frames. Snapshot writers split
// large collections into frames of at most [FrameRecords] records, so the
// array limit only needs to cover one frame's columns.
var SnapshotLimits = Limits{
	MaxArrayElements: 1 << 20,
	MaxMapPairs:      1 << 10,
	MaxNestedLevels:  12,
	MaxBytes:         256 << 20,
}

// FrameRecords is the number of records snapshot writers put in one frame.
const FrameRecords = 1 << 16

func (l Limits) withDefaults() Limits {
	if l.MaxArrayElements <= 0 {
		l.MaxArrayElements = DefaultLimits.MaxArrayElements
	}
	if l.MaxMapPairs <= 0 {
		l.MaxMapPairs = DefaultLimits.MaxMapPairs
	}
	if l.MaxNestedLevels <= 0 {
		l.MaxNestedLevels = DefaultLimits.MaxNestedLevels
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultLimits.MaxBytes
	}
	return l
}

// Codec encodes and decodes values deterministically under a set of
// limits. It is immutable and safe for concurrent use.
type Codec struct {
	enc    cbor.UserBufferEncMode
	dec    cbor.DecMode
	limits Limits
	// compact is the codec of the compact form (see [Codec.Compact]):
	// this one if isCompact.
	compact   *Codec
	isCompact bool
	types     *types // of the compact codec
}

// New returns a codec with the given limits (zero fields take defaults).
func New(l Limits) (*Codec, error) {
	l = l.withDefaults()
	eo := cbor.CoreDetEncOptions()
	// Nil and empty collections are the same value to compactkit and must
	// encode identically, or replicas holding one and the other would
	// produce different snapshots.
	eo.NilContainers = cbor.NilContainerAsEmpty
	// compactkit types implement encoding.BinaryMarshaler with a versioned
	// header for standalone use; nested values are plain CBOR.
	eo.BinaryMarshaler = cbor.BinaryMarshalerNone
	enc, err := eo.UserBufferEncMode()
	if err != nil {
		return nil, fmt.Errorf("codec: encoder options: %w", err)
	}
	dec, err := cbor.DecOptions{
		DupMapKey:         cbor.DupMapKeyEnforcedAPF,
		IndefLength:       cbor.IndefLengthForbidden,
		TagsMd:            cbor.TagsForbidden,
		MaxNestedLevels:   max(l.MaxNestedLevels, 4),
		MaxArrayElements:  max(l.MaxArrayElements, 16),
		MaxMapPairs:       max(l.MaxMapPairs, 16),
		UTF8:              cbor.UTF8RejectInvalid,
		ExtraReturnErrors: cbor.ExtraDecErrorUnknownField,
		BinaryUnmarshaler: cbor.BinaryUnmarshalerNone,
	}.DecMode()
	if err != nil {
		return nil, fmt.Errorf("codec: decoder options: %w", err)
	}
	c := &Codec{enc: enc, dec: dec, limits: l}
	c.compact = &Codec{enc: enc, dec: dec, limits: l, isCompact: true, types: &types{}}
	c.compact.compact = c.compact
	return c, nil
}

// Must is like [New] for limits known to be valid; it panics on error,
// which can only be a programming error.
func Must(l Limits) *Codec {
	c, err := New(l)
	if err != nil {
		panic(err)
	}
	return c
}

// Default is the codec for commands and poll messages.
//
// It is a package-level value, but immutable: it holds no state that
// changes after construction.
var Default = Must(DefaultLimits)

// Snapshot is the codec for snapshot frames.
var Snapshot = Must(SnapshotLimits)

// Limits returns the codec's limits.
func (c *Codec) Limits() Limits { return c.limits }

// Marshal encodes v deterministically, without a header, in the codec's
// form (see [Codec.Compact]).
func (c *Codec) Marshal(v any) ([]byte, error) {
	b, err := c.enc.Marshal(c.form(v))
	if err != nil {
		return nil, fmt.Errorf("codec: encode %T: %w", v, err)
	}
	return b, nil
}

// Append is [Codec.Marshal] appending the encoding to dst: a caller that
// reuses dst's array encodes without an allocation of its own.
func (c *Codec) Append(dst []byte, v any) ([]byte, error) {
	buf := bytes.NewBuffer(dst)
	if err := c.enc.MarshalToBuffer(c.form(v), buf); err != nil {
		return dst, fmt.Errorf("codec: encode %T: %w", v, err)
	}
	return buf.Bytes(), nil
}

// form returns what encodes v in the codec's form: v itself in the full
// form.
func (c *Codec) form(v any) any {
	if c.isCompact {
		return newWalker(c).compact(reflect.ValueOf(v))
	}
	return v
}

// Unmarshal decodes exactly one value, in the codec's form, from data into
// v. Trailing bytes, a value of the wrong shape and input beyond the
// limits are errors wrapping [ErrMalformed], [ErrTruncated] or
// [ErrTooLarge].
func (c *Codec) Unmarshal(data []byte, v any) error {
	if len(data) > c.limits.MaxBytes {
		return fmt.Errorf("codec: %d bytes, limit %d: %w", len(data), c.limits.MaxBytes, ErrTooLarge)
	}
	if rv := reflect.ValueOf(v); c.isCompact && rv.Kind() == reflect.Pointer && !rv.IsNil() {
		return newWalker(c).decode(data, rv.Elem())
	}
	return c.unmarshal(data, v)
}

// unmarshal decodes exactly one value from data into v, in plain CBOR.
func (c *Codec) unmarshal(data []byte, v any) error {
	rest, err := c.dec.UnmarshalFirst(data, v)
	if err != nil {
		return classify(err, v)
	}
	if len(rest) != 0 {
		return fmt.Errorf("codec: decode %T: %d trailing bytes: %w", v, len(rest), ErrMalformed)
	}
	return nil
}

// classify maps a CBOR library error onto the package's sentinels.
func classify(err error, v any) error {
	var (
		maxArr  *cbor.MaxArrayElementsError
		maxMap  *cbor.MaxMapPairsError
		maxNest *cbor.MaxNestedLevelError
	)
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return fmt.Errorf("codec: decode %T: %w", v, ErrTruncated)
	case errors.As(err, &maxArr), errors.As(err, &maxMap), errors.As(err, &maxNest):
		return fmt.Errorf("codec: decode %T: %v: %w", v, err, ErrTooLarge)
	default:
		return fmt.Errorf("codec: decode %T: %v: %w", v, err, ErrMalformed)
	}
}
