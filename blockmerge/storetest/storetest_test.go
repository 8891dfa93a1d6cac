package storetest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/blockmerge/storetest"
)

// memStore is the memory store of blockmerge with its optional interfaces.
type memStore interface {
	blockmerge.Store
	blockmerge.ConditionalPutter
	blockmerge.Timestamper
}

// flawed is the memory store with one flaw, named after the property of
// the suite it breaks.
type flawed struct {
	memStore
	flaw     string
	inFlight atomic.Int32
}

func (s *flawed) Exists(ctx context.Context, key string) (bool, error) {
	switch s.flaw {
	case "PutGet": // a key prefix exists
		found := false
		_ = s.memStore.List(ctx, key+"/", func(string) error { found = true; return nil })
		if found {
			return true, nil
		}
	case "InvalidKeys": // no key validation
		if blockmerge.ValidateKey(key) != nil {
			return false, nil
		}
	}
	return s.memStore.Exists(ctx, key)
}

func (s *flawed) Put(ctx context.Context, key string, r io.Reader) error {
	switch s.flaw {
	case "Overwrite": // keeps the first version
		if ok, _ := s.memStore.Exists(ctx, key); ok {
			return nil
		}
	case "EmptyObject": // stores nothing of an empty object
		data, err := io.ReadAll(r)
		if err != nil || len(data) == 0 {
			return err
		}
		r = bytes.NewReader(data)
	case "FailedPut": // keeps what it read before the reader failed
		data, err := io.ReadAll(r)
		if err != nil {
			_ = s.memStore.Put(ctx, key, bytes.NewReader(data))
			return err
		}
		r = bytes.NewReader(data)
	case "UnknownSizeReaders": // keeps the first MiB of a reader of unknown size
		if _, ok := r.(interface{ Len() int }); !ok {
			data, err := io.ReadAll(io.LimitReader(r, 1<<20))
			if err != nil {
				return err
			}
			r = bytes.NewReader(data)
		}
	case "CreateObject": // stores what one read of a staged file returns
		if f, ok := r.(*os.File); ok {
			buf := make([]byte, 32<<10)
			n, err := f.Read(buf)
			if err != nil {
				return err
			}
			r = bytes.NewReader(buf[:n])
		}
	case "CancelledLargePut": // ignores its context
		ctx = context.Background()
	case "Concurrent": // drops a put that overlaps another
		defer s.inFlight.Add(-1)
		if s.inFlight.Add(1) > 1 {
			return nil
		}
		time.Sleep(time.Millisecond)
	}
	return s.memStore.Put(ctx, key, r)
}

func (s *flawed) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	switch s.flaw {
	case "NotFound": // does not name the missing object
		rc, err := s.memStore.Get(ctx, key)
		if errors.Is(err, blockmerge.ErrNotFound) {
			return nil, fmt.Errorf("no such object: %w", blockmerge.ErrNotFound)
		}
		return rc, err
	case "CancelledContext": // ignores its context
		ctx = context.Background()
	}
	return s.memStore.Get(ctx, key)
}

func (s *flawed) GetRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	switch s.flaw {
	case "LargeObject": // reads a range past the first MiB from the start
		if off >= 1<<20 {
			off = 0
		}
	case "GetRange": // refuses a range past the end instead of clamping it
		if size, err := s.memStore.Size(ctx, key); err == nil && off+n > size && off+n > off {
			return nil, fmt.Errorf("range past the end: %w", blockmerge.ErrInvalidKey)
		}
	}
	return s.memStore.GetRange(ctx, key, off, n)
}

func (s *flawed) Delete(ctx context.Context, key string) error {
	if s.flaw == "Delete" { // deleting an absent object is an error
		if ok, err := s.memStore.Exists(ctx, key); err == nil && !ok {
			return fmt.Errorf("delete %s: %w", key, blockmerge.ErrNotFound)
		}
	}
	return s.memStore.Delete(ctx, key)
}

func (s *flawed) List(ctx context.Context, prefix string, fn func(string) error) error {
	switch s.flaw {
	case "List": // lists in reverse order
		var keys []string
		if err := s.memStore.List(ctx, prefix, func(k string) error { keys = append(keys, k); return nil }); err != nil {
			return err
		}
		slices.Reverse(keys)
		for _, k := range keys {
			if err := fn(k); err != nil {
				return err
			}
		}
		return nil
	case "ListCallbackError": // goes on after the callback's error
		return s.memStore.List(ctx, prefix, func(k string) error { _ = fn(k); return nil })
	}
	return s.memStore.List(ctx, prefix, fn)
}

func (s *flawed) DeleteByPrefix(ctx context.Context, prefix string) error {
	if s.flaw == "DeleteByPrefix" && len(prefix) > 1 { // drops the prefix's trailing slash
		prefix = strings.TrimSuffix(prefix, "/")
		var keys []string
		if err := s.memStore.List(ctx, prefix, func(k string) error { keys = append(keys, k); return nil }); err != nil {
			return err
		}
		for _, k := range keys {
			if err := s.memStore.Delete(ctx, k); err != nil {
				return err
			}
		}
		return nil
	}
	return s.memStore.DeleteByPrefix(ctx, prefix)
}

func (s *flawed) PutIfAbsent(ctx context.Context, key string, r io.Reader) error {
	if s.flaw == "PutIfAbsent" { // overwrites
		return s.memStore.Put(ctx, key, r)
	}
	return s.memStore.PutIfAbsent(ctx, key, r)
}

func (s *flawed) ModTime(ctx context.Context, key string) (time.Time, error) {
	if s.flaw == "ModTime" { // the time of the read, not of the write
		if _, err := s.memStore.Size(ctx, key); err != nil {
			return time.Time{}, err
		}
		return time.Now(), nil
	}
	return s.memStore.ModTime(ctx, key)
}

// flawEnv names the flaw of the store a child process runs the suite on.
const flawEnv = "STORETEST_FLAW"

// Every property of the suite fails on the memory store with the flaw
// named after it. Each flawed store runs in a child process (the suite
// fails its *testing.T), on the property's subtest only.
func TestFlawsCaught(t *testing.T) {
	if fl := os.Getenv(flawEnv); fl != "" {
		storetest.Run(t, func(t *testing.T) blockmerge.Store {
			return &flawed{memStore: blockmerge.NewMemStore().(memStore), flaw: fl}
		})
		return
	}
	for _, prop := range []string{
		"PutGet", "Overwrite", "EmptyObject", "LargeObject", "NotFound", "GetRange", "Delete", "List",
		"ListCallbackError", "DeleteByPrefix", "InvalidKeys", "FailedPut", "UnknownSizeReaders",
		"CancelledLargePut", "CancelledContext", "CreateObject", "Concurrent", "PutIfAbsent", "ModTime",
	} {
		t.Run(prop, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestFlawsCaught$/^"+prop+"$", "-test.v")
			cmd.Env = append(os.Environ(), flawEnv+"="+prop)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("the suite passed the store with the flaw %s (%v):\n%s", prop, err, out)
			}
			if !bytes.Contains(out, []byte("--- FAIL: TestFlawsCaught/"+prop+" ")) {
				t.Fatalf("the suite did not fail %s:\n%s", prop, out)
			}
		})
	}
}
