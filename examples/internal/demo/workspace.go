package demo

import (
	"os"
	"path/filepath"

	"github.com/compactkit/compactkit/blockmerge"
)

// Workspace creates the example's temporary directory under parent (""
// for the system's) and a filesystem object store in it. close closes the
// store and, unless keep is set, removes the directory.
func Workspace(parent, pattern string, keep bool) (dir string, store *blockmerge.FileStore, close func(), err error) {
	dir, err = os.MkdirTemp(parent, pattern)
	if err != nil {
		return "", nil, nil, err
	}
	store, err = blockmerge.NewFileStore(filepath.Join(dir, "objects"), blockmerge.WithoutSync())
	if err != nil {
		if !keep {
			os.RemoveAll(dir)
		}
		return "", nil, nil, err
	}
	return dir, store, func() {
		store.Close()
		if !keep {
			os.RemoveAll(dir)
		}
	}, nil
}
