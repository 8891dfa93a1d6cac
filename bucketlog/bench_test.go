package bucketlog_test

import (
	"fmt"
	"testing"

	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/bucketlog/bucketlogtest"
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
	b.Run("blocks=1M", func(b *testing.B) { bucketlogtest.ReplicaMemoryBenchmark(b, 1_000_000) })
}
