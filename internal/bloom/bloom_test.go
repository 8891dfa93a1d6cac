package bloom

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// TestFilter: a string added is always found; of strings never added, few
// pass for ones that may be, with the filter full.
func TestFilter(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := New(rapid.IntRange(0, 3000).Draw(t, "size"))
		ss := rapid.SliceOfNDistinct(rapid.StringN(0, 60, -1), 0, 200, rapid.ID).Draw(t, "strings")
		for _, s := range ss {
			f.Add(Hash(s))
		}
		for _, s := range ss {
			if !f.MayHave(s) {
				t.Fatalf("%q added, not found", s)
			}
		}
	})
	f := New(10_000)
	name := func(i int, salt uint64) string {
		return fmt.Sprintf("tenant-%d.s%d.l0.%d.%016x", i%10, i%64, i, uint64(i)*salt)
	}
	for i := 0; !f.Full(); i++ {
		f.Add(Hash(name(i, 0x9e3779b97f4a7c15)))
	}
	passed := 0
	const probes = 100_000
	for i := range probes {
		if f.MayHave(name(f.max+i, 0xc2b2ae3d27d4eb4f)) {
			passed++
		}
	}
	t.Logf("%d of %d strings never added pass (filter full)", passed, probes)
	if rate := float64(passed) / probes; rate > 0.01 {
		t.Fatalf("%d of %d strings never added pass (%.4f)", passed, probes, rate)
	}
}
