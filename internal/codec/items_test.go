package codec_test

import (
	"errors"
	"testing"

	"github.com/fxamacker/cbor/v2"

	"github.com/stretchr/testify/require"

	"github.com/compactkit/compactkit/internal/codec"
)

var compact = codec.Default.Compact()

// msg has two required fields and two optional ones.
type msg struct {
	A uint32
	B string
	C []string
	D *uint32
}

func (m *msg) items() []any { return []any{&m.A, &m.B, &m.C, &m.D} }

func TestItems(t *testing.T) {
	one := uint32(1)
	for _, c := range []struct {
		m     msg
		items byte
	}{
		{msg{}, 2},
		{msg{A: 7, B: "b"}, 2},
		{msg{C: []string{}}, 2}, // an empty collection is empty
		{msg{C: []string{"c"}}, 3},
		{msg{D: &one}, 4}, // an empty C before a set D is written
		{msg{C: []string{"c"}, D: &one}, 4},
	} {
		data, err := compact.MarshalItems(2, c.m.items()...)
		require.NoError(t, err)
		require.Equal(t, 0x80+c.items, data[0], "%+v", c.m)
		var back msg
		back.B = "stale" // overwritten
		back.D = &one    // reset when absent
		require.NoError(t, compact.UnmarshalItems(data, 2, back.items()...))
		want := c.m
		if len(want.C) == 0 {
			want.C = nil
		}
		if len(back.C) == 0 {
			back.C = nil
		}
		require.Equal(t, want, back)
	}
}

// AppendItems writes what MarshalItems returns after dst's bytes, in
// both forms, and into dst's array when it has room.
func TestAppendItems(t *testing.T) {
	one := uint32(1)
	for _, m := range []msg{{}, {A: 7, B: "b"}, {C: []string{"c"}}, {D: &one}, {A: 1 << 20, B: "bb", C: []string{"c", "d"}, D: &one}} {
		for _, c := range []*codec.Codec{codec.Default, compact} {
			want, err := c.MarshalItems(2, m.items()...)
			require.NoError(t, err)
			got, err := c.AppendItems([]byte("head"), 2, m.items()...)
			require.NoError(t, err)
			require.Equal(t, append([]byte("head"), want...), got, "%+v", m)
			buf := make([]byte, 1, 256)
			got, err = c.AppendItems(buf, 2, m.items()...)
			require.NoError(t, err)
			require.Equal(t, append([]byte{0}, want...), got)
			require.Same(t, &buf[0], &got[0], "encoded in dst's array")
		}
	}
	_, err := codec.Default.AppendItems(nil, 1, &struct{ F func() }{})
	require.Error(t, err, "a value the codec cannot encode")
}

func TestItemsMalformed(t *testing.T) {
	for name, v := range map[string]any{
		"too few":        []any{uint32(1)},
		"too many":       []any{uint32(1), "b", []string{"c"}, uint32(2), 5},
		"last empty":     []any{uint32(1), "b", []string{}},
		"last nil":       []any{uint32(1), "b", []string{"c"}, nil},
		"not an array":   "x",
		"wrong type":     []any{"a", "b"},
		"empty optional": []any{uint32(1), "b", nil},
	} {
		data, err := codec.Default.Marshal(v)
		require.NoError(t, err)
		var m msg
		require.ErrorIs(t, compact.UnmarshalItems(data, 2, m.items()...), codec.ErrMalformed, name)
	}
	var m msg
	require.ErrorIs(t, compact.UnmarshalItems([]byte{0x84, 0x01}, 2, m.items()...), codec.ErrTruncated)
}

// The full form writes and reads every field, whatever their values.
func TestItemsFull(t *testing.T) {
	one := uint32(1)
	for _, m := range []msg{{}, {A: 7, B: "b"}, {D: &one}} {
		data, err := codec.Default.MarshalItems(2, m.items()...)
		require.NoError(t, err)
		require.Equal(t, byte(0x84), data[0], "%+v", m)
		var back msg
		back.D = &one
		require.NoError(t, codec.Default.UnmarshalItems(data, 2, back.items()...))
		require.Equal(t, m.D, back.D)
	}
	for _, v := range [][]any{{uint32(1), "b"}, {uint32(1), "b", []string{"c"}}, {uint32(1), "b", nil, nil, nil}} {
		data, err := codec.Default.Marshal(v)
		require.NoError(t, err)
		var m msg
		require.ErrorIs(t, codec.Default.UnmarshalItems(data, 2, m.items()...), codec.ErrMalformed, "%v", v)
	}
}

// twoPass is a reference for UnmarshalItems in the full form, as the
// compact form still decodes: the array as a whole first, then each item.
func twoPass(data []byte, fields ...any) error {
	var items []cbor.RawMessage
	if err := codec.Default.Unmarshal(data, &items); err != nil {
		return err
	}
	if len(items) != len(fields) {
		return errors.New("item count")
	}
	for i, it := range items {
		if err := codec.Default.Unmarshal(it, fields[i]); err != nil {
			return err
		}
	}
	return nil
}

// FuzzItems: arbitrary bytes never panic; the full form decodes them as a
// reference that decodes the array as a whole first would; and whatever
// the compact form decodes re-encodes in as many items and decodes to the
// same value. (The bytes may differ: the CBOR decoder takes some values in
// more than one form.)
func FuzzItems(f *testing.F) {
	one := uint32(1)
	for _, m := range []msg{{}, {A: 7, B: "b", C: []string{"c"}}, {D: &one}} {
		data, err := compact.MarshalItems(2, m.items()...)
		require.NoError(f, err)
		f.Add(data)
	}
	full, err := codec.Default.MarshalItems(2, (&msg{A: 7, B: "b", C: []string{"c"}, D: &one}).items()...)
	require.NoError(f, err)
	f.Add(full)
	f.Add([]byte{0x98, 0x02, 0x01, 0x61, 0x62}) // a head longer than it needs
	f.Add([]byte{0x9f, 0x01, 0x61, 0x62, 0xff}) // indefinite length
	f.Fuzz(func(t *testing.T, data []byte) {
		// The full form decodes in one pass what decoding the array first
		// would.
		var full, ref msg
		err := codec.Default.UnmarshalItems(data, 2, full.items()...)
		refErr := twoPass(data, ref.items()...)
		require.Equal(t, refErr == nil, err == nil, "UnmarshalItems: %v; decoding the array first: %v", err, refErr)
		if err == nil {
			require.Equal(t, ref, full, "as decoding the array first")
		}
		var m msg
		if compact.UnmarshalItems(data, 2, m.items()...) != nil {
			return
		}
		again, err := compact.MarshalItems(2, m.items()...)
		require.NoError(t, err)
		var before, after []cbor.RawMessage
		require.NoError(t, compact.Unmarshal(data, &before))
		require.NoError(t, compact.Unmarshal(again, &after))
		require.Len(t, after, len(before), "the array's length")
		var back msg
		require.NoError(t, compact.UnmarshalItems(again, 2, back.items()...))
		if len(m.C) == 0 && len(back.C) == 0 { // nil and empty are one value (codec.New)
			m.C, back.C = nil, nil
		}
		require.Equal(t, m, back)
	})
}
