package blockmerge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
)

// memStore is the in-memory store of [NewMemStore].
type memStore struct {
	mu      sync.RWMutex
	objects map[string][]byte
	mods    map[string]time.Time // when each object was written, by clock
	clock   func() time.Time
}

var (
	_ creator           = (*memStore)(nil)
	_ ConditionalPutter = (*memStore)(nil)
	_ Timestamper       = (*memStore)(nil)
)

// NewMemStore returns an empty in-memory [Store] for tests and examples.
// Objects are immutable byte slices, so readers never block writers. The
// store is safe for concurrent use, streams writes (see [CreateObject]),
// and implements [ConditionalPutter] and [Timestamper]: its modification
// times come from the clock of [WithMemClock] (default time.Now), the only
// option that applies.
func NewMemStore(opts ...Option) Store {
	o := buildOptions(opts)
	return &memStore{objects: make(map[string][]byte), mods: make(map[string]time.Time), clock: o.clock}
}

// ModTime implements [Timestamper]: the time of the store's clock when the
// object was committed.
func (m *memStore) ModTime(ctx context.Context, key string) (time.Time, error) {
	if _, err := m.lookup(ctx, "mod time", key); err != nil {
		return time.Time{}, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.mods[key], nil
}

func (m *memStore) lookup(ctx context.Context, op, key string) ([]byte, error) {
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("blockmerge: %s %q: %w", op, key, err)
	}
	m.mu.RLock()
	b, ok := m.objects[key]
	m.mu.RUnlock()
	if !ok {
		return nil, notFound(op, key)
	}
	return b, nil
}

// Get implements [Store].
func (m *memStore) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	b, err := m.lookup(ctx, "get", key)
	if err != nil {
		return nil, err
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

// GetRange implements [Store].
func (m *memStore) GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	b, err := m.lookup(ctx, "get range", key)
	if err != nil {
		return nil, err
	}
	if err := checkRange(key, off, length, int64(len(b))); err != nil {
		return nil, err
	}
	end := int64(len(b))
	if length < end-off {
		end = off + length
	}
	return io.NopCloser(bytes.NewReader(b[off:end])), nil
}

// Size implements [Store].
func (m *memStore) Size(ctx context.Context, key string) (int64, error) {
	b, err := m.lookup(ctx, "size", key)
	if err != nil {
		return 0, err
	}
	return int64(len(b)), nil
}

// Exists implements [Store].
func (m *memStore) Exists(ctx context.Context, key string) (bool, error) {
	_, err := m.lookup(ctx, "exists", key)
	return existence(err)
}

// Put implements [Store]. The object is read whole into memory before it
// replaces the previous one.
func (m *memStore) Put(ctx context.Context, key string, r io.Reader) error {
	return m.put(ctx, key, r, false)
}

// PutIfAbsent implements [ConditionalPutter]: the check and the insertion
// happen under the store's lock.
func (m *memStore) PutIfAbsent(ctx context.Context, key string, r io.Reader) error {
	return m.put(ctx, key, r, true)
}

func (m *memStore) put(ctx context.Context, key string, r io.Reader, exclusive bool) error {
	w, err := m.newWriter(ctx, key, exclusive)
	if err != nil {
		return err
	}
	return copyCommit(key, w, w, r)
}

// create implements [creator].
func (m *memStore) create(ctx context.Context, key string) (ObjectWriter, error) {
	return m.newWriter(ctx, key, false)
}

func (m *memStore) newWriter(ctx context.Context, key string, exclusive bool) (*memWriter, error) {
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("blockmerge: create %q: %w", key, err)
	}
	w := &memWriter{writerBase: writerBase{ctx: ctx, key: key}, m: m, exclusive: exclusive}
	w.dst = &w.buf
	return w, nil
}

type memWriter struct {
	writerBase // dst is buf
	m          *memStore
	buf        bytes.Buffer
	// exclusive makes Commit fail with ErrExists if the key exists.
	exclusive bool
}

func (w *memWriter) Commit() error {
	err := w.err("commit")
	w.done = true
	if err != nil {
		return err
	}
	// The buffer is never written again, so the store may keep its bytes;
	// clip them so that no spare capacity is shared.
	b := slices.Clip(w.buf.Bytes())
	if b == nil {
		b = []byte{}
	}
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	if _, ok := w.m.objects[w.key]; ok && w.exclusive {
		return fmt.Errorf("blockmerge: put %q: %w", w.key, ErrExists)
	}
	w.m.objects[w.key] = b
	w.m.mods[w.key] = w.m.clock()
	return nil
}

func (w *memWriter) Abort() error {
	w.done = true
	w.buf = bytes.Buffer{}
	return nil
}

// Delete implements [Store].
func (m *memStore) Delete(ctx context.Context, key string) error {
	return m.remove(ctx, "delete", key, ValidateKey(key), func() { m.drop(key) })
}

// remove runs del under the lock if arg, the key or prefix of op, is
// valid (invalid is its validation's error) and ctx is not done.
func (m *memStore) remove(ctx context.Context, op, arg string, invalid error, del func()) error {
	if invalid != nil {
		return invalid
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("blockmerge: %s %q: %w", op, arg, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	del()
	return nil
}

// drop deletes the object of key. Call it with the lock held.
func (m *memStore) drop(key string) {
	delete(m.objects, key)
	delete(m.mods, key)
}

// keys returns the sorted keys starting with prefix.
func (m *memStore) keys(prefix string) []string {
	m.mu.RLock()
	var ks []string
	for k := range m.objects {
		if strings.HasPrefix(k, prefix) {
			ks = append(ks, k)
		}
	}
	m.mu.RUnlock()
	slices.Sort(ks)
	return ks
}

// List implements [Store]. It lists a snapshot of the keys taken when it
// starts; fn may use the store.
func (m *memStore) List(ctx context.Context, prefix string, fn func(key string) error) error {
	if err := validatePrefix(prefix); err != nil {
		return err
	}
	for _, k := range m.keys(prefix) {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("blockmerge: list %q: %w", prefix, err)
		}
		if err := fn(k); err != nil {
			return err
		}
	}
	return nil
}

// DeleteByPrefix implements [Store].
func (m *memStore) DeleteByPrefix(ctx context.Context, prefix string) error {
	return m.remove(ctx, "delete prefix", prefix, validateDeletePrefix(prefix), func() {
		for k := range m.objects {
			if strings.HasPrefix(k, prefix) {
				m.drop(k)
			}
		}
	})
}

// validateDeletePrefix checks the prefix of DeleteByPrefix: a valid,
// non-empty prefix.
func validateDeletePrefix(prefix string) error {
	if prefix == "" {
		return fmt.Errorf("%w: empty prefix: refusing to delete everything", ErrInvalidKey)
	}
	return validatePrefix(prefix)
}

func isNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// existence turns the error of looking an object up into the answer of
// Exists: found, absent, or the error.
func existence(err error) (bool, error) {
	switch {
	case err == nil:
		return true, nil
	case isNotFound(err):
		return false, nil
	default:
		return false, err
	}
}
