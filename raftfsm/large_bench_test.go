package raftfsm_test

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/internal/benchenv"
	"github.com/compactkit/compactkit/raftfsm"
)

// liveHeap is the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkLargeState (a 10M-block state restores and polls)
// builds a state of N queued level-0 blocks (benchBlocks: 5 datasets each,
// 10 tenants × 64 shards; VS_SIZES picks N, default 10,000,000), snapshots
// it, restores the snapshot and runs 100 polls of 32 free slots on the
// restored state, each creating and assigning jobs. It reports the live
// heap per block of the built state and of the restored one (after a full
// collection, ID strings included), the snapshot's size, the restore's
// time (restore-s) and a poll's mean time (ns/poll). One op is one
// restore and its polls; the build is not timed.
func BenchmarkLargeState(b *testing.B) {
	for _, size := range benchenv.Sizes(b, 10_000_000) {
		b.Run(fmt.Sprintf("blocks=%d", size), func(b *testing.B) {
			cfg := raftfsm.DefaultConfig()
			cfg.Planner.Levels[0].MaxAge = 0 // only full batches
			cfg.Scheduler.MaxQueueSize = 0
			before := liveHeap()
			n := newNode(b, cfg)
			benchBlocks(b, n, size, "b")
			built := liveHeap() - before
			var snap bytes.Buffer
			require.NoError(b, n.f.Snapshot(&snap))
			n = nil
			var restore, polls time.Duration
			var restored uint64
			b.ResetTimer()
			for b.Loop() {
				b.StopTimer()
				base := liveHeap()
				b.StartTimer()
				start := time.Now()
				f, err := raftfsm.Restore(bytes.NewReader(snap.Bytes()))
				if err != nil {
					b.Fatal(err)
				}
				restore += time.Since(start)
				b.StopTimer()
				restored = liveHeap() - base
				rn := &node{t: b, f: f, index: f.Stats().LastApplied, now: f.Stats().Now}
				b.StartTimer()
				start = time.Now()
				for seq := uint64(1); seq <= 100; seq++ {
					rn.advance(time.Millisecond)
					resp := rn.poll(&ck.PollRequest{WorkerID: "w", Seq: seq, FreeSlots: 32})
					if len(resp.Jobs) != 32 {
						b.Fatalf("poll %d: %d jobs", seq, len(resp.Jobs))
					}
				}
				polls += time.Since(start)
			}
			// ResetTimer drops metrics reported before it: all come last.
			b.ReportMetric(float64(built)/float64(size), "B/block")
			b.ReportMetric(float64(snap.Len())/(1<<20), "snapshot-MiB")
			b.ReportMetric(float64(restored)/float64(size), "restored-B/block")
			b.ReportMetric(restore.Seconds()/float64(b.N), "restore-s")
			b.ReportMetric(float64(polls.Nanoseconds())/float64(100*b.N), "ns/poll")
		})
	}
}
