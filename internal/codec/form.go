package codec

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/fxamacker/cbor/v2"
)

// A message that gained fields after the first release has two forms.
//
// The full form is the plain encoding of its struct: an array of all its
// fields, whatever their values, so that the number of fields written
// depends only on the version written. A codec from [New] writes and reads
// it; decoding an array of any other length is an error.
//
// The compact form is the one the first release writes: the field tagged
// `codec:"optional"` and those after it are optional, written up to the
// last that is not empty (a nil or zero value, an empty collection, a
// struct of empty fields), so that a value that leaves them empty keeps
// the bytes of the release before them; the field tagged
// `codec:"optional,group"` and those after it are one optional item, an
// array of all of them, written when one of them is not empty. Decoding
// accepts exactly the arrays it writes: an optional item written empty is
// malformed, so that every value has one encoding. [Codec.Compact] returns
// the codec of this form; it applies to every struct in array form the
// value holds, through pointers, slices, arrays and interfaces (not maps
// nor structs in map form).
const (
	tagOptional = "optional"
	tagGroup    = "optional,group"
)

// Compact returns the codec that writes and reads the compact form of
// messages, with c's limits.
func (c *Codec) Compact() *Codec { return c.compact }

// layout is how a struct's fields are written.
type layout struct {
	fields   []int // the indexes of the encoded fields, in order
	required int   // how many of them come before the first optional one
	group    int   // the position of the group's first field, or len(fields)
}

// items is the number of items of the compact form with every field set.
func (l *layout) items() int {
	if l.group < len(l.fields) {
		return l.group + 1
	}
	return l.group
}

// empty reports whether the item at position i of v's compact form is
// empty.
func (l *layout) empty(v reflect.Value, i int) bool {
	if i < l.group {
		return empty(v.Field(l.fields[i]))
	}
	for _, f := range l.fields[l.group:] {
		if !empty(v.Field(f)) {
			return false
		}
	}
	return true
}

// types is what a compact codec learnt of the types it met: their
// layouts and whether they hold optional fields. It only grows, with
// values computed from the types alone.
type types struct {
	layouts sync.Map // reflect.Type → *layout
	holds   sync.Map // reflect.Type → bool
}

// walker writes and reads the compact form.
type walker struct {
	c *Codec
}

func newWalker(c *Codec) walker { return walker{c: c} }

// layout returns the layout of struct type t.
func (w walker) layout(t reflect.Type) *layout {
	if l, ok := w.c.types.layouts.Load(t); ok {
		return l.(*layout)
	}
	l := &layout{}
	l.required, l.group = -1, -1
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || f.Tag.Get("cbor") == "-" {
			continue
		}
		switch f.Tag.Get("codec") {
		case tagGroup:
			l.group = len(l.fields)
			fallthrough
		case tagOptional:
			if l.required < 0 {
				l.required = len(l.fields)
			}
		}
		l.fields = append(l.fields, i)
	}
	if l.required < 0 {
		l.required = len(l.fields)
	}
	if l.group < 0 {
		l.group = len(l.fields)
	}
	w.c.types.layouts.Store(t, l)
	return l
}

// optional reports whether values of type t can hold a struct in array
// form with optional fields (always, for an interface).
func (w walker) optional(t reflect.Type) bool {
	if h, ok := w.c.types.holds.Load(t); ok {
		return h.(bool)
	}
	h := w.holds(t, map[reflect.Type]bool{})
	w.c.types.holds.Store(t, h)
	return h
}

// holds computes optional(t), visiting being the types whose computation
// is under way (it does not store its results: a type met again through
// itself is taken not to hold optional fields there).
func (w walker) holds(t reflect.Type, visiting map[reflect.Type]bool) bool {
	if h, ok := w.c.types.holds.Load(t); ok {
		return h.(bool)
	}
	if visiting[t] {
		return false // a type that holds itself holds them through its other fields
	}
	visiting[t] = true
	defer delete(visiting, t)
	switch t.Kind() {
	case reflect.Interface:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return w.holds(t.Elem(), visiting)
	case reflect.Struct:
		if f, ok := t.FieldByName("_"); !ok || !strings.Contains(f.Tag.Get("cbor"), "toarray") {
			return false // a struct in map form is written plainly
		}
		l := w.layout(t)
		h := l.required < len(l.fields)
		for _, i := range l.fields {
			h = w.holds(t.Field(i).Type, visiting) || h
		}
		return h
	default:
		return false
	}
}

// compact returns a value whose plain encoding is v's compact form.
func (w walker) compact(v reflect.Value) any {
	if !v.IsValid() {
		return nil
	}
	if !w.optional(v.Type()) {
		return v.Interface()
	}
	switch v.Kind() {
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return w.compact(v.Elem())
	case reflect.Slice, reflect.Array:
		out := make([]any, v.Len())
		for i := range out {
			out[i] = w.compact(v.Index(i))
		}
		return out
	default: // a struct
		l := w.layout(v.Type())
		items := make([]any, 0, l.items())
		for _, f := range l.fields[:l.group] {
			items = append(items, w.compact(v.Field(f)))
		}
		if l.group < len(l.fields) {
			group := make([]any, 0, len(l.fields)-l.group)
			for _, f := range l.fields[l.group:] {
				group = append(group, w.compact(v.Field(f)))
			}
			items = append(items, group)
		}
		n := len(items)
		for n > l.required && l.empty(v, n-1) {
			n--
		}
		return items[:n]
	}
}

// decode decodes data, v's compact form, into v (settable).
func (w walker) decode(data []byte, v reflect.Value) error {
	t := v.Type()
	if !w.optional(t) || t.Kind() == reflect.Interface {
		return w.c.unmarshal(data, v.Addr().Interface())
	}
	null := len(data) == 1 && (data[0] == 0xf6 || data[0] == 0xf7)
	switch t.Kind() {
	case reflect.Pointer:
		if null {
			v.SetZero()
			return nil
		}
		e := reflect.New(t.Elem())
		if err := w.decode(data, e.Elem()); err != nil {
			return err
		}
		v.Set(e)
		return nil
	case reflect.Slice, reflect.Array:
		items, err := w.items(data)
		if err != nil {
			return err
		}
		if t.Kind() == reflect.Slice {
			if items == nil {
				v.SetZero()
				return nil
			}
			v.Set(reflect.MakeSlice(t, len(items), len(items)))
		} else if len(items) != t.Len() {
			return fmt.Errorf("codec: decode %s: an array of %d items, want %d: %w", t, len(items), t.Len(), ErrMalformed)
		}
		for i, item := range items {
			if err := w.decode(item, v.Index(i)); err != nil {
				return err
			}
		}
		return nil
	default: // a struct
		if null {
			return nil // as the plain encoding reads it
		}
		return w.decodeStruct(data, v)
	}
}

func (w walker) decodeStruct(data []byte, v reflect.Value) error {
	t := v.Type()
	l := w.layout(t)
	items, err := w.items(data)
	if err != nil {
		return err
	}
	n := len(items)
	if n < l.required || n > l.items() {
		return fmt.Errorf("codec: decode %s: an array of %d items, want %d to %d: %w", t, n, l.required, l.items(), ErrMalformed)
	}
	for i, f := range l.fields[:l.group] {
		if i >= n {
			v.Field(f).SetZero()
		} else if err := w.decode(items[i], v.Field(f)); err != nil {
			return err
		}
	}
	if l.group < len(l.fields) {
		if n <= l.group {
			for _, f := range l.fields[l.group:] {
				v.Field(f).SetZero()
			}
		} else if err := w.decodeGroup(items[l.group], v); err != nil {
			return err
		}
	}
	if n > l.required && l.empty(v, n-1) {
		return fmt.Errorf("codec: decode %s: an array of %d items whose last is empty: %w", t, n, ErrMalformed)
	}
	return nil
}

// decodeGroup decodes the group of struct v from data.
func (w walker) decodeGroup(data []byte, v reflect.Value) error {
	l := w.layout(v.Type())
	items, err := w.items(data)
	if err != nil {
		return err
	}
	if len(items) != len(l.fields)-l.group {
		return fmt.Errorf("codec: decode %s: a group of %d items, want %d: %w", v.Type(), len(items), len(l.fields)-l.group, ErrMalformed)
	}
	for i, f := range l.fields[l.group:] {
		if err := w.decode(items[i], v.Field(f)); err != nil {
			return err
		}
	}
	return nil
}

// items splits data, an array, into its items.
func (w walker) items(data []byte) ([]cbor.RawMessage, error) {
	var items []cbor.RawMessage
	if err := w.c.unmarshal(data, &items); err != nil {
		return nil, err
	}
	return items, nil
}
