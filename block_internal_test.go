package compactkit

import (
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

// TestNameFastPath checks that validateName's ASCII fast path accepts only
// names its full character rules accept.
func TestNameFastPath(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.OneOf(rapid.StringMatching(`[\x00-\x7f]{0,12}`), rapid.String()).Draw(t, "s")
		if printableASCII(s) {
			full := utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
			require.True(t, full, "%q: fast path accepts what the full rules refuse", s)
		}
	})
}
