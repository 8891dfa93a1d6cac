package ident

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// TestPlainIDMatchesFullRules checks that the fast path of ValidateID
// accepts only IDs the full rules accept, and takes the common ones.
func TestPlainIDMatchesFullRules(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		id := rapid.OneOf(
			rapid.StringMatching(`[a-z./\\\x00\x7f]{0,8}`),
			rapid.StringMatching(`[\x00-\x7f]{0,12}`),
			rapid.String(),
			rapid.SampledFrom([]string{".", "..", "a/.", "./a", "a/../b", "a//b", "/a", "a/", "...", "a/.../b", ".a/b.", "é/x"}),
		).Draw(t, "id")
		full := validateID(id) == nil
		if plainID(id) {
			require.True(t, full, "%q: fast path accepts what the full rules refuse", id)
		}
		require.Equal(t, full, ValidateID(id) == nil, "%q", id)
	})
	for _, id := range []string{"01JD8ZQ8Y0S1G6N9V3C2X7K4PB", "a/b/c", "...", "a/.../b", ".a/b."} {
		require.True(t, plainID(id), id)
	}
	long := make([]byte, MaxIDLen+1)
	for i := range long {
		long[i] = 'a'
	}
	require.Error(t, ValidateID(string(long)))
	require.NoError(t, ValidateID(string(long[1:])))
}

// TestNameFastPath checks that ValidateName's ASCII fast path accepts only
// names its full character rules accept.
func TestNameFastPath(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.OneOf(
			rapid.StringMatching(`[\x00-\x7f]{0,12}`),
			rapid.StringMatching(`[a-z]{0,20}[\x00-\x1f\x7f-\xff]?[a-z]{0,20}`),
			rapid.String(),
		).Draw(t, "s")
		printable := !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r >= 0x7f })
		require.Equal(t, printable, printableASCII(s), "%q", s)
		if printableASCII(s) {
			full := utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
			require.True(t, full, "%q: fast path accepts what the full rules refuse", s)
		}
	})
}

// plainIDBytes is plainID without the eight-byte steps: the reference the
// fast path must agree with.
func plainIDBytes(id string) bool {
	return len(id) > 0 && len(id) <= MaxIDLen && plainFrom(id, 0, 0)
}

// TestPlainIDEightBytes checks plainID's eight-byte steps against the
// byte-by-byte rules: every byte value at every position of a word, and
// long IDs with special bytes anywhere.
func TestPlainIDEightBytes(t *testing.T) {
	for b := range 256 {
		for p := range 8 {
			w := []byte("aaaaaaaa")
			w[p] = byte(b)
			want := b >= 0x20 && b < 0x7f && b != '\\' && b != '/' && b != '.'
			require.Equal(t, want, ordinary8(load8(string(w), 0)), "byte %#x at %d", b, p)
			require.Equal(t, b >= 0x20 && b < 0x7f, nonPrintable8(load8(string(w), 0)) == 0, "byte %#x at %d", b, p)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		id := rapid.OneOf(
			rapid.StringMatching(`[a-z0-9./\\\x00\x1f\x20\x7e\x7f]{0,40}`),
			rapid.StringMatching(`[a-zA-Z0-9]{0,30}[./\x80-\xff]?[a-z]{0,20}`),
			rapid.String(),
		).Draw(t, "id")
		require.Equal(t, plainIDBytes(id), plainID(id), "%q", id)
	})
}

// BenchmarkValidateID: a ULID-like 26-byte ID, the common case of block
// IDs written by ingest, which enqueue and restore check for every block.
func BenchmarkValidateID(b *testing.B) {
	const id = "01JD8ZQ8Y0S1G6N9V3C2X7K4PB"
	for b.Loop() {
		if err := ValidateID(id); err != nil {
			b.Fatal(err)
		}
	}
}

// TestNameBytesEight checks ValidateJobName's eight-byte steps against the
// byte-by-byte rule: every byte value at every position of a word, and
// names with bytes from around the alphabet's ranges anywhere.
func TestNameBytesEight(t *testing.T) {
	for b := range 256 {
		for p := range 8 {
			w := []byte("aZ09._-z")
			w[p] = byte(b)
			require.Equal(t, isNameByte(byte(b)), nameBytes8(load8(string(w), 0)), "byte %#x at %d", b, p)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		name := rapid.OneOf(
			rapid.StringMatching(`[a-zA-Z0-9._-]{1,40}`),
			rapid.StringMatching(`[a-zA-Z0-9._-]{0,20}[\x00-\x2f\x3a-\x40\x5b-\x60\x7b-\xff][a-z]{0,20}`),
			rapid.String(),
		).Draw(t, "name")
		want := name != "" && len(name) <= MaxNameLen && name != "." && name != ".." && !strings.ContainsFunc(name, func(r rune) bool {
			return r >= utf8.RuneSelf || !isNameByte(byte(r))
		})
		require.Equal(t, want, ValidateJobName(name) == nil, "%q", name)
	})
}

// BenchmarkValidateJobName: names the planner gives jobs, which end in a
// hash's hex digits.
func BenchmarkValidateJobName(b *testing.B) {
	names := make([]string, 1024)
	h := uint64(0x9e3779b97f4a7c15)
	for i := range names {
		h ^= h << 13
		h ^= h >> 7
		h ^= h << 17
		names[i] = fmt.Sprintf("tenant-%d.s%d.l0.%d.%016x", i%10, i%64, 1_000_000+i, h)
	}
	i := 0
	for b.Loop() {
		if err := ValidateJobName(names[i%len(names)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
