package codec_test

import (
	"encoding/hex"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/compactkit/compactkit/internal/codec"
)

// inner has one required field and one optional one.
type inner struct {
	_    struct{} `cbor:",toarray"`
	Name string
	Note string `codec:"optional"`
}

// outer holds inner values through a pointer and a slice, and ends in a
// group.
type outer struct {
	_     struct{} `cbor:",toarray"`
	A     uint32
	In    *inner
	Ins   []inner
	B     string   `codec:"optional"`
	C     []string `codec:"optional,group"`
	D     uint32
	Sizes [2]int64
}

func TestForms(t *testing.T) {
	for _, c := range []struct {
		name          string
		v             outer
		compact, full string
	}{
		{"empty", outer{}, "8300f680", "870 0f680 60 80 00 820000"},
		{"inner note", outer{A: 1, In: &inner{Name: "a", Note: "n"}, Ins: []inner{{Name: "b"}}},
			"8301826161616e818161 62", "8701826161616e81826162 60 60 80 00 820000"},
		{"optional", outer{B: "b"}, "8400f6806162", "8700f680616280 00 820000"},
		{"group", outer{D: 2}, "8500f68060 83800282 0000", "8700f680608002820000"},
		{"group sizes", outer{Sizes: [2]int64{0, 3}}, "8500f680608380008200 03", "8700f6806080008200 03"},
	} {
		compact, err := codec.Default.Compact().Marshal(&c.v)
		require.NoError(t, err)
		require.Equal(t, hexBytes(t, c.compact), compact, "%s: compact", c.name)
		full, err := codec.Default.Marshal(&c.v)
		require.NoError(t, err)
		require.Equal(t, hexBytes(t, c.full), full, "%s: full", c.name)
		for form, data := range map[*codec.Codec][]byte{codec.Default.Compact(): compact, codec.Default: full} {
			back := outer{B: "stale", D: 9, Ins: []inner{{Note: "stale"}}}
			require.NoError(t, form.Unmarshal(data, &back), c.name)
			again, err := form.Marshal(&back)
			require.NoError(t, err)
			require.Equal(t, data, again, c.name)
		}
	}
}

func TestFormsMalformed(t *testing.T) {
	for name, data := range map[string]string{
		"too few":            "8200f6",
		"too many":           "8600f680608000",
		"optional empty":     "8400f68060",
		"group empty":        "8500f680608380 00820000",
		"short group":        "8500f68060828002",
		"inner note empty":   "8301826161 60 80",
		"inner too many":     "830183616161616161 80",
		"not an array":       "01",
		"inner not an array": "830161 61 80",
		"trailing bytes":     "8300f68000",
	} {
		var v outer
		require.ErrorIs(t, codec.Default.Compact().Unmarshal(hexBytes(t, data), &v), codec.ErrMalformed, name)
	}
	// The full form takes every field, and no other count.
	for name, data := range map[string]string{
		"compact":      "8300f680",
		"inner short":  "87 01 816161 80 60 80 00 820000",
		"outer longer": "88 00 f6 80 60 80 00 820000 00",
	} {
		var v outer
		require.ErrorIs(t, codec.Default.Unmarshal(hexBytes(t, data), &v), codec.ErrMalformed, name)
	}
}

// A compact codec met for the first time by several goroutines at once
// writes the same bytes in each.
func TestFormsConcurrent(t *testing.T) {
	c, err := codec.New(codec.Limits{})
	require.NoError(t, err)
	v := outer{A: 1, In: &inner{Name: "a", Note: "n"}, Ins: []inner{{Name: "b"}}, D: 2}
	want, err := codec.Default.Compact().Marshal(&v)
	require.NoError(t, err)
	got := make([][]byte, 8)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() {
			b, err := c.Compact().Marshal(&v)
			if err == nil {
				got[i] = b
			}
		})
	}
	wg.Wait()
	for _, b := range got {
		require.Equal(t, want, b)
	}
}

// FuzzForms: arbitrary bytes never panic, and whatever decodes in either
// form re-encodes to a value that decodes alike in both.
func FuzzForms(f *testing.F) {
	for _, v := range []outer{{}, {A: 1, In: &inner{Name: "a", Note: "n"}}, {B: "b", D: 2}} {
		for _, c := range []*codec.Codec{codec.Default, codec.Default.Compact()} {
			data, err := c.Marshal(&v)
			require.NoError(f, err)
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, c := range []*codec.Codec{codec.Default, codec.Default.Compact()} {
			var v outer
			if c.Unmarshal(data, &v) != nil {
				continue
			}
			for _, c2 := range []*codec.Codec{codec.Default, codec.Default.Compact()} {
				again, err := c2.Marshal(&v)
				require.NoError(t, err)
				var back outer
				require.NoError(t, c2.Unmarshal(again, &back))
				re, err := c2.Marshal(&back)
				require.NoError(t, err)
				require.Equal(t, again, re)
			}
		}
	})
}

// hexBytes decodes hex digits, spaces left out.
func hexBytes(t *testing.T, s string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	require.NoError(t, err)
	return b
}
