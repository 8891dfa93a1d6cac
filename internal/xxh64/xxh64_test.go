package xxh64

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestXXH64Vectors checks the hash against the reference implementation
// (vectors computed with github.com/cespare/xxhash/v2).
func TestXXH64Vectors(t *testing.T) {
	words := []struct {
		n    int
		want uint64
	}{
		{0, 0xef46db3751d8e999}, {1, 0x9f29cb17a2a49995}, {3, 0x8673d04bb0d2db8e}, {4, 0x35ce7be052f13b11},
		{7, 0x5e3fe983b86d53f7}, {8, 0x9cdf798a2d61f881}, {9, 0x527945ff63777dfe}, {31, 0x97c14b1b07297bb},
		{32, 0xf5433ae6215a2174}, {33, 0x767054e5456f323a}, {63, 0xc4151865f0825a32}, {64, 0xdc845123163da6ec},
		{100, 0x1ce0330be70d7575},
	}
	for _, c := range words {
		var ws []uint64
		for i := range c.n {
			ws = append(ws, uint64(i)*0x9E3779B97F4A7C15+1)
		}
		require.Equal(t, c.want, Sum(ws), "%d words", c.n)
	}
	strs := []struct {
		s    string
		want uint64
	}{
		{"", 0x34c96acdcadb1bbb}, {"abc", 0x7010338a72c31c22}, {"01J00000000000000000000064", 0xf0ce65fe38a4dd88},
		{"tenant/segments/7/01J00000000000000000000007", 0xda3d8ba4d1f8aec},
	}
	for _, c := range strs {
		require.Equal(t, c.want, Sum(AppendString(nil, c.s)), "%q", c.s)
	}
}
