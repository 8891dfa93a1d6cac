package codec_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/compactkit/compactkit/internal/codec"
)

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
		data, err := codec.Default.MarshalItems(2, c.m.items()...)
		require.NoError(t, err)
		require.Equal(t, 0x80+c.items, data[0], "%+v", c.m)
		var back msg
		back.B = "stale" // overwritten
		back.D = &one    // reset when absent
		require.NoError(t, codec.Default.UnmarshalItems(data, 2, back.items()...))
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
		require.ErrorIs(t, codec.Default.UnmarshalItems(data, 2, m.items()...), codec.ErrMalformed, name)
	}
	var m msg
	require.ErrorIs(t, codec.Default.UnmarshalItems([]byte{0x84, 0x01}, 2, m.items()...), codec.ErrTruncated)
}

// A group is one item, written when one of its fields is set, and then
// with all of them.
func TestItemsGroup(t *testing.T) {
	type grouped struct {
		A uint32
		C []string
		D uint32
	}
	items := func(g *grouped) []any { return []any{&g.A, &codec.Group{&g.C, &g.D}} }
	for _, c := range []struct {
		g    grouped
		want []byte
	}{
		{grouped{A: 1}, []byte{0x81, 0x01}},
		{grouped{A: 1, D: 2}, []byte{0x82, 0x01, 0x82, 0x80, 0x02}},
		{grouped{C: []string{"c"}}, []byte{0x82, 0x00, 0x82, 0x81, 0x61, 'c', 0x00}},
	} {
		data, err := codec.Default.MarshalItems(1, items(&c.g)...)
		require.NoError(t, err)
		require.Equal(t, c.want, data)
		back := grouped{C: []string{"stale"}, D: 9} // reset when absent
		require.NoError(t, codec.Default.UnmarshalItems(data, 1, items(&back)...))
		if len(back.C) == 0 {
			back.C = nil // nil and empty are one value
		}
		require.Equal(t, c.g, back)
	}
	for name, data := range map[string][]byte{
		"empty group":  {0x82, 0x01, 0x82, 0x80, 0x00},
		"short group":  {0x82, 0x01, 0x81, 0x80},
		"long group":   {0x82, 0x01, 0x83, 0x80, 0x02, 0x03},
		"not an array": {0x82, 0x01, 0x02},
	} {
		var g grouped
		require.ErrorIs(t, codec.Default.UnmarshalItems(data, 1, items(&g)...), codec.ErrMalformed, name)
	}
}

// FuzzItems: arbitrary bytes never panic, and whatever decodes re-encodes
// in as many items and decodes to the same value. (The bytes may differ:
// the CBOR decoder takes some values in more than one form.)
func FuzzItems(f *testing.F) {
	one := uint32(1)
	for _, m := range []msg{{}, {A: 7, B: "b", C: []string{"c"}}, {D: &one}} {
		data, err := codec.Default.MarshalItems(2, m.items()...)
		require.NoError(f, err)
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m msg
		if codec.Default.UnmarshalItems(data, 2, m.items()...) != nil {
			return
		}
		again, err := codec.Default.MarshalItems(2, m.items()...)
		require.NoError(t, err)
		require.Equal(t, data[0], again[0], "the array's length")
		var back msg
		require.NoError(t, codec.Default.UnmarshalItems(again, 2, back.items()...))
		require.Equal(t, m, back)
	})
}
