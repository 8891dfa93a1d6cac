package blockmerge

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/fencing"
)

// FencedStore wraps a [Store] for one compaction attempt: before every
// write (Put, Create and its Commit, Delete, DeleteByPrefix) it checks the
// attempt's token with a [fencing.Guard] for the job, and refuses the write
// with an error wrapping [fencing.ErrStaleToken] once a newer attempt of
// the same job has written through the same Guard. Reads pass through.
//
// One kind of write is never refused: deleting objects under the attempt's
// own prefix ([compactkit.AttemptPrefix] of the job and token), so that an
// attempt that turns out to be stale in the middle of a merge can still
// remove the outputs it had written. No other attempt ever writes there,
// and the state machine never commits a stale attempt's outputs, so these
// deletions cannot harm anyone.
//
// The Guard is in-process only: it stops a stale attempt from writing after
// a newer one started in the same process (a worker that lost its lease
// and got the job back, say), and nothing more. The real guarantee is the
// state machine's commit-time token check: a stale attempt's success
// report is refused, so its outputs never enter the index and its attempt
// prefix is tombstoned. Outputs are written under a prefix of their own
// attempt ([compactkit.AttemptPrefix]), so a stale attempt that slips past
// the Guard can never overwrite a newer attempt's objects either.
type FencedStore struct {
	inner   Store
	guard   *fencing.Guard
	job     string
	token   fencing.Token
	tempDir string
}

var (
	_ Store   = (*FencedStore)(nil)
	_ Creator = (*FencedStore)(nil)
)

// NewFencedStore returns s guarded by g for the attempt of job with the
// given token. The Guard's resource is the job name.
func NewFencedStore(s Store, g *fencing.Guard, job string, token fencing.Token) *FencedStore {
	return &FencedStore{inner: s, guard: g, job: job, token: token}
}

// ownPrefix returns the attempt's own prefix.
func (f *FencedStore) ownPrefix() string { return compactkit.AttemptPrefix(f.job, f.token) }

func (f *FencedStore) check(op, key string) error {
	if err := f.guard.Check(f.job, f.token); err != nil {
		return fmt.Errorf("blockmerge: %s %q: %w", op, key, err)
	}
	return nil
}

// Get implements [Store].
func (f *FencedStore) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	return f.inner.Get(ctx, key)
}

// GetRange implements [Store].
func (f *FencedStore) GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	return f.inner.GetRange(ctx, key, off, length)
}

// Size implements [Store].
func (f *FencedStore) Size(ctx context.Context, key string) (int64, error) {
	return f.inner.Size(ctx, key)
}

// Exists implements [Store].
func (f *FencedStore) Exists(ctx context.Context, key string) (bool, error) {
	return f.inner.Exists(ctx, key)
}

// List implements [Store].
func (f *FencedStore) List(ctx context.Context, prefix string, fn func(key string) error) error {
	return f.inner.List(ctx, prefix, fn)
}

// Put implements [Store], after checking the token.
func (f *FencedStore) Put(ctx context.Context, key string, r io.Reader) error {
	if err := f.check("put", key); err != nil {
		return err
	}
	return f.inner.Put(ctx, key, r)
}

// Create implements [Creator]: the token is checked when the write starts
// and again just before it is committed.
func (f *FencedStore) Create(ctx context.Context, key string) (ObjectWriter, error) {
	if err := f.check("create", key); err != nil {
		return nil, err
	}
	w, err := CreateObject(ctx, f.inner, key, f.tempDir)
	if err != nil {
		return nil, err
	}
	return &fencedWriter{ObjectWriter: w, f: f, key: key}, nil
}

type fencedWriter struct {
	ObjectWriter
	f   *FencedStore
	key string
}

func (w *fencedWriter) Commit() error {
	if err := w.f.check("commit", w.key); err != nil {
		w.ObjectWriter.Abort() //nolint:errcheck // the fencing error is the one to report
		return err
	}
	return w.ObjectWriter.Commit()
}

// Delete implements [Store], after checking the token (unless key lies
// under the attempt's own prefix).
func (f *FencedStore) Delete(ctx context.Context, key string) error {
	if !strings.HasPrefix(key, f.ownPrefix()) {
		if err := f.check("delete", key); err != nil {
			return err
		}
	}
	return f.inner.Delete(ctx, key)
}

// DeleteByPrefix implements [Store], after checking the token (unless
// prefix lies under the attempt's own prefix).
func (f *FencedStore) DeleteByPrefix(ctx context.Context, prefix string) error {
	if !strings.HasPrefix(prefix, f.ownPrefix()) {
		if err := f.check("delete prefix", prefix); err != nil {
			return err
		}
	}
	return f.inner.DeleteByPrefix(ctx, prefix)
}
