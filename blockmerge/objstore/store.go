package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	thanos "github.com/thanos-io/objstore"

	"github.com/compactkit/compactkit/blockmerge"
)

// Store is a [blockmerge.Store] over a thanos-io/objstore bucket. It is
// safe for concurrent use when the bucket is, as the providers' buckets
// are.
type Store struct {
	b     thanos.Bucket
	grace time.Duration
}

// defaultAbortGrace is how long an upload whose context was cancelled may
// take to clean up after itself (abort a multipart upload), by default.
const defaultAbortGrace = 30 * time.Second

// Option configures a [Store].
type Option func(*Store)

// WithAbortGrace sets how long an upload whose context was cancelled may
// take to abort what it started (default 30 s).
func WithAbortGrace(d time.Duration) Option {
	return func(s *Store) {
		if d > 0 {
			s.grace = d
		}
	}
}

var (
	_ blockmerge.Store       = (*Store)(nil)
	_ blockmerge.Timestamper = (*Store)(nil)
)

// New returns a store over the bucket b. The store does not close b.
func New(b thanos.Bucket, opts ...Option) *Store {
	s := &Store{b: b, grace: defaultAbortGrace}
	for _, o := range opts {
		o(s)
	}
	return s
}

func (s *Store) prepare(ctx context.Context, op, key string) error {
	if err := blockmerge.ValidateKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("objstore: %s %q: %w", op, key, err)
	}
	return nil
}

// wrap turns a bucket error into a store error naming the object.
func (s *Store) wrap(op, key string, err error) error {
	if s.b.IsObjNotFoundErr(err) {
		return fmt.Errorf("objstore: %s %q: %w (%v)", op, key, blockmerge.ErrNotFound, err)
	}
	return fmt.Errorf("objstore: %s %q: %w", op, key, err)
}

// Get implements [blockmerge.Store].
func (s *Store) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := s.prepare(ctx, "get", key); err != nil {
		return nil, err
	}
	rc, err := s.b.Get(ctx, key)
	if errors.Is(err, io.EOF) {
		// objstore's S3 provider reads the first byte up front and
		// reports io.EOF for an empty object, which exists.
		return io.NopCloser(bytes.NewReader(nil)), nil
	}
	if err != nil {
		return nil, s.wrap("get", key, err)
	}
	return rc, nil
}

// GetRange implements [blockmerge.Store].
func (s *Store) GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	if err := s.prepare(ctx, "get range", key); err != nil {
		return nil, err
	}
	if off < 0 || length <= 0 {
		return nil, fmt.Errorf("objstore: get range %q [%d, +%d): %w", key, off, length, blockmerge.ErrInvalidKey)
	}
	// The contract clamps the range to the end of the object: a length
	// reaching past the largest offset is that clamp, not an overflow.
	length = min(length, math.MaxInt64-off)
	rc, err := s.b.GetRange(ctx, key, off, length)
	if err != nil {
		if s.b.IsObjNotFoundErr(err) {
			return nil, s.wrap("get range", key, err)
		}
		// Providers answer a range past the end differently (S3: 416):
		// ask for the size to tell that case apart.
		if attrs, aerr := s.b.Attributes(ctx, key); aerr == nil && off >= attrs.Size {
			return nil, fmt.Errorf("objstore: get range %q [%d, +%d) of %d bytes: %w", key, off, length, attrs.Size, blockmerge.ErrInvalidKey)
		}
		return nil, s.wrap("get range", key, err)
	}
	// Some providers answer a range past the end with no bytes: peek at
	// the first byte to tell that case apart.
	var first [1]byte
	n, err := io.ReadFull(rc, first[:])
	if n == 0 {
		rc.Close()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("objstore: get range %q [%d, +%d): %w", key, off, length, blockmerge.ErrInvalidKey)
		}
		return nil, s.wrap("get range", key, err)
	}
	size := int64(-1) // unknown: the provider's reader may say
	if n, err := thanos.TryToGetSize(rc); err == nil {
		size = n
	}
	return &sizedReader{Reader: io.MultiReader(bytes.NewReader(first[:]), rc), c: rc, size: size}, nil
}

// sizedReader is a reader the store returns: it closes c, and tells its
// size (when known) to whoever copies it into another store.
type sizedReader struct {
	io.Reader
	c    io.Closer
	size int64 // -1: unknown
}

func (r *sizedReader) Close() error { return r.c.Close() }

// ObjectSize implements thanos-io/objstore's ObjectSizer.
func (r *sizedReader) ObjectSize() (int64, error) {
	if r.size < 0 {
		return 0, errors.New("objstore: size unknown")
	}
	return r.size, nil
}

// Size implements [blockmerge.Store].
func (s *Store) Size(ctx context.Context, key string) (int64, error) {
	if err := s.prepare(ctx, "size", key); err != nil {
		return 0, err
	}
	attrs, err := s.b.Attributes(ctx, key)
	if err != nil {
		return 0, s.wrap("size", key, err)
	}
	return attrs.Size, nil
}

// ModTime implements [blockmerge.Timestamper] with the bucket's
// attributes (a HEAD request on S3): the provider's Last-Modified time, in
// whole seconds on S3.
func (s *Store) ModTime(ctx context.Context, key string) (time.Time, error) {
	if err := s.prepare(ctx, "mod time", key); err != nil {
		return time.Time{}, err
	}
	attrs, err := s.b.Attributes(ctx, key)
	if err != nil {
		return time.Time{}, s.wrap("mod time", key, err)
	}
	return attrs.LastModified, nil
}

// Exists implements [blockmerge.Store].
func (s *Store) Exists(ctx context.Context, key string) (bool, error) {
	if err := s.prepare(ctx, "exists", key); err != nil {
		return false, err
	}
	ok, err := s.b.Exists(ctx, key)
	if err != nil {
		return false, s.wrap("exists", key, err)
	}
	return ok, nil
}

// Put implements [blockmerge.Store] with the bucket's Upload. A reader
// whose size objstore cannot tell (not an *os.File, bytes or strings
// reader, nor an ObjectSizer such as this store's own readers) is first
// staged in a temporary file: providers size parts for the largest object
// they allow when the size is unknown. A put whose context ends fails
// through its reader while the upload keeps a live context, for at most
// the abort grace, so the provider can abort what it started.
func (s *Store) Put(ctx context.Context, key string, r io.Reader) error {
	if err := s.prepare(ctx, "put", key); err != nil {
		return err
	}
	size, err := thanos.TryToGetSize(r)
	if err != nil {
		// Providers size a reader of unknown length for the largest
		// object they allow (S3: parts of 528 MiB): stage it first.
		f, err := s.stage(ctx, key, r)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close(); _ = os.Remove(f.Name()) }()
		r = f
		if size, err = thanos.TryToGetSize(f); err != nil {
			return s.wrap("put", key, err)
		}
	}
	// Upload under a context that outlives the caller's by the abort
	// grace: a cancelled put fails through its reader, and the provider
	// still has a live context to abort what it started (a multipart
	// upload whose parts would otherwise stay, invisible to List).
	uctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(s.grace, cancel) })
	defer stop()
	if err := s.b.Upload(uctx, key, &cancelReader{ctx: ctx, r: r, size: size}); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return fmt.Errorf("objstore: put %q: %w", key, cerr)
		}
		return s.wrap("put", key, err)
	}
	return nil
}

// stage copies r into a temporary file, rewound.
func (s *Store) stage(ctx context.Context, key string, r io.Reader) (*os.File, error) {
	f, err := os.CreateTemp("", "objstore-put-*")
	if err != nil {
		return nil, fmt.Errorf("objstore: put %q: staging: %w", key, err)
	}
	_, err = io.Copy(f, &cancelReader{ctx: ctx, r: r, size: -1})
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		_ = f.Close()
		_ = os.Remove(f.Name())
		return nil, fmt.Errorf("objstore: put %q: staging: %w", key, err)
	}
	return f, nil
}

// cancelReader fails once ctx ends, and tells its size.
type cancelReader struct {
	ctx  context.Context
	r    io.Reader
	size int64
}

func (c *cancelReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// ObjectSize implements thanos-io/objstore's ObjectSizer.
func (c *cancelReader) ObjectSize() (int64, error) {
	if c.size < 0 {
		return 0, errors.New("objstore: size unknown")
	}
	return c.size, nil
}

// Delete implements [blockmerge.Store].
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := s.prepare(ctx, "delete", key); err != nil {
		return err
	}
	if err := s.b.Delete(ctx, key); err != nil && !s.b.IsObjNotFoundErr(err) {
		return s.wrap("delete", key, err)
	}
	return nil
}

// keys returns the sorted keys under prefix.
func (s *Store) keys(ctx context.Context, prefix string) ([]string, error) {
	if prefix != "" { // else a key, with at most one trailing '/'
		if err := blockmerge.ValidateKey(strings.TrimSuffix(prefix, "/")); err != nil {
			return nil, fmt.Errorf("objstore: prefix %q: %w", prefix, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("objstore: list %q: %w", prefix, err)
	}
	// Providers list "directories": list the one holding the prefix,
	// recursively, and filter.
	dir := prefix[:strings.LastIndexByte(prefix, '/')+1]
	var keys []string
	err := s.b.Iter(ctx, dir, func(name string) error {
		if strings.HasPrefix(name, prefix) && blockmerge.ValidateKey(name) == nil {
			keys = append(keys, name)
		}
		return nil
	}, thanos.WithRecursiveIter())
	if err != nil {
		return nil, fmt.Errorf("objstore: list %q: %w", prefix, err)
	}
	slices.Sort(keys)
	return slices.Compact(keys), nil
}

// List implements [blockmerge.Store].
func (s *Store) List(ctx context.Context, prefix string, fn func(key string) error) error {
	keys, err := s.keys(ctx, prefix)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := fn(k); err != nil {
			return err
		}
	}
	return nil
}

// DeleteByPrefix implements [blockmerge.Store].
func (s *Store) DeleteByPrefix(ctx context.Context, prefix string) error {
	if prefix == "" {
		return fmt.Errorf("%w: empty prefix: refusing to delete everything", blockmerge.ErrInvalidKey)
	}
	keys, err := s.keys(ctx, prefix)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := s.Delete(ctx, k); err != nil {
			return err
		}
	}
	return nil
}
