package index

import (
	"io"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSmallSnapshotAllocatesLittle is the regression test of simulation
// finding F1: every section of a snapshot used to allocate a full frame's
// buffer (65,536 records, about 9 MB in all) however small the index.
func TestSmallSnapshotAllocatesLittle(t *testing.T) {
	x := mustNew(t)
	require.NoError(t, x.View().Snapshot(io.Discard)) // warm up
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	require.NoError(t, x.View().Snapshot(io.Discard))
	runtime.ReadMemStats(&after)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), "bytes allocated by the snapshot of an empty index")
}
