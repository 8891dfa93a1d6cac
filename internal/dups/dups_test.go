package dups

import (
	"testing"

	"pgregory.net/rapid"
)

// Seen agrees with a pairwise comparison, on both sides of the threshold
// where the tracker switches to a set.
func TestTrackerMatchesPairwise(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		checkPairwise(t, rapid.SliceOfN(rapid.IntRange(0, 40), 0, 60).Draw(t, "xs"))
	})
}

// TestTrackerStringsMatchPairwise: strings that share their last bytes
// or their length, so that fingerprints tie between different strings.
func TestTrackerStringsMatchPairwise(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		gen := rapid.StringOfN(rapid.SampledFrom([]rune{'a', 'b', 0}), 0, 12, -1)
		checkPairwise(t, rapid.SliceOfN(gen, 0, 60).Draw(t, "xs"))
	})
}

// checkPairwise feeds xs to a Tracker, checking each answer against the
// keys before it.
func checkPairwise[K comparable](t *rapid.T, xs []K) {
	var tr Tracker[K]
	for i, x := range xs {
		want := false
		for j := range i {
			want = want || xs[j] == x
		}
		if got := tr.Seen(x); got != want {
			t.Fatalf("Seen(%#v) at %d of %#v = %t, want %t", x, i, xs, got, want)
		}
	}
}
