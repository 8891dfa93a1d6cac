package blockmerge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"
)

// Store errors.
var (
	// ErrNotFound reports an object, or a dataset of a block, that does not
	// exist. Errors wrapping it name the object (and the dataset).
	ErrNotFound = errors.New("blockmerge: not found")
	// ErrInvalidKey reports an object key or prefix that is not allowed
	// (see [ValidateKey]), or a range read outside the object: a negative
	// offset, a non-positive length, or an offset at or past the end.
	ErrInvalidKey = errors.New("blockmerge: invalid key or range")
	// ErrExists reports a conditional put ([ConditionalPutter]) of a key
	// that already names an object. Errors wrapping it name the object.
	ErrExists = errors.New("blockmerge: object exists")
)

// maxKeyLen is the maximum length in bytes of an object key (the limit of
// the common cloud object stores).
const maxKeyLen = 1024

// Store is an object store: a flat namespace of immutable objects named by
// '/'-separated keys (see [ValidateKey]).
//
// Implementations must be safe for concurrent use. Every method takes a
// context; long transfers check it at least at their start and before they
// publish anything. Errors name the object and wrap [ErrNotFound] for an
// absent object and [ErrInvalidKey] for a refused key.
type Store interface {
	// Get returns a reader of the whole object. The caller closes it.
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	// GetRange returns a reader of length bytes starting at offset off,
	// clamped to the end of the object. off must be in [0, size) and length
	// positive, or the error wraps ErrInvalidKey (or ErrNotFound).
	GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error)
	// Size returns the size of the object in bytes.
	Size(ctx context.Context, key string) (int64, error)
	// Exists reports whether the object exists.
	Exists(ctx context.Context, key string) (bool, error)
	// Put stores the bytes read from r under key, replacing any previous
	// object. It is atomic: a reader sees the previous object or the whole
	// new one, never a part; if r fails or ctx is cancelled, no new object
	// becomes visible.
	Put(ctx context.Context, key string, r io.Reader) error
	// Delete removes the object. Deleting an absent object is not an error.
	Delete(ctx context.Context, key string) error
	// List calls fn with the key of every object whose key starts with
	// prefix (recursively, not only one "directory" level), in lexical byte
	// order of the keys. An error from fn stops the listing and is
	// returned. The empty prefix lists everything.
	List(ctx context.Context, prefix string, fn func(key string) error) error
	// DeleteByPrefix removes every object whose key starts with prefix,
	// which must not be empty. Deleting nothing is not an error.
	DeleteByPrefix(ctx context.Context, prefix string) error
}

// ObjectWriter writes one new object in a stream. Nothing is visible until
// Commit returns successfully; Abort (or a failed Commit) discards
// everything written.
//
// The context given when the writer was created governs the whole write:
// once it is cancelled, Write and Commit fail.
type ObjectWriter interface {
	io.Writer
	// Commit publishes the object atomically, replacing any previous
	// object with the same key. The writer cannot be used afterwards.
	Commit() error
	// Abort discards the object. It is safe to call after Commit (it does
	// nothing then) and more than once.
	Abort() error
}

// creator is implemented by this package's stores that write an object in
// a stream without staging it elsewhere first; [CreateObject] uses it.
type creator interface {
	// create starts writing the object key; see [ObjectWriter].
	create(ctx context.Context, key string) (ObjectWriter, error)
}

// ConditionalPutter is implemented by stores that can put an object only if
// no object has its key, atomically: of two concurrent conditional puts of
// one key, exactly one succeeds. [NewMemStore]'s store and [FileStore] implement it;
// the conformance suite (blockmerge/storetest) checks it on every store
// that does. An ordered log on an object store can be built on it, each
// entry a create-if-absent of the next key.
type ConditionalPutter interface {
	// PutIfAbsent stores the bytes read from r under key only if no object
	// has that key. If one does, it returns an error wrapping [ErrExists]
	// and changes nothing. Like Put it is atomic: if r fails or ctx is
	// cancelled, no object becomes visible.
	PutIfAbsent(ctx context.Context, key string, r io.Reader) error
}

// Timestamper is implemented by stores that record when each object was
// written by their own clock (S3's Last-Modified, a file's modification
// time). A log on the store can take its entries' time from that one clock
// rather than from each writer's; see package bucketlog.
type Timestamper interface {
	// ModTime returns when the object was written, by the store's clock.
	// Every reader gets the same time for one object, as long as it is not
	// rewritten (its precision is the store's: whole seconds on S3).
	// A missing object is an error wrapping [ErrNotFound].
	ModTime(ctx context.Context, key string) (time.Time, error)
}

// CreateObject returns a writer for a new object of s. The stores of
// [NewMemStore] and [NewFileStore] stream the object themselves; for any
// other store the bytes are staged in a
// temporary file in tempDir (the system's default when empty) and handed to
// s.Put on Commit, so the object's size is known to stores that need it
// (S3's single-request upload, for instance) and memory use stays bounded.
func CreateObject(ctx context.Context, s Store, key, tempDir string) (ObjectWriter, error) {
	if f, ok := s.(*fencedStore); ok {
		return f.create(ctx, key, tempDir)
	}
	if c, ok := s.(creator); ok {
		return c.create(ctx, key)
	}
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("blockmerge: create %q: %w", key, err)
	}
	f, err := os.CreateTemp(tempDir, "blockmerge-*.tmp")
	if err != nil {
		return nil, fmt.Errorf("blockmerge: create %q: staging file: %w", key, err)
	}
	return &stagedWriter{writerBase: writerBase{ctx: ctx, key: key, dst: f}, s: s, f: f}, nil
}

// stagedWriter stages an object in a temporary file and puts it on Commit.
type stagedWriter struct {
	writerBase
	s Store
	f *os.File
}

func (w *stagedWriter) Commit() error {
	if w.done {
		return fmt.Errorf("blockmerge: commit %q: %w", w.key, os.ErrClosed)
	}
	defer w.Abort() //nolint:errcheck // removal of the staging file only
	if _, err := w.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("blockmerge: commit %q: %w", w.key, err)
	}
	return w.s.Put(w.ctx, w.key, w.f)
}

func (w *stagedWriter) Abort() error {
	if w.done {
		return nil
	}
	w.done = true
	cerr := w.f.Close()
	rerr := os.Remove(w.f.Name())
	return errors.Join(cerr, rerr)
}

// copyCommit copies r to dst, the destination of w's bytes, and commits w;
// it aborts w if the copy fails. It is the Put of a store that writes
// through its own [ObjectWriter].
func copyCommit(key string, dst io.Writer, w ObjectWriter, r io.Reader) error {
	if _, err := io.Copy(dst, r); err != nil {
		w.Abort() //nolint:errcheck // the copy error is the one to report
		return fmt.Errorf("blockmerge: put %q: %w", key, err)
	}
	return w.Commit()
}

// writerBase is what the object writers of this package share: the
// context and key of the object, whether the writer is done (committed or
// aborted), and where Write puts the bytes.
type writerBase struct {
	ctx  context.Context
	key  string
	dst  io.Writer
	done bool
}

// Write writes p to dst unless the writer or its context is done.
func (w *writerBase) Write(p []byte) (int, error) {
	if err := w.err("write"); err != nil {
		return 0, err
	}
	return w.dst.Write(p)
}

// err returns the error of an operation (op) on the writer if it is done
// or its context is; nil if neither is.
func (w *writerBase) err(op string) error {
	if w.done {
		return fmt.Errorf("blockmerge: %s %q: %w", op, w.key, os.ErrClosed)
	}
	if err := w.ctx.Err(); err != nil {
		return fmt.Errorf("blockmerge: %s %q: %w", op, w.key, err)
	}
	return nil
}

// ValidateKey reports whether key is a valid object key: 1 to 1024
// bytes of valid UTF-8 without control characters or backslashes, made of
// '/'-separated segments none of which is empty, "." or "..". So a key is
// never absolute, never ends in '/', and can never escape the root of a
// filesystem store. Every key of the form compactkit.ObjectKey(id) with a
// valid block ID is a valid key. Errors wrap [ErrInvalidKey].
func ValidateKey(key string) error {
	if key == "" {
		return fmt.Errorf("%w: empty key", ErrInvalidKey)
	}
	if len(key) > maxKeyLen {
		return fmt.Errorf("%w: key of %d bytes, limit %d", ErrInvalidKey, len(key), maxKeyLen)
	}
	if !utf8.ValidString(key) || strings.ContainsFunc(key, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' }) {
		return fmt.Errorf("%w: %q: invalid characters", ErrInvalidKey, key)
	}
	for seg := range strings.SplitSeq(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("%w: %q: segment %q not allowed", ErrInvalidKey, key, seg)
		}
	}
	return nil
}

// validatePrefix reports whether prefix is a valid listing prefix: empty,
// or a string that is a valid key once a single trailing '/' is removed
// ("blocks/", "blocks/job-1/12/", "blocks/01H"). Errors wrap
// [ErrInvalidKey].
func validatePrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	if err := ValidateKey(strings.TrimSuffix(prefix, "/")); err != nil {
		return fmt.Errorf("prefix %q: %w", prefix, err)
	}
	return nil
}

// notFound returns the error of an absent object.
func notFound(op, key string) error {
	return fmt.Errorf("blockmerge: %s %q: %w", op, key, ErrNotFound)
}

// checkRange validates a range read of an object of the given size.
func checkRange(key string, off, length, size int64) error {
	if off < 0 || length <= 0 || off >= size {
		return fmt.Errorf("blockmerge: get range %q [%d, +%d) of %d bytes: %w", key, off, length, size, ErrInvalidKey)
	}
	return nil
}
