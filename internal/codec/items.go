package codec

import (
	"fmt"
	"reflect"

	"github.com/fxamacker/cbor/v2"
)

// MarshalItems encodes a value as a CBOR array of its fields, given as
// pointers in order: the first required ones, then the optional ones up to
// the last that is not empty (a nil or zero value, an empty collection, a
// struct of empty fields). A value that leaves its optional fields empty
// thus keeps the bytes of the release before them. It is how a message
// type with optional trailing fields writes itself with one struct.
func (c *Codec) MarshalItems(required int, fields ...any) ([]byte, error) {
	n := len(fields)
	for n > required && empty(reflect.ValueOf(fields[n-1]).Elem()) {
		n--
	}
	return c.Marshal(fields[:n])
}

// UnmarshalItems decodes data, a CBOR array of required to len(fields)
// items, into fields (pointers, in order), setting the optional fields it
// does not hold to zero. An array whose last optional item is empty is
// malformed: every value has exactly one encoding, [Codec.MarshalItems]'s.
func (c *Codec) UnmarshalItems(data []byte, required int, fields ...any) error {
	var items []cbor.RawMessage
	if err := c.Unmarshal(data, &items); err != nil {
		return err
	}
	n := len(items)
	if n < required || n > len(fields) {
		return fmt.Errorf("codec: an array of %d items, want %d to %d: %w", n, required, len(fields), ErrMalformed)
	}
	for i, f := range fields {
		if i >= n {
			setZero(f)
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

// Group is a run of fields, given as pointers in order, that a message
// writes as one item: an array of all of them, empty when all of them are.
// Pass a *Group among [Codec.MarshalItems]'s and [Codec.UnmarshalItems]'
// fields.
type Group []any

// MarshalCBOR encodes the group as an array of its fields.
func (g *Group) MarshalCBOR() ([]byte, error) {
	return Default.Marshal([]any(*g))
}

// UnmarshalCBOR decodes an array of exactly as many items as the group
// has fields into them.
func (g *Group) UnmarshalCBOR(data []byte) error {
	var items []cbor.RawMessage
	if err := Default.Unmarshal(data, &items); err != nil {
		return err
	}
	if len(items) != len(*g) {
		return fmt.Errorf("codec: a group of %d items, want %d: %w", len(items), len(*g), ErrMalformed)
	}
	for i, f := range *g {
		if err := Default.Unmarshal(items[i], f); err != nil {
			return err
		}
	}
	return nil
}

var groupType = reflect.TypeFor[Group]()

// setZero sets the field f points to, or every field of a group, to zero.
func setZero(f any) {
	if g, ok := f.(*Group); ok {
		for _, f := range *g {
			setZero(f)
		}
		return
	}
	reflect.ValueOf(f).Elem().SetZero()
}

// empty reports whether v encodes as its type's zero value: nil and empty
// collections encode alike (see [New]).
func empty(v reflect.Value) bool {
	if v.Type() == groupType {
		for i := range v.Len() {
			if !empty(v.Index(i).Elem().Elem()) {
				return false
			}
		}
		return true
	}
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
