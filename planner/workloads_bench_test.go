package planner

// The planner's workloads of the side-by-side comparison with Pyroscope v2
// (issue 19; harness in ../shared/perf-vs-pyroscope/, which defines them in
// its compactkit/planner/vs_bench_test.go as BenchmarkVsEnqueue/…/views=0
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
	"time"

	ck "github.com/compactkit/compactkit"
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
		t0 := blocks[0].MaxTime
		b.Run(fmt.Sprintf("blocks=%d", n), func(b *testing.B) {
			var elapsed time.Duration
			var perBlock float64
			runs := 0
			for b.Loop() {
				b.StopTimer()
				before := heapAlloc()
				p, err := New(DefaultConfig())
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				start := time.Now()
				for i := range blocks {
					e := ck.Entry{Index: uint64(i/10 + 1), Term: 1, Time: t0 + int64(i)*int64(time.Millisecond)}
					if _, err := p.Enqueue(e, &blocks[i]); err != nil {
						b.Fatal(err)
					}
				}
				elapsed += time.Since(start)
				runs++
				b.StopTimer()
				perBlock = (float64(heapAlloc()) - float64(before)) / float64(n)
				runtime.KeepAlive(p)
				b.StartTimer()
			}
			b.ReportMetric(float64(elapsed.Nanoseconds())/float64(runs*n), "ns/block")
			b.ReportMetric(perBlock, "B/block")
		})
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
			if err := p.Snapshot(&buf); err != nil {
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
