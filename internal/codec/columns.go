package codec

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// Strings is a column of strings packed as one byte string of their
// concatenated bytes and one byte string of their lengths (uvarints). It
// encodes as a two-element CBOR array.
type Strings struct {
	_    struct{} `cbor:",toarray"`
	Data []byte
	Lens []byte
}

// PackStrings packs ss into a column.
func PackStrings(ss []string) Strings {
	total := 0
	for _, s := range ss {
		total += len(s)
	}
	c := Strings{Data: make([]byte, 0, total), Lens: make([]byte, 0, len(ss)*2)}
	for _, s := range ss {
		c.Data = append(c.Data, s...)
		c.Lens = binary.AppendUvarint(c.Lens, uint64(len(s)))
	}
	return c
}

// Unpack returns the n strings of the column. All strings share one
// backing allocation. A column that does not hold exactly n strings is an
// error wrapping [ErrMalformed].
func (c Strings) Unpack(n int) ([]string, error) {
	if n < 0 || n > len(c.Lens) {
		return nil, fmt.Errorf("codec: string column: %d lengths for %d strings: %w", len(c.Lens), n, ErrMalformed)
	}
	out := make([]string, n)
	if n == 0 {
		if len(c.Lens) != 0 || len(c.Data) != 0 {
			return nil, fmt.Errorf("codec: string column: trailing data: %w", ErrMalformed)
		}
		return out, nil
	}
	all := string(c.Data) // one allocation for every string
	p, off := 0, 0        // the next length's first byte, the next string's
	for i := range out {
		var l uint64
		if p < len(c.Lens) && c.Lens[p] < 0x80 { // uvarintAt's one-byte case, inline
			l = uint64(c.Lens[p])
			p++
		} else if l, p = uvarintAt(c.Lens, p); p < 0 {
			return nil, fmt.Errorf("codec: string column: bad length at %d: %w", i, ErrMalformed)
		}
		if l > uint64(len(all)-off) {
			return nil, fmt.Errorf("codec: string column: bad length at %d: %w", i, ErrMalformed)
		}
		out[i] = all[off : off+int(l)]
		off += int(l)
	}
	if p != len(c.Lens) || off != len(all) {
		return nil, fmt.Errorf("codec: string column: trailing data: %w", ErrMalformed)
	}
	return out, nil
}

// Integer is the set of integer types a column can hold.
type Integer interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~int | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uint
}

// PackInts packs v as zigzag-encoded deltas between consecutive values, as
// uvarints: sorted or clustered columns (times, indexes, levels) take one or
// two bytes per value. Arithmetic wraps, so any values round-trip.
func PackInts[T Integer](v []T) []byte {
	out := make([]byte, 0, len(v)*2)
	var prev uint64
	for _, x := range v {
		u := uint64(x)
		d := int64(u - prev)
		out = binary.AppendUvarint(out, uint64(d<<1)^uint64(d>>63))
		prev = u
	}
	return out
}

// UnpackInts decodes exactly n values packed by [PackInts]. A value that
// does not fit T, a short column and trailing bytes are errors wrapping
// [ErrMalformed].
func UnpackInts[T Integer](b []byte, n int) ([]T, error) {
	v, err := AppendInts[T](nil, b, n)
	switch {
	case err != nil:
		return nil, err
	case v == nil:
		return []T{}, nil
	}
	return v, nil
}

// AppendInts is [UnpackInts] appending the values to dst, in its array when
// it has room: a reader of many frames can decode a column of each into
// the same buffer. On error it returns dst as it was.
func AppendInts[T Integer](dst []T, b []byte, n int) ([]T, error) {
	if n < 0 || n > len(b) { // every value takes at least one byte
		return dst, fmt.Errorf("codec: integer column: %d bytes for %d values: %w", len(b), n, ErrMalformed)
	}
	grown := slices.Grow(dst, n)[:len(dst)+n]
	out := grown[len(dst):]
	var prev uint64
	p := 0 // the next value's first byte
	for i := range out {
		var z uint64
		if p < len(b) && b[p] < 0x80 { // uvarintAt's one-byte case, inline
			z = uint64(b[p])
			p++
		} else if z, p = uvarintAt(b, p); p < 0 {
			return dst, fmt.Errorf("codec: integer column: bad value at %d: %w", i, ErrMalformed)
		}
		prev += uint64(int64(z>>1) ^ -int64(z&1))
		t := T(prev)
		if uint64(t) != prev {
			return dst, fmt.Errorf("codec: integer column: value %d at %d out of range: %w", prev, i, ErrMalformed)
		}
		out[i] = t
	}
	if p != len(b) {
		return dst, fmt.Errorf("codec: integer column: %d trailing bytes: %w", len(b)-p, ErrMalformed)
	}
	return grown, nil
}

// uvarintAt decodes the uvarint that starts at b[p] (binary.Uvarint's
// loop on an offset) and returns it with the offset of the byte after it,
// or with -1 when the bytes from p do not start one: too short, too long,
// above 64 bits, or overlong (a multi-byte varint ending in a zero byte,
// refused so that every column has exactly one encoding and
// decode-then-encode is the identity). Its callers decode a one-byte
// value, most of a column's deltas and lengths, themselves: this function
// is too large to be inlined.
func uvarintAt(b []byte, p int) (uint64, int) {
	var v uint64
	for k := 0; k < binary.MaxVarintLen64 && p >= 0 && p < len(b); k++ {
		c := b[p]
		p++
		if c < 0x80 {
			if k > 0 && c == 0 || k == binary.MaxVarintLen64-1 && c > 1 {
				return 0, -1
			}
			return v | uint64(c)<<(7*k), p
		}
		v |= uint64(c&0x7f) << (7 * k)
	}
	return 0, -1
}
