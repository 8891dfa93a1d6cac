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
	n := len(fields)
	for c.isCompact && n > required && empty(reflect.ValueOf(fields[n-1]).Elem()) {
		n--
	}
	return c.Marshal(fields[:n])
}

// UnmarshalItems decodes data, [Codec.MarshalItems]'s encoding, into
// fields (pointers, in order): an array of all of them in the full form;
// in the compact form, an array of required to len(fields) items, setting
// the optional fields it does not hold to zero. A compact array whose last
// optional item is empty is malformed: every value has exactly one
// encoding.
func (c *Codec) UnmarshalItems(data []byte, required int, fields ...any) error {
	if !c.isCompact {
		required = len(fields)
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
