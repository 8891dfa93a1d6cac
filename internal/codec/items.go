package codec

import (
	"fmt"
	"reflect"

	"github.com/fxamacker/cbor/v2"
)

// MarshalItems encodes a value as a CBOR array of its fields, given as
// pointers in order, in the codec's form: all of them in the full form;
// in the compact form (see [Codec.Compact]), the first required ones, then
// the optional ones up to the last that is not empty. It is how a message
// whose fields are not one struct (a record built around another type)
// writes itself.
func (c *Codec) MarshalItems(required int, fields ...any) ([]byte, error) {
	return c.Marshal(c.itemsOf(required, fields))
}

// AppendItems is [Codec.MarshalItems] appending the encoding to dst (see
// [Codec.Append]).
func (c *Codec) AppendItems(dst []byte, required int, fields ...any) ([]byte, error) {
	return c.Append(dst, c.itemsOf(required, fields))
}

// itemsOf returns the fields that encode in the codec's form: all of
// them in the full form, the compact form's leading ones otherwise.
func (c *Codec) itemsOf(required int, fields []any) []any {
	n := len(fields)
	for c.isCompact && n > required && empty(reflect.ValueOf(fields[n-1]).Elem()) {
		n--
	}
	return fields[:n]
}

// UnmarshalItems decodes data, [Codec.MarshalItems]'s encoding, into
// fields (pointers, in order): an array of all of them in the full form;
// in the compact form, an array of required to len(fields) items, setting
// the optional fields it does not hold to zero. A compact array whose last
// optional item is empty is malformed: every value has exactly one
// encoding.
func (c *Codec) UnmarshalItems(data []byte, required int, fields ...any) error {
	if !c.isCompact {
		return c.unmarshalFull(data, fields)
	}
	var items []cbor.RawMessage
	if err := c.unmarshal(data, &items); err != nil {
		return err
	}
	n := len(items)
	if n < required || n > len(fields) {
		return fmt.Errorf("codec: an array of %d items, want %d to %d: %w", n, required, len(fields), ErrMalformed)
	}
	for i, f := range fields {
		if i >= n {
			reflect.ValueOf(f).Elem().SetZero()
			continue
		}
		if err := c.Unmarshal(items[i], f); err != nil {
			return err
		}
	}
	if n > required && empty(reflect.ValueOf(fields[n-1]).Elem()) {
		return fmt.Errorf("codec: an array of %d items whose last is empty: %w", n, ErrMalformed)
	}
	return nil
}

// unmarshalFull is UnmarshalItems in the full form: an array of exactly
// len(fields) items, each decoded in place, in one pass over data (the
// compact form decodes the array first, then each item in that form).
func (c *Codec) unmarshalFull(data []byte, fields []any) error {
	n, rest, err := arrayHead(data)
	if err != nil {
		return err
	}
	if n != uint64(len(fields)) {
		return fmt.Errorf("codec: an array of %d items, want %d: %w", n, len(fields), ErrMalformed)
	}
	for _, f := range fields {
		item := rest
		if rest, err = c.dec.UnmarshalFirst(item, f); err != nil {
			return classify(err, f)
		}
		if size := len(item) - len(rest); size > c.limits.MaxBytes {
			return fmt.Errorf("codec: an item of %d bytes, limit %d: %w", size, c.limits.MaxBytes, ErrTooLarge)
		}
	}
	if len(rest) != 0 {
		return fmt.Errorf("codec: an array of %d items followed by %d bytes: %w", n, len(rest), ErrMalformed)
	}
	return nil
}

// arrayHead reads the head of the definite-length CBOR array that data
// starts with: its number of items, and the bytes after the head.
func arrayHead(data []byte) (uint64, []byte, error) {
	if len(data) == 0 {
		return 0, nil, fmt.Errorf("codec: no array: %w", ErrTruncated)
	}
	const majorArray = 4
	if data[0]>>5 != majorArray {
		return 0, nil, fmt.Errorf("codec: CBOR major type %d, want an array: %w", data[0]>>5, ErrMalformed)
	}
	switch ai := data[0] & 0x1f; {
	case ai < 24:
		return uint64(ai), data[1:], nil
	case ai <= 27: // the length follows in 1, 2, 4 or 8 bytes
		size := 1 << (ai - 24)
		if len(data) < 1+size {
			return 0, nil, fmt.Errorf("codec: array head of %d bytes: %w", len(data), ErrTruncated)
		}
		var n uint64
		for _, b := range data[1 : 1+size] {
			n = n<<8 | uint64(b)
		}
		return n, data[1+size:], nil
	default: // indefinite length (31), or reserved
		return 0, nil, fmt.Errorf("codec: array head 0x%02x: %w", data[0], ErrMalformed)
	}
}

// empty reports whether v encodes as its type's zero value: nil and empty
// collections encode alike (see [New]).
func empty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Slice, reflect.Map:
		return v.Len() == 0
	case reflect.Struct:
		for i := range v.NumField() {
			if !empty(v.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Array:
		for i := range v.Len() {
			if !empty(v.Index(i)) {
				return false
			}
		}
		return true
	default:
		return v.IsZero()
	}
}
