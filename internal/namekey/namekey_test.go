package namekey

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestOrder: Names order as their strings do, and keep them.
func TestOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		// A small alphabet with NUL, and shared prefixes, so that keys tie
		// and padding meets real zero bytes.
		gen := rapid.StringOfN(rapid.SampledFrom([]rune{0, 'a', 'b', '.', 0x7f}), 0, 40, -1)
		prefix := rapid.SampledFrom([]string{"", "tenant-1.s12.l0.", "a-tenant-with-a-long-name.s1.l2."}).Draw(t, "prefix")
		a, b := prefix+gen.Draw(t, "a"), prefix+gen.Draw(t, "b")
		if got, want := Of(a).Compare(Of(b)), strings.Compare(a, b); got != want {
			t.Fatalf("Compare(%q, %q) = %d, want %d", a, b, got, want)
		}
		if Of(a).Less(Of(b)) != (a < b) {
			t.Fatalf("Less(%q, %q) disagrees with <", a, b)
		}
		if Of(a).String() != a {
			t.Fatalf("String of %q", a)
		}
	})
}

func BenchmarkCompareJobNames(b *testing.B) {
	x, y := "tenant-3.s12.l0.4567.0123456789abcdef", "tenant-3.s12.l0.4568.fedcba9876543210"
	nx, ny := Of(x), Of(y)
	for b.Loop() {
		if !nx.Less(ny) {
			b.Fatal("order")
		}
	}
}
