package index

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
)

// TestUnreleasablePoolStaysUnread: a view that finds nothing releasable
// answers from the state's copy of the pool's first entry, so the next
// replacement appends to the pool without copying it on write (the pool's
// generation stays); a view that reads releasable tombstones makes the
// next one copy.
func TestUnreleasablePoolStaysUnread(t *testing.T) {
	x, err := New(Config{CleanupDelay: 100})
	require.NoError(t, err)
	var e uint64
	entry := func() ck.Entry { e++; return ck.Entry{Index: e, Term: 1} }
	for i := range 8 {
		b := ck.BlockMeta{ID: fmt.Sprintf("b%d", i), Tenant: "acme", MinTime: 1, MaxTime: 2, Size: 1}
		require.NoError(t, x.Add(entry(), 0, &b))
	}
	replace := func(now int64, job string, srcs ...string) {
		t.Helper()
		out := ck.BlockMeta{ID: ck.OutputID(job, 1, 0), Tenant: "acme", Level: 1, MinTime: 1, MaxTime: 2, Size: 1}
		require.True(t, x.Replace(entry(), now, job, 1, srcs, []ck.BlockMeta{out}).Applied)
	}
	replace(10, "j0", "b0", "b1")

	check := func(now int64) (n int, oldest bool) {
		v := x.View()
		defer v.Close()
		next := v.Releasable(now)
		for _, ok := next(); ok; _, ok = next() {
			n++
		}
		_, oldest = v.OldestUnattachedReleasable(now)
		return n, oldest
	}
	gen := x.poolGen
	n, oldest := check(50)
	require.Zero(t, n)
	require.False(t, oldest)
	replace(20, "j1", "b2", "b3")
	require.Equal(t, gen, x.poolGen, "the pool was copied for a view that did not need it")

	n, oldest = check(115)
	require.Equal(t, 2, n) // j0's sources
	require.True(t, oldest)
	replace(30, "j2", "b4", "b5")
	require.Greater(t, x.poolGen, gen, "a view that read the pool did not freeze it")

	// The first entry follows the pool through a release and a detach.
	require.Len(t, ReleaseTo(x, 125, "cleaner", 0), 4)
	n, oldest = check(125)
	require.Zero(t, n)
	require.False(t, oldest)
	require.Equal(t, 4, x.Detach("cleaner"))
	n, _ = check(125)
	require.Equal(t, 4, n)
}
