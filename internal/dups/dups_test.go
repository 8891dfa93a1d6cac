package dups

import (
	"testing"

	"pgregory.net/rapid"
)

// Seen agrees with a pairwise comparison, on both sides of the threshold
// where the tracker switches to a set.
func TestTrackerMatchesPairwise(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		xs := rapid.SliceOfN(rapid.IntRange(0, 40), 0, 60).Draw(t, "xs")
		var tr Tracker[int]
		for i, x := range xs {
			want := false
			for j := range i {
				want = want || xs[j] == x
			}
			if got := tr.Seen(x); got != want {
				t.Fatalf("Seen(%d) at %d of %v = %t, want %t", x, i, xs, got, want)
			}
		}
	})
}

// TestTrackerStringsMatchPairwise: strings that share their last bytes
// or their length, so that fingerprints tie between different strings.
func TestTrackerStringsMatchPairwise(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		gen := rapid.StringOfN(rapid.SampledFrom([]rune{'a', 'b', 0}), 0, 12, -1)
		xs := rapid.SliceOfN(gen, 0, 60).Draw(t, "xs")
		var tr Tracker[string]
		for i, x := range xs {
			want := false
			for j := range i {
				want = want || xs[j] == x
			}
			if got := tr.Seen(x); got != want {
				t.Fatalf("Seen(%q) at %d of %q = %t, want %t", x, i, xs, got, want)
			}
		}
	})
}
