package bucketlog_test

import (
	"fmt"
	"runtime"
	"testing"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/bucketlog/bucketlogtest"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/raftfsm"
)

// BenchmarkCoordinators: polls through 1, 4 and 16 coordinators of one
// bucket log on a FileStore (fsync off), all at once.
func BenchmarkCoordinators(b *testing.B) {
	for _, n := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("file/%d", n), func(b *testing.B) {
			s, err := blockmerge.NewFileStore(b.TempDir(), blockmerge.WithoutSync())
			if err != nil {
				b.Fatal(err)
			}
			bucketlogtest.CoordinatorsBenchmark(b, s, n)
		})
	}
}

// BenchmarkIngest: the maximum append rate of one coordinator on a
// FileStore (fsync off), with 1 and 16 writers adding a block each per
// command; with 16, commands are batched.
func BenchmarkIngest(b *testing.B) {
	for _, w := range []int{1, 16} {
		b.Run(fmt.Sprintf("file/writers=%d", w), func(b *testing.B) {
			s, err := blockmerge.NewFileStore(b.TempDir(), blockmerge.WithoutSync())
			if err != nil {
				b.Fatal(err)
			}
			bucketlogtest.IngestBenchmark(b, s, w)
		})
	}
}

// BenchmarkFleet: 1, 4 and 16 workers polling at once on a FileStore
// (fsync off), serverless (each worker its own node) and through one
// coordinator.
func BenchmarkFleet(b *testing.B) {
	for _, w := range []int{1, 4, 16} {
		for _, serverless := range []bool{true, false} {
			mode := "coordinator"
			if serverless {
				mode = "serverless"
			}
			b.Run(fmt.Sprintf("file/%s/workers=%d", mode, w), func(b *testing.B) {
				s, err := blockmerge.NewFileStore(b.TempDir(), blockmerge.WithoutSync())
				if err != nil {
					b.Fatal(err)
				}
				bucketlogtest.FleetBenchmark(b, s, bucketlogtest.Fleet{Nodes: 1, Workers: w, Serverless: serverless})
			})
		}
	}
}

// BenchmarkReplicaMemory: the memory of one replica (a serverless
// worker's) with 1M blocks queued.
func BenchmarkReplicaMemory(b *testing.B) {
	b.Run("blocks=1M", func(b *testing.B) { replicaMemory(b, 1_000_000) })
}

// replicaMemory measures what one replica of the log's state
// holds in memory with blocks level-0 blocks queued (the memory of a
// serverless worker, which keeps one): the live heap after a collection,
// in bytes per replica and per block.
func replicaMemory(b *testing.B, blocks int) {
	for range b.N {
		b.StopTimer()
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		b.StartTimer()
		fsm, err := raftfsm.New(raftfsm.DefaultConfig())
		if err != nil {
			b.Fatal(err)
		}
		batch := make([]ck.BlockMeta, 0, raftfsm.DefaultLimits.MaxBlocks)
		index := uint64(0)
		for i := range blocks {
			batch = append(batch, leadertest.Block(fmt.Sprintf("01JD%016d-%06d", i, i%1000), fmt.Sprintf("tenant-%03d", i%100), uint32(i%64), int64(i)*1e6))
			if len(batch) == cap(batch) || i == blocks-1 {
				index++
				data, err := (&raftfsm.Command{AddBlocks: &raftfsm.AddBlocks{Blocks: batch}, Time: 1e18}).MarshalVersion(raftfsm.CommandVersion)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := fsm.Apply(ck.Entry{Index: index, Term: 1, Time: 1e18}, data); err != nil {
					b.Fatal(err)
				}
				batch = batch[:0]
			}
		}
		b.StopTimer()
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		live := float64(after.HeapAlloc) - float64(before.HeapAlloc)
		b.ReportMetric(live/1e6, "MB/replica")
		b.ReportMetric(live/float64(blocks), "B/block")
		runtime.KeepAlive(fsm)
		b.StartTimer()
	}
}
