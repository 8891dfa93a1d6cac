package planner

// The planner's workloads of the side-by-side comparison with Pyroscope v2
// (BENCHMARKS.md; the comparison harness defines them in its
// compactkit/planner/vs_bench_test.go as BenchmarkVsEnqueue/…/views=0
// and BenchmarkVsPlannerRestore). The definitions here are the same; only
// the names differ, and the identifiers are distinct from the harness's
// (benchenv.Sizes, not vsSizes), so that the harness's copy still compiles beside
// this file.
//
//   W1 BenchmarkW1Enqueue/blocks=N       enqueue N level-0 blocks, 1 tenant × 64 shards
//   W3 BenchmarkW3QueueRestore/blocks=N  restore a planner of N queued blocks
//
// VS_SIZES (comma-separated, as the harness's run.sh sets it) picks N;
// the default is 100,000 and 1,000,000.

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"

	"github.com/compactkit/compactkit/internal/benchenv"
)

// BenchmarkW1Enqueue (W1) enqueues N level-0 blocks over 1 tenant × 64
// shards, ten to a log entry, 1 ms apart, with no planning view open (the
// same work as Pyroscope's Compactor.Compact with an in-memory store). One
// op enqueues all N blocks into a new planner; ns/block is the mean time
// per block over the ops, B/block the heap growth per block beyond the ID
// strings (allocated before the measurement), after collection.
// BenchmarkEnqueue is the same workload with a view every 1,000 blocks.
func BenchmarkW1Enqueue(b *testing.B) {
	for _, n := range benchenv.Sizes(b, 100_000, 1_000_000) {
		blocks, _ := benchBlocks(n, 64)
		b.Run(fmt.Sprintf("blocks=%d", n), func(b *testing.B) { benchEnqueue(b, blocks, 0) })
	}
}

// BenchmarkW3QueueRestore (W3) restores a planner of N queued level-0
// blocks (1 tenant × 64 shards) from its snapshot: the queue only, as
// Pyroscope's Compactor.Restore restores its block queue (neither side
// loads the index). N=1,000,000 is BenchmarkPlannerRestore's state.
func BenchmarkW3QueueRestore(b *testing.B) {
	for _, n := range benchenv.Sizes(b, 100_000, 1_000_000) {
		snap := func() []byte {
			p, _ := benchPlanner(b, n)
			var buf bytes.Buffer
			if err := p.View().Snapshot(&buf); err != nil {
				b.Fatal(err)
			}
			return buf.Bytes()
		}()
		runtime.GC() // the source planner is garbage: do not time its collection
		b.Run(fmt.Sprintf("blocks=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(snap)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Restore(bytes.NewReader(snap)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/block")
		})
	}
}
