package blockmerge_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/blockmerge/storetest"
)

// files lists every file and directory under dir, relative to it.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			rel, _ := filepath.Rel(dir, p)
			if d.IsDir() {
				rel += "/"
			}
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	}))
	return out
}

func TestFileStoreLayout(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openFileStore(t, dir)
	putBytes(t, s, "blocks/job/12/0", []byte("data"))
	b, err := os.ReadFile(filepath.Join(dir, "blocks", "job", "12", "0"))
	require.NoError(t, err)
	require.Equal(t, "data", string(b), "an object is a file at its key's path")
	require.Equal(t, []string{"blocks/", "blocks/job/", "blocks/job/12/", "blocks/job/12/0"}, files(t, dir), "no staging files left")

	// Deleting the last object of a directory removes the empty
	// directories up to the root.
	require.NoError(t, s.Delete(ctx, "blocks/job/12/0"))
	require.Empty(t, files(t, dir))

	// A key cannot be both an object and a "directory" of other keys.
	putBytes(t, s, "a/b", []byte("x"))
	require.Error(t, s.Put(ctx, "a", strings.NewReader("y")))
	require.Error(t, s.Put(ctx, "a/b/c", strings.NewReader("y")))
	require.Equal(t, []string{"a/b"}, listKeys(t, s, ""))
	require.Equal(t, "x", string(objectBytes(t, s, "a/b")))
	require.Equal(t, []string{"a/", "a/b"}, files(t, dir), "failed puts left staging files")
}

// TestFileStoreInterruptedPut: a put whose reader fails mid-way leaves no
// object and no file at all, and an existing object intact.
func TestFileStoreInterruptedPut(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openFileStore(t, dir)
	boom := errors.New("connection reset")
	r := io.MultiReader(bytes.NewReader(make([]byte, 1<<20)), &errReader{boom})
	err := s.Put(ctx, "blocks/new/object", r)
	require.ErrorIs(t, err, boom)
	require.ErrorContains(t, err, "blocks/new/object")
	require.Empty(t, files(t, dir), "an interrupted put left files behind")

	putBytes(t, s, "blocks/old", []byte("old"))
	require.Error(t, s.Put(ctx, "blocks/old", io.MultiReader(strings.NewReader("new, partial"), &errReader{boom})))
	require.Equal(t, "old", string(objectBytes(t, s, "blocks/old")))
	require.Equal(t, []string{"blocks/", "blocks/old"}, files(t, dir))

	// An aborted streaming write leaves nothing either.
	w, err := blockmerge.CreateObject(ctx, s, "blocks/x/y", "")
	require.NoError(t, err)
	_, err = w.Write([]byte("partial"))
	require.NoError(t, err)
	ok, err := s.Exists(ctx, "blocks/x/y")
	require.NoError(t, err)
	require.False(t, ok, "visible before commit")
	require.Equal(t, []string{"blocks/old"}, listKeys(t, s, ""), "staging file listed")
	require.NoError(t, w.Abort())
	require.Equal(t, []string{"blocks/", "blocks/old"}, files(t, dir))
}

type errReader struct{ err error }

func (r *errReader) Read([]byte) (int, error) { return 0, r.err }

// TestFileStoreCrashLeftovers: a staging file left by a crash (the process
// died between create and rename) is not an object, and is removed by
// RemoveStaging.
func TestFileStoreCrashLeftovers(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openFileStore(t, dir)
	putBytes(t, s, "blocks/a", []byte("a"))
	leftover := filepath.Join(dir, "blocks", ".ck-tmp-999-1")
	require.NoError(t, os.WriteFile(leftover, []byte("half an object"), 0o644))

	require.Equal(t, []string{"blocks/a"}, listKeys(t, s, ""))
	require.Equal(t, []string{"blocks/a"}, listKeys(t, s, "blocks/"))
	require.Empty(t, listKeys(t, s, "blocks/.ck"))
	_, err := s.Get(ctx, "blocks/.ck-tmp-999-1")
	require.ErrorIs(t, err, blockmerge.ErrInvalidKey, "staging names are reserved")
	require.ErrorIs(t, s.Put(ctx, "blocks/.ck-tmp-1-1", strings.NewReader("x")), blockmerge.ErrInvalidKey)

	n, err := s.RemoveStaging(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, []string{"blocks/", "blocks/a"}, files(t, dir))
}

// TestFileStorePathEscape: no key reaches outside the root, whether by its
// own segments or through a symbolic link planted under the root.
func TestFileStorePathEscape(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	require.NoError(t, os.MkdirAll(outside, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o644))
	s := openFileStore(t, root)

	for _, k := range append([]string{"../outside/secret", "blocks/../../outside/secret", root + "/x", filepath.Join(outside, "secret")}, storetest.InvalidKeys...) {
		_, err := s.Get(ctx, k)
		require.ErrorIs(t, err, blockmerge.ErrInvalidKey, "Get(%q)", k)
		require.ErrorIs(t, s.Put(ctx, k, strings.NewReader("pwned")), blockmerge.ErrInvalidKey, "Put(%q)", k)
		require.ErrorIs(t, s.Delete(ctx, k), blockmerge.ErrInvalidKey, "Delete(%q)", k)
	}

	require.NoError(t, os.Symlink(outside, filepath.Join(root, "link")))
	_, err := s.Get(ctx, "link/secret")
	require.Error(t, err, "read through a symbolic link out of the root")
	require.Error(t, s.Put(ctx, "link/planted", strings.NewReader("pwned")), "write through a symbolic link out of the root")
	require.Error(t, s.Delete(ctx, "link/secret"), "delete through a symbolic link out of the root")
	require.Error(t, s.DeleteByPrefix(ctx, "link/"))

	require.Equal(t, []string{"secret"}, files(t, outside), "the outside directory was touched")
	b, err := os.ReadFile(filepath.Join(outside, "secret"))
	require.NoError(t, err)
	require.Equal(t, "secret", string(b))
}

func TestFileStoreSharedRoot(t *testing.T) {
	// Two stores (two processes, say) on one root see each other's objects.
	dir := t.TempDir()
	a := openFileStore(t, dir)
	b := openFileStore(t, dir, blockmerge.WithoutSync())
	putBytes(t, a, "k/1", []byte("from a"))
	putBytes(t, b, "k/2", []byte("from b"))
	require.Equal(t, []string{"k/1", "k/2"}, listKeys(t, a, "k/"))
	require.Equal(t, "from b", string(objectBytes(t, a, "k/2")))
}

func TestNewFileStoreErrors(t *testing.T) {
	_, err := blockmerge.NewFileStore("")
	require.Error(t, err)
	f := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(f, nil, 0o644))
	_, err = blockmerge.NewFileStore(f)
	require.Error(t, err)
}

// TestFileStoreConcurrentPutDelete races puts into fresh directories with
// deletions that prune those directories: no put fails, a committed object
// is whole, and nothing but objects is left (run it with -race).
func TestFileStoreConcurrentPutDelete(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openFileStore(t, dir, blockmerge.WithoutSync())
	const writers, rounds = 3, 40
	var wg sync.WaitGroup
	errs := make(chan error, writers*rounds*2+rounds)
	for w := range writers {
		wg.Go(func() {
			for r := range rounds {
				key := fmt.Sprintf("blocks/job/%d/%d/0", r%4, w)
				if err := s.Put(ctx, key, strings.NewReader(key)); err != nil {
					errs <- err
					continue
				}
				if b, err := s.Get(ctx, key); err == nil {
					got, _ := io.ReadAll(b)
					b.Close()
					if string(got) != key {
						errs <- fmt.Errorf("%s holds %q", key, got)
					}
				} else if !errors.Is(err, blockmerge.ErrNotFound) {
					errs <- err // deleted meanwhile is fine, anything else is not
				}
			}
		})
	}
	wg.Go(func() {
		for r := range rounds {
			if err := s.DeleteByPrefix(ctx, fmt.Sprintf("blocks/job/%d/", r%4)); err != nil {
				errs <- err
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, f := range files(t, dir) {
		require.NotContains(t, f, ".ck-tmp-", "staging file left behind")
	}
	require.NoError(t, s.DeleteByPrefix(ctx, "blocks/"))
	require.Empty(t, files(t, dir), "empty directories left behind")
}

// TestFileStoreRefusesLongSegment is FuzzFileStoreKey's finding: a key
// segment longer than a file name failed with the filesystem's "file name
// too long" at the rename, not ErrInvalidKey. Now it is refused up front,
// and nothing is written.
func TestFileStoreRefusesLongSegment(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "root")
	s := openFileStore(t, root)

	long := "blocks/" + strings.Repeat("k", 256) + "/0"
	require.NoError(t, blockmerge.ValidateKey(long), "a valid key for object stores")
	require.ErrorIs(t, s.Put(ctx, long, strings.NewReader("data")), blockmerge.ErrInvalidKey)
	_, err := blockmerge.CreateObject(ctx, s, long, "")
	require.ErrorIs(t, err, blockmerge.ErrInvalidKey)
	_, err = s.Get(ctx, long)
	require.ErrorIs(t, err, blockmerge.ErrInvalidKey)
	require.Empty(t, files(t, root))

	ok := "blocks/" + strings.Repeat("k", 255) + "/0"
	require.NoError(t, s.Put(ctx, ok, strings.NewReader("data")), "255 bytes is a file name")
}
