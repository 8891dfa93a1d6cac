package blockmerge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// tempPrefix starts the names of a FileStore's staging files. Keys with a
// segment starting with it are refused, and listings skip such names, so a
// staging file (even one left behind by a crash) is never an object.
const tempPrefix = ".ck-tmp-"

// FileStore is a [Store] over a directory of the local filesystem, the
// embedded default.
//
// An object is a regular file at the key's path under the root. Put writes
// a staging file in the object's directory, fsyncs it, renames it over the
// object and fsyncs the directory, so a reader sees the old or the new
// object, never a part, and a committed object survives a crash. Deleting
// an object removes directories it leaves empty. A streaming write
// ([FileStore.Create], which Merge uses) starts the writeback of every 4
// MiB as it goes (sync_file_range on Linux, as RocksDB's bytes_per_sync),
// so the disk works while the merge computes and the fsync at commit
// mostly finds the data written; Put copies with the kernel's file-to-file
// copy when given a file.
//
// Keys are checked with [ValidateKey], and every access goes through an
// [os.Root], so no key (not even through a symbolic link planted under the
// root) reaches outside the root. Keys with a segment starting with
// ".ck-tmp-" are reserved for staging files and refused, and so are keys
// with a segment longer than 255 bytes, which no common filesystem takes
// as a file name (a block ID may be up to 512 bytes: IDs meant for a
// FileStore keep each '/'-separated part to 255).
//
// Because objects are files, a key cannot also be a "directory" of other
// keys: with "a/b" stored, putting "a" fails (and the other way round).
// Compaction keys never collide that way.
//
// A FileStore is safe for concurrent use, also by several processes
// sharing the root. Staging files left by a crash are invisible to List and
// never reused; [FileStore.RemoveStaging] deletes them.
type FileStore struct {
	root   *os.Root
	noSync bool
	seq    atomic.Uint64
	pid    string
}

var (
	_ Store             = (*FileStore)(nil)
	_ creator           = (*FileStore)(nil)
	_ ConditionalPutter = (*FileStore)(nil)
	_ Timestamper       = (*FileStore)(nil)
)

// NewFileStore opens (creating it if needed) the directory dir as a store.
// Close the store to release the directory handle. Of the options, only
// [WithoutSync] applies.
func NewFileStore(dir string, opts ...Option) (*FileStore, error) {
	if dir == "" {
		return nil, errors.New("blockmerge: file store: empty directory name")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("blockmerge: file store: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("blockmerge: file store: %w", err)
	}
	return &FileStore{root: root, noSync: buildOptions(opts).noSync, pid: strconv.Itoa(os.Getpid())}, nil
}

// Close releases the store's handle on its root directory.
func (s *FileStore) Close() error { return s.root.Close() }

// maxNameLen is the longest file name common filesystems accept
// (NAME_MAX): a key segment longer than that cannot be a file.
const maxNameLen = 255

// name validates key and returns its path relative to the root.
func (s *FileStore) name(key string) (string, error) {
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	for seg := range strings.SplitSeq(key, "/") {
		if strings.HasPrefix(seg, tempPrefix) {
			return "", fmt.Errorf("%w: %q: segment %q is reserved", ErrInvalidKey, key, seg)
		}
		if len(seg) > maxNameLen {
			return "", fmt.Errorf("%w: %q: segment of %d bytes, a file name holds at most %d", ErrInvalidKey, key, len(seg), maxNameLen)
		}
	}
	return filepath.FromSlash(key), nil
}

// open opens the object key for reading and returns it with its size.
func (s *FileStore) open(ctx context.Context, op, key string) (*os.File, int64, error) {
	name, err := s.name(key)
	if err != nil {
		return nil, 0, err
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, fmt.Errorf("blockmerge: %s %q: %w", op, key, err)
	}
	f, err := s.root.Open(name)
	if err != nil {
		if isAbsent(err) {
			return nil, 0, notFound(op, key)
		}
		return nil, 0, fmt.Errorf("blockmerge: %s %q: %w", op, key, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("blockmerge: %s %q: %w", op, key, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, 0, notFound(op, key)
	}
	return f, fi.Size(), nil
}

// isAbsent reports whether err means that a path does not exist (or that
// one of its parents is not a directory).
func isAbsent(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// Get implements [Store]. The reader is the object's file.
func (s *FileStore) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	f, _, err := s.open(ctx, "get", key)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// GetRange implements [Store].
func (s *FileStore) GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	f, size, err := s.open(ctx, "get range", key)
	if err != nil {
		return nil, err
	}
	if err := checkRange(key, off, length, size); err != nil {
		f.Close()
		return nil, err
	}
	n := min(length, size-off)
	return &sectionFile{SectionReader: io.NewSectionReader(f, off, n), f: f}, nil
}

type sectionFile struct {
	*io.SectionReader
	f *os.File
}

func (r *sectionFile) Close() error { return r.f.Close() }

// Size implements [Store].
func (s *FileStore) Size(ctx context.Context, key string) (int64, error) {
	fi, err := s.stat(ctx, "size", key)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

func (s *FileStore) stat(ctx context.Context, op, key string) (fs.FileInfo, error) {
	name, err := s.name(key)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("blockmerge: %s %q: %w", op, key, err)
	}
	fi, err := s.root.Stat(name)
	if err != nil {
		if isAbsent(err) {
			return nil, notFound(op, key)
		}
		return nil, fmt.Errorf("blockmerge: %s %q: %w", op, key, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, notFound(op, key)
	}
	return fi, nil
}

// Exists implements [Store].
func (s *FileStore) Exists(ctx context.Context, key string) (bool, error) {
	_, err := s.stat(ctx, "exists", key)
	return existence(err)
}

// ModTime implements [Timestamper]: the file's modification time, which
// its writer's last write set (on a network filesystem, the server's
// clock).
func (s *FileStore) ModTime(ctx context.Context, key string) (time.Time, error) {
	fi, err := s.stat(ctx, "mod time", key)
	if err != nil {
		return time.Time{}, err
	}
	return fi.ModTime(), nil
}

// Put implements [Store]: see [FileStore] for the protocol.
func (s *FileStore) Put(ctx context.Context, key string, r io.Reader) error {
	return s.put(ctx, key, r, false)
}

// PutIfAbsent implements [ConditionalPutter]: the fsynced staging file is
// hard-linked to the key's name, which fails if the name exists, so there
// is no window between a check and the publication; then the directory is
// synced. It needs a filesystem with hard links (every local POSIX one).
func (s *FileStore) PutIfAbsent(ctx context.Context, key string, r io.Reader) error {
	return s.put(ctx, key, r, true)
}

func (s *FileStore) put(ctx context.Context, key string, r io.Reader, exclusive bool) error {
	w, err := s.createFile(ctx, key, exclusive)
	if err != nil {
		return err
	}
	// Copy into the file itself so that the kernel can copy file to file.
	return copyCommit(key, w.f, w, r)
}

// create implements [creator]: the object is written to a staging file
// that Commit publishes as Put does.
func (s *FileStore) create(ctx context.Context, key string) (ObjectWriter, error) {
	w, err := s.createFile(ctx, key, false)
	if err != nil {
		return nil, err
	}
	return w, nil
}

func (s *FileStore) createFile(ctx context.Context, key string, exclusive bool) (*fileWriter, error) {
	name, err := s.name(key)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("blockmerge: create %q: %w", key, err)
	}
	dir := path.Dir(key)
	// A concurrent Delete may remove a directory (it prunes the ones it
	// leaves empty) between its creation and the creation of its child or
	// of the staging file: try again then.
	for attempt := 0; ; attempt++ {
		if err := s.mkdirs(dir); err != nil {
			if errors.Is(err, fs.ErrNotExist) && attempt < 100 {
				continue
			}
			return nil, fmt.Errorf("blockmerge: create %q: %w", key, err)
		}
		tmp := filepath.Join(filepath.Dir(name), tempPrefix+s.pid+"-"+strconv.FormatUint(s.seq.Add(1), 10))
		f, err := s.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			return &fileWriter{writerBase: writerBase{ctx: ctx, key: key, dst: f}, s: s, name: name, tmp: tmp, dir: dir, f: f, exclusive: exclusive}, nil
		}
		if (errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrExist)) && attempt < 100 {
			continue
		}
		return nil, fmt.Errorf("blockmerge: create %q: %w", key, err)
	}
}

// mkdirs creates the directory dir (a key prefix without trailing '/',
// or ".") and its parents, fsyncing the parent of every directory it
// creates.
func (s *FileStore) mkdirs(dir string) error {
	if dir == "." {
		return nil
	}
	if fi, err := s.root.Stat(filepath.FromSlash(dir)); err == nil && fi.IsDir() {
		return nil
	}
	var created []string
	for i := 0; i <= len(dir); i++ {
		if i < len(dir) && dir[i] != '/' {
			continue
		}
		p := dir[:i]
		err := s.root.Mkdir(filepath.FromSlash(p), 0o755)
		switch {
		case err == nil:
			created = append(created, p)
		case errors.Is(err, fs.ErrExist):
		default:
			return err
		}
	}
	for _, p := range created {
		if err := s.syncDir(path.Dir(p)); err != nil {
			return err
		}
	}
	return nil
}

// syncDir fsyncs the directory dir ("." for the root).
func (s *FileStore) syncDir(dir string) error {
	if s.noSync {
		return nil
	}
	d, err := s.root.Open(filepath.FromSlash(dir))
	if err != nil {
		return err
	}
	serr := d.Sync()
	cerr := d.Close()
	return errors.Join(serr, cerr)
}

type fileWriter struct {
	writerBase // dst is f; Write adds the writeback
	s          *FileStore
	name       string // path of the object relative to the root
	tmp        string // path of the staging file relative to the root
	dir        string // key's directory ("." at the root)
	f          *os.File
	// exclusive makes Commit publish only if the key does not exist.
	exclusive bool
	// written is the number of bytes written; synced the offset up to
	// which writeback was started.
	written, synced int64
}

// writeBehind is how many bytes a streaming write accumulates before it
// starts their writeback.
const writeBehind = 4 << 20

func (w *fileWriter) Write(p []byte) (int, error) {
	if err := w.err("write"); err != nil {
		return 0, err
	}
	n, err := w.f.Write(p)
	w.written += int64(n)
	if !w.s.noSync && w.written-w.synced >= writeBehind {
		startWriteback(w.f, w.synced, w.written-w.synced)
		w.synced = w.written
	}
	return n, err
}

func (w *fileWriter) Commit() error {
	if err := w.err("commit"); err != nil {
		w.Abort() //nolint:errcheck // the context error is the one to report; a no-op if done
		return err
	}
	w.done = true
	var err error
	if !w.s.noSync {
		err = w.f.Sync()
	}
	err = errors.Join(err, w.f.Close())
	switch {
	case err != nil:
	case w.exclusive:
		err = w.s.root.Link(w.tmp, w.name)
		rerr := w.s.root.Remove(w.tmp)
		if errors.Is(err, fs.ErrExist) {
			w.s.pruneDirs(w.dir)
			return fmt.Errorf("blockmerge: put %q: %w", w.key, ErrExists)
		}
		if err == nil {
			err = rerr
		}
	default:
		err = w.s.root.Rename(w.tmp, w.name)
	}
	if err != nil {
		w.s.root.Remove(w.tmp) //nolint:errcheck // best effort
		return fmt.Errorf("blockmerge: commit %q: %w", w.key, err)
	}
	if err := w.s.syncDir(w.dir); err != nil {
		return fmt.Errorf("blockmerge: commit %q: sync directory: %w", w.key, err)
	}
	return nil
}

func (w *fileWriter) Abort() error {
	if w.done {
		return nil
	}
	w.done = true
	cerr := w.f.Close()
	rerr := w.s.root.Remove(w.tmp)
	w.s.pruneDirs(w.dir)
	return errors.Join(cerr, rerr)
}

// Delete implements [Store]. It removes the directories the object leaves
// empty.
func (s *FileStore) Delete(ctx context.Context, key string) error {
	name, err := s.name(key)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("blockmerge: delete %q: %w", key, err)
	}
	fi, err := s.root.Lstat(name)
	if err != nil {
		if isAbsent(err) {
			return nil
		}
		return fmt.Errorf("blockmerge: delete %q: %w", key, err)
	}
	if fi.IsDir() {
		return nil // a "directory" of other keys is not an object
	}
	if err := s.root.Remove(name); err != nil {
		if isAbsent(err) {
			return nil
		}
		return fmt.Errorf("blockmerge: delete %q: %w", key, err)
	}
	dir := path.Dir(key)
	if err := s.syncDir(dir); err != nil && !isAbsent(err) {
		return fmt.Errorf("blockmerge: delete %q: sync directory: %w", key, err)
	}
	s.pruneDirs(dir)
	return nil
}

// pruneDirs removes dir and its parents while they are empty.
func (s *FileStore) pruneDirs(dir string) {
	for dir != "." && dir != "/" {
		if err := s.root.Remove(filepath.FromSlash(dir)); err != nil {
			return // not empty (or already gone): stop
		}
		parent := path.Dir(dir)
		s.syncDir(parent) //nolint:errcheck // removal of empty directories is best effort
		dir = parent
	}
}

// List implements [Store]. It walks the directories under the prefix in
// key order, without reading the whole listing into memory first.
func (s *FileStore) List(ctx context.Context, prefix string, fn func(key string) error) error {
	if err := validatePrefix(prefix); err != nil {
		return err
	}
	for seg := range strings.SplitSeq(prefix, "/") {
		if strings.HasPrefix(seg, tempPrefix) {
			return nil // reserved names are never objects
		}
	}
	start := ""
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		start = prefix[:i]
	}
	err := s.walk(ctx, start, prefix, fn)
	var ce callbackError
	switch {
	case errors.As(err, &ce):
		return ce.err
	case isAbsent(err):
		return nil
	}
	return err
}

// callbackError carries an error returned by List's callback through the
// walk, so that it is returned as it is.
type callbackError struct{ err error }

func (e callbackError) Error() string { return e.err.Error() }

// walk lists the objects in directory dir (a key prefix without trailing
// '/', or "" for the root) whose keys start with prefix, in key order.
func (s *FileStore) walk(ctx context.Context, dir, prefix string, fn func(key string) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("blockmerge: list %q: %w", prefix, err)
	}
	osDir := "."
	if dir != "" {
		osDir = filepath.FromSlash(dir)
	}
	d, err := s.root.Open(osDir)
	if err != nil {
		return err
	}
	entries, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return err
	}
	type entry struct {
		key   string // full key, with a trailing '/' for a directory
		isDir bool
	}
	list := make([]entry, 0, len(entries))
	base := ""
	if dir != "" {
		base = dir + "/"
	}
	for _, e := range entries {
		n := e.Name()
		if strings.HasPrefix(n, tempPrefix) {
			continue
		}
		switch {
		case e.IsDir():
			k := base + n + "/"
			// Descend only where the prefix and the directory overlap.
			if strings.HasPrefix(k, prefix) || strings.HasPrefix(prefix, k) {
				list = append(list, entry{k, true})
			}
		case e.Type().IsRegular():
			if k := base + n; strings.HasPrefix(k, prefix) && ValidateKey(k) == nil {
				list = append(list, entry{k, false})
			}
		}
	}
	// A directory sorts as its name followed by '/', which makes the walk
	// produce the lexical order of the full keys.
	slices.SortFunc(list, func(a, b entry) int { return strings.Compare(a.key, b.key) })
	for _, e := range list {
		if e.isDir {
			err := s.walk(ctx, strings.TrimSuffix(e.key, "/"), prefix, fn)
			var ce callbackError
			if err != nil && (errors.As(err, &ce) || !isAbsent(err)) {
				return err
			}
			continue
		}
		if err := fn(e.key); err != nil {
			return callbackError{err}
		}
	}
	return nil
}

// DeleteByPrefix implements [Store].
func (s *FileStore) DeleteByPrefix(ctx context.Context, prefix string) error {
	if err := validateDeletePrefix(prefix); err != nil {
		return err
	}
	var keys []string
	if err := s.List(ctx, prefix, func(k string) error { keys = append(keys, k); return nil }); err != nil {
		return err
	}
	for _, k := range keys {
		if err := s.Delete(ctx, k); err != nil {
			return err
		}
	}
	return nil
}

// RemoveStaging deletes the staging files that interrupted writes left
// under the root (after a crash, say) and returns how many it removed.
// Call it only when no write is in progress in any process using the
// root: it would remove an in-progress write's staging file and make that
// write fail.
func (s *FileStore) RemoveStaging(ctx context.Context) (int, error) {
	n := 0
	err := fs.WalkDir(s.root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if !d.IsDir() && strings.HasPrefix(d.Name(), tempPrefix) {
			if err := s.root.Remove(filepath.FromSlash(p)); err != nil && !isAbsent(err) {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return n, fmt.Errorf("blockmerge: remove staging files: %w", err)
	}
	return n, nil
}
