package runnertest

import (
	"context"
	"io"
	"sync"
	"time"

	"github.com/compactkit/compactkit/blockmerge"
)

// watched is a store that calls first on the first call to it and
// records every write that begins after returned was called.
type watched struct {
	blockmerge.Store
	first func()

	once      sync.Once
	cancelled chan struct{}

	mu    sync.Mutex
	at    time.Time // when first was called
	after bool      // Run returned
	late  string    // the first write begun after that
}

func (w *watched) touch() {
	w.once.Do(func() {
		w.mu.Lock()
		w.at = time.Now()
		w.mu.Unlock()
		if w.first != nil {
			w.first()
		}
		if w.cancelled != nil {
			close(w.cancelled)
		}
	})
}

func (w *watched) cancelledAt() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.first == nil {
		return time.Time{}
	}
	return w.at
}

func (w *watched) write(what string) {
	w.touch()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.after && w.late == "" {
		w.late = what
	}
}

func (w *watched) returned() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.after = true
}

func (w *watched) lateWrite() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.late
}

func (w *watched) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	w.touch()
	return w.Store.Get(ctx, key)
}

func (w *watched) GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	w.touch()
	return w.Store.GetRange(ctx, key, off, length)
}

func (w *watched) Size(ctx context.Context, key string) (int64, error) {
	w.touch()
	return w.Store.Size(ctx, key)
}

func (w *watched) Exists(ctx context.Context, key string) (bool, error) {
	w.touch()
	return w.Store.Exists(ctx, key)
}

func (w *watched) List(ctx context.Context, prefix string, fn func(string) error) error {
	w.touch()
	return w.Store.List(ctx, prefix, fn)
}

func (w *watched) Put(ctx context.Context, key string, r io.Reader) error {
	w.write("Put " + key)
	return w.Store.Put(ctx, key, r)
}

func (w *watched) Delete(ctx context.Context, key string) error {
	w.write("Delete " + key)
	return w.Store.Delete(ctx, key)
}

func (w *watched) DeleteByPrefix(ctx context.Context, prefix string) error {
	w.write("DeleteByPrefix " + prefix)
	return w.Store.DeleteByPrefix(ctx, prefix)
}
