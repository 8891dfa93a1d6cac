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
func BenchmarkCoordinators(b *testing.B) { bucketlogtest.CoordinatorsBenchmarks(b, benchFileStore) }

// BenchmarkIngest: the maximum append rate of one coordinator on a
// FileStore (fsync off), with 1 and 16 writers adding a block each per
// command; with 16, commands are batched.
func BenchmarkIngest(b *testing.B) { bucketlogtest.IngestBenchmarks(b, benchFileStore) }

// BenchmarkFleet: 1, 4 and 16 workers polling at once on a FileStore
// (fsync off), serverless (each worker its own node) and through one
// coordinator.
func BenchmarkFleet(b *testing.B) { bucketlogtest.FleetBenchmarks(b, benchFileStore) }

// benchFileStore is a new FileStore for a benchmark, fsync off.
func benchFileStore(b *testing.B) blockmerge.Store { return newFileStore(b, b.TempDir()) }

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
