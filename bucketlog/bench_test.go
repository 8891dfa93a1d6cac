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
