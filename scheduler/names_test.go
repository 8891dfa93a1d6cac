package scheduler

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// TestNameFilter: a name added to the filter is always found; of names
// never added, few pass for ones that may be, with the filter at its
// fullest (the scheduler rebuilds it past max).
func TestNameFilter(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		size := rapid.IntRange(0, 3000).Draw(t, "size")
		f := newNameFilter(size)
		names := rapid.SliceOfNDistinct(rapid.StringN(0, 60, -1), 0, 200, rapid.ID).Draw(t, "names")
		for _, n := range names {
			f.add(nameHash(n))
		}
		for _, n := range names {
			if !f.mayHave(n) {
				t.Fatalf("%q added, not found", n)
			}
		}
	})
	f := newNameFilter(10_000)
	for i := range f.max {
		f.add(nameHash(fmt.Sprintf("tenant-%d.s%d.l0.%d.%016x", i%10, i%64, i, uint64(i)*0x9e3779b97f4a7c15)))
	}
	passed := 0
	const probes = 100_000
	for i := range probes {
		if f.mayHave(fmt.Sprintf("tenant-%d.s%d.l0.%d.%016x", i%10, i%64, f.max+i, uint64(i)*0xc2b2ae3d27d4eb4f)) {
			passed++
		}
	}
	t.Logf("%d of %d names never added pass (filter at its fullest)", passed, probes)
	if rate := float64(passed) / probes; rate > 0.01 {
		t.Fatalf("%d of %d names never added pass (%.4f)", passed, probes, rate)
	}
}
