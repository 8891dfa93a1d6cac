package blockmerge

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/fencing"
)

// NewFencedStore returns s wrapped for one compaction attempt, of job with
// the given token: before every write (Put, [CreateObject] and its Commit,
// Delete, DeleteByPrefix) the returned store checks the token with g
// (resource: the job name), and refuses the write with an error wrapping
// [fencing.ErrStaleToken] once a newer attempt of the same job has written
// through the same Guard. Reads pass through. [CreateObject] streams the
// write if s streams, else stages it in a file.
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
func NewFencedStore(s Store, g *fencing.Guard, job string, token fencing.Token) Store {
	return &fencedStore{inner: s, guard: g, job: job, token: token}
}

// fencedStore is the store of [NewFencedStore].
type fencedStore struct {
	inner Store
	guard *fencing.Guard
	job   string
	token fencing.Token
}

var _ Store = (*fencedStore)(nil)

// ownPrefix returns the attempt's own prefix.
func (f *fencedStore) ownPrefix() string { return compactkit.AttemptPrefix(f.job, f.token) }

func (f *fencedStore) check(op, key string) error {
	if err := f.guard.Check(f.job, f.token); err != nil {
		return fmt.Errorf("blockmerge: %s %q: %w", op, key, err)
	}
	return nil
}

// Get implements [Store].
func (f *fencedStore) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	return f.inner.Get(ctx, key)
}

// GetRange implements [Store].
func (f *fencedStore) GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	return f.inner.GetRange(ctx, key, off, length)
}

// Size implements [Store].
func (f *fencedStore) Size(ctx context.Context, key string) (int64, error) {
	return f.inner.Size(ctx, key)
}

// Exists implements [Store].
func (f *fencedStore) Exists(ctx context.Context, key string) (bool, error) {
	return f.inner.Exists(ctx, key)
}

// List implements [Store].
func (f *fencedStore) List(ctx context.Context, prefix string, fn func(key string) error) error {
	return f.inner.List(ctx, prefix, fn)
}

// Put implements [Store], after checking the token.
func (f *fencedStore) Put(ctx context.Context, key string, r io.Reader) error {
	if err := f.check("put", key); err != nil {
		return err
	}
	return f.inner.Put(ctx, key, r)
}

// create starts writing the object key for [CreateObject], staging in
// tempDir when the inner store cannot stream a write: the token is checked
// when the write starts and again just before it is committed.
func (f *fencedStore) create(ctx context.Context, key, tempDir string) (ObjectWriter, error) {
	if err := f.check("create", key); err != nil {
		return nil, err
	}
	w, err := CreateObject(ctx, f.inner, key, tempDir)
	if err != nil {
		return nil, err
	}
	return &fencedWriter{ObjectWriter: w, f: f, key: key}, nil
}

type fencedWriter struct {
	ObjectWriter
	f   *fencedStore
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
func (f *fencedStore) Delete(ctx context.Context, key string) error {
	if !strings.HasPrefix(key, f.ownPrefix()) {
		if err := f.check("delete", key); err != nil {
			return err
		}
	}
	return f.inner.Delete(ctx, key)
}

// DeleteByPrefix implements [Store], after checking the token (unless
// prefix lies under the attempt's own prefix).
func (f *fencedStore) DeleteByPrefix(ctx context.Context, prefix string) error {
	if !strings.HasPrefix(prefix, f.ownPrefix()) {
		if err := f.check("delete prefix", prefix); err != nil {
			return err
		}
	}
	return f.inner.DeleteByPrefix(ctx, prefix)
}
