package demo

import (
	"os"
	"path/filepath"

	"github.com/compactkit/compactkit/blockmerge"
)

// Workspace creates the example's temporary directory under c.Dir (""
// for the system's), named after pattern, and a filesystem object store
// in it. close closes the store and, unless c.Keep is set, removes the
// directory.
func (c Config) Workspace(pattern string) (dir string, store *blockmerge.FileStore, close func(), err error) {
	keep := c.Keep
	dir, err = os.MkdirTemp(c.Dir, pattern)
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
