package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	thanos "github.com/thanos-io/objstore"

	"github.com/compactkit/compactkit/blockmerge"
)

// Store is a [blockmerge.Store] over a thanos-io/objstore bucket. It is
// safe for concurrent use when the bucket is, as the providers' buckets
// are.
type Store struct {
	b thanos.Bucket
}

var _ blockmerge.Store = (*Store)(nil)

// New returns a store over the bucket b. The store does not close b.
func New(b thanos.Bucket) *Store { return &Store{b: b} }

// Bucket returns the underlying bucket.
func (s *Store) Bucket() thanos.Bucket { return s.b }

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
		return nil, fmt.Errorf("objstore: get range %q [%d, +%d): %w", key, off, length, blockmerge.ErrInvalidRange)
	}
	rc, err := s.b.GetRange(ctx, key, off, length)
	if err != nil {
		if s.b.IsObjNotFoundErr(err) {
			return nil, s.wrap("get range", key, err)
		}
		// Providers answer a range past the end differently (S3: 416):
		// ask for the size to tell that case apart.
		if attrs, aerr := s.b.Attributes(ctx, key); aerr == nil && off >= attrs.Size {
			return nil, fmt.Errorf("objstore: get range %q [%d, +%d) of %d bytes: %w", key, off, length, attrs.Size, blockmerge.ErrInvalidRange)
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
			return nil, fmt.Errorf("objstore: get range %q [%d, +%d): %w", key, off, length, blockmerge.ErrInvalidRange)
		}
		return nil, s.wrap("get range", key, err)
	}
	return &peekedReader{Reader: io.MultiReader(bytes.NewReader(first[:]), rc), c: rc}, nil
}

type peekedReader struct {
	io.Reader
	c io.Closer
}

func (r *peekedReader) Close() error { return r.c.Close() }

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

// Put implements [blockmerge.Store] with the bucket's Upload. Pass an
// *os.File (or another reader whose size objstore can tell) to let the
// provider upload without buffering.
func (s *Store) Put(ctx context.Context, key string, r io.Reader) error {
	if err := s.prepare(ctx, "put", key); err != nil {
		return err
	}
	if err := s.b.Upload(ctx, key, r); err != nil {
		return s.wrap("put", key, err)
	}
	return nil
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
	if err := blockmerge.ValidatePrefix(prefix); err != nil {
		return nil, err
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
