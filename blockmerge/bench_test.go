package blockmerge_test

import (
	"testing"

	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/blockmerge/storetest"
)

// BenchmarkMerge runs storetest.MergeBenchmark through the filesystem
// store on disk, with fsync on.
func BenchmarkMerge(b *testing.B) {
	s, err := blockmerge.NewFileStore(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	storetest.MergeBenchmark(b, s)
}
