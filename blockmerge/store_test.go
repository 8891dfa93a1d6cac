package blockmerge_test

import (
	"testing"

	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/blockmerge/storetest"
	"github.com/compactkit/compactkit/fencing"
)

func TestMemStoreConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) blockmerge.Store { return blockmerge.NewMemStore() })
}

func TestFileStoreConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) blockmerge.Store { return newFileStore(t) })
}

func TestFileStoreConformanceNoSync(t *testing.T) {
	storetest.Run(t, func(t *testing.T) blockmerge.Store { return newFileStore(t, blockmerge.WithoutSync()) })
}

func TestFencedStoreConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) blockmerge.Store {
		return blockmerge.NewFencedStore(blockmerge.NewMemStore(), new(fencing.Guard), "job", 1)
	})
}

// newFileStore opens a file store on a new temporary directory, closed
// when the test ends.
func newFileStore(t testing.TB, opts ...blockmerge.Option) *blockmerge.FileStore {
	t.Helper()
	return openFileStore(t, t.TempDir(), opts...)
}

// openFileStore opens a file store on dir, closed when the test ends.
func openFileStore(t testing.TB, dir string, opts ...blockmerge.Option) *blockmerge.FileStore {
	t.Helper()
	s, err := blockmerge.NewFileStore(dir, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
