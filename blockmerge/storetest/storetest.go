package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/compactkit/compactkit/blockmerge"
)

// Run runs the conformance suite. newStore is called once per subtest and
// must return a new, empty store; it may register cleanups on t.
func Run(t *testing.T, newStore func(t *testing.T) blockmerge.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s blockmerge.Store)
	}{
		{"PutGet", testPutGet},
		{"Overwrite", testOverwrite},
		{"EmptyObject", testEmptyObject},
		{"LargeObject", testLargeObject},
		{"NotFound", testNotFound},
		{"GetRange", testGetRange},
		{"Delete", testDelete},
		{"List", testList},
		{"ListCallbackError", testListCallbackError},
		{"DeleteByPrefix", testDeleteByPrefix},
		{"InvalidKeys", testInvalidKeys},
		{"FailedPut", testFailedPut},
		{"UnknownSizeReaders", testUnknownSizeReaders},
		{"CancelledLargePut", testCancelledLargePut},
		{"CancelledContext", testCancelledContext},
		{"CreateObject", testCreateObject},
		{"Concurrent", testConcurrent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newStore(t)) })
	}
	// Optional interfaces: their cases run for the stores that have them.
	if _, ok := newStore(t).(blockmerge.ConditionalPutter); ok {
		t.Run("PutIfAbsent", func(t *testing.T) { testPutIfAbsent(t, newStore(t)) })
	}
	if _, ok := newStore(t).(blockmerge.Timestamper); ok {
		t.Run("ModTime", func(t *testing.T) { testModTime(t, newStore(t)) })
	}
}

// testModTime: an object's modification time is set, the same on every
// read, within a day of this machine's clock (the store's clock may be
// another machine's, with whole-second precision); a missing object is
// ErrNotFound.
func testModTime(t *testing.T, s blockmerge.Store) {
	ctx := t.Context()
	ts := s.(blockmerge.Timestamper)
	before := time.Now()
	put(t, s, "stamped/a", []byte("a"))
	first, err := ts.ModTime(ctx, "stamped/a")
	if err != nil {
		t.Fatalf("mod time: %v", err)
	}
	if d := first.Sub(before); first.IsZero() || d < -24*time.Hour || d > 24*time.Hour {
		t.Fatalf("mod time %v, written at about %v", first, before)
	}
	again, err := ts.ModTime(ctx, "stamped/a")
	if err != nil || !again.Equal(first) {
		t.Fatalf("mod time read again: %v, %v; first %v", again, err, first)
	}
	_, err = ts.ModTime(ctx, "stamped/missing")
	isErr(t, "mod time of a missing object", err, blockmerge.ErrNotFound)
}

// testPutIfAbsent: a conditional put publishes only a new key; of
// concurrent conditional puts of one key exactly one wins and the losers
// change nothing; a failed one leaves nothing.
func testPutIfAbsent(t *testing.T, s blockmerge.Store) {
	ctx := t.Context()
	c := s.(blockmerge.ConditionalPutter)
	if err := c.PutIfAbsent(ctx, "log/00000001", bytes.NewReader([]byte("first"))); err != nil {
		t.Fatalf("put if absent of a new key: %v", err)
	}
	err := c.PutIfAbsent(ctx, "log/00000001", bytes.NewReader([]byte("second")))
	isErr(t, "put if absent of an existing key", err, blockmerge.ErrExists)
	equalBytes(t, "the first object", get(t, s, "log/00000001"), []byte("first"))

	const n = 8
	errs := make(chan error, n)
	for i := range n {
		go func() {
			errs <- c.PutIfAbsent(ctx, "log/00000002", bytes.NewReader(pattern(1000+i, uint64(i))))
		}()
	}
	won := -1
	for range n {
		err := <-errs
		switch {
		case err == nil:
			if won >= 0 {
				t.Fatalf("two conditional puts of one key succeeded")
			}
			won = 0
		case !errors.Is(err, blockmerge.ErrExists):
			t.Fatalf("a losing conditional put: %v, want ErrExists", err)
		}
	}
	if won < 0 {
		t.Fatalf("no conditional put succeeded")
	}
	got := get(t, s, "log/00000002")
	ok := false
	for i := range n {
		ok = ok || bytes.Equal(got, pattern(1000+i, uint64(i)))
	}
	if !ok {
		t.Fatalf("the object is none of the puts' bytes (%d bytes)", len(got))
	}

	err = c.PutIfAbsent(ctx, "log/00000003", &failingReader{data: pattern(300<<10, 3), err: errors.New("reader failed")})
	if err == nil {
		t.Fatalf("a conditional put whose reader fails succeeded")
	}
	if exists(t, s, "log/00000003") {
		t.Fatalf("a failed conditional put left an object")
	}
	equalKeys(t, "keys after the conditional puts", list(t, s, "log/"), []string{"log/00000001", "log/00000002"})
}

// pattern returns n deterministic pseudo-random bytes.
func pattern(n int, seed uint64) []byte {
	b := make([]byte, n)
	x := seed*0x9E3779B97F4A7C15 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	return b
}

func put(t testing.TB, s blockmerge.Store, key string, data []byte) {
	t.Helper()
	if err := s.Put(context.Background(), key, bytes.NewReader(data)); err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
}

func get(t testing.TB, s blockmerge.Store, key string) []byte {
	t.Helper()
	rc, err := s.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("Get(%q): read: %v", key, err)
	}
	return b
}

func getRange(t testing.TB, s blockmerge.Store, key string, off, n int64) []byte {
	t.Helper()
	rc, err := s.GetRange(context.Background(), key, off, n)
	if err != nil {
		t.Fatalf("GetRange(%q, %d, %d): %v", key, off, n, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("GetRange(%q, %d, %d): read: %v", key, off, n, err)
	}
	return b
}

func exists(t testing.TB, s blockmerge.Store, key string) bool {
	t.Helper()
	ok, err := s.Exists(context.Background(), key)
	if err != nil {
		t.Fatalf("Exists(%q): %v", key, err)
	}
	return ok
}

func list(t testing.TB, s blockmerge.Store, prefix string) []string {
	t.Helper()
	keys := []string{}
	if err := s.List(context.Background(), prefix, func(k string) error {
		keys = append(keys, k)
		return nil
	}); err != nil {
		t.Fatalf("List(%q): %v", prefix, err)
	}
	return keys
}

func equalBytes(t testing.TB, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: got %d bytes %.32q, want %d bytes %.32q", what, len(got), got, len(want), want)
	}
}

func equalKeys(t testing.TB, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s: got %q, want %q", what, got, want)
	}
}

func isErr(t testing.TB, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want one wrapping %v", what, err, target)
	}
}

func testPutGet(t *testing.T, s blockmerge.Store) {
	ctx := context.Background()
	data := []byte("hello, block")
	put(t, s, "blocks/a/b/c", data)
	equalBytes(t, "Get", get(t, s, "blocks/a/b/c"), data)
	size, err := s.Size(ctx, "blocks/a/b/c")
	if err != nil || size != int64(len(data)) {
		t.Fatalf("Size = %d, %v; want %d", size, err, len(data))
	}
	if !exists(t, s, "blocks/a/b/c") {
		t.Fatal("Exists = false after Put")
	}
	// A "directory" of keys is not an object.
	if exists(t, s, "blocks/a/b") || exists(t, s, "blocks/a") {
		t.Fatal("Exists = true for a key prefix")
	}
	_, err = s.Get(ctx, "blocks/a/b")
	isErr(t, "Get of a key prefix", err, blockmerge.ErrNotFound)
}

func testOverwrite(t *testing.T, s blockmerge.Store) {
	put(t, s, "k", []byte("first version, longer"))
	put(t, s, "k", []byte("second"))
	equalBytes(t, "Get after overwrite", get(t, s, "k"), []byte("second"))
	size, err := s.Size(context.Background(), "k")
	if err != nil || size != 6 {
		t.Fatalf("Size = %d, %v; want 6", size, err)
	}
	equalKeys(t, "List", list(t, s, ""), []string{"k"})
}

func testEmptyObject(t *testing.T, s blockmerge.Store) {
	put(t, s, "empty", nil)
	equalBytes(t, "Get", get(t, s, "empty"), []byte{})
	size, err := s.Size(context.Background(), "empty")
	if err != nil || size != 0 {
		t.Fatalf("Size = %d, %v; want 0", size, err)
	}
	if !exists(t, s, "empty") {
		t.Fatal("empty object does not exist")
	}
	_, err = s.GetRange(context.Background(), "empty", 0, 1)
	isErr(t, "GetRange of an empty object", err, blockmerge.ErrInvalidKey)
}

func testLargeObject(t *testing.T, s blockmerge.Store) {
	data := pattern(3<<20+17, 1)
	put(t, s, "large/object", data)
	equalBytes(t, "Get", get(t, s, "large/object"), data)
	for _, r := range [][2]int64{{0, 1}, {1 << 20, 1 << 20}, {int64(len(data)) - 5, 5}, {12345, 70000}} {
		equalBytes(t, fmt.Sprintf("GetRange(%d, %d)", r[0], r[1]), getRange(t, s, "large/object", r[0], r[1]), data[r[0]:r[0]+r[1]])
	}
}

func testNotFound(t *testing.T, s blockmerge.Store) {
	ctx := context.Background()
	const key = "blocks/missing"
	put(t, s, "blocks/present", []byte("x"))
	check := func(op string, err error) {
		t.Helper()
		isErr(t, op, err, blockmerge.ErrNotFound)
		if !strings.Contains(err.Error(), key) {
			t.Fatalf("%s: error %q does not name the object", op, err)
		}
	}
	_, err := s.Get(ctx, key)
	check("Get", err)
	_, err = s.GetRange(ctx, key, 0, 1)
	check("GetRange", err)
	_, err = s.Size(ctx, key)
	check("Size", err)
	if exists(t, s, key) {
		t.Fatal("Exists = true for a missing object")
	}
}

// opaque hides every method of a reader but Read: its size is unknown.
type opaque struct{ io.Reader }

// testUnknownSizeReaders: readers that do not tell their size are stored
// whole, with memory bounded by the data, not by the largest object a
// provider allows.
func testUnknownSizeReaders(t *testing.T, s blockmerge.Store) {
	ctx := context.Background()
	for i, n := range []int{0, 1, 1 << 10, 3<<20 + 7} {
		key := fmt.Sprintf("u/%d", i)
		data := pattern(n, uint64(i))
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if err := s.Put(ctx, key, opaque{bytes.NewReader(data)}); err != nil {
			t.Fatalf("Put of %d bytes of unknown size: %v", n, err)
		}
		runtime.ReadMemStats(&after)
		// Generous: a store may buffer the object and a part or two, but
		// not size a part for a 5 TiB object (528 MiB).
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(4*n)+64<<20 {
			t.Errorf("Put of %d bytes of unknown size allocated %d bytes", n, alloc)
		}
		equalBytes(t, fmt.Sprintf("object of %d bytes put from a reader of unknown size", n), get(t, s, key), data)
		// The store's own readers, copied into the store again.
		r, err := s.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		err = s.Put(ctx, key+"-copy", r)
		r.Close()
		if err != nil {
			t.Fatalf("Put of a Get reader: %v", err)
		}
		equalBytes(t, "copy of the object", get(t, s, key+"-copy"), data)
	}
}

// cancellingReader yields data and cancels its context after after bytes.
type cancellingReader struct {
	data   []byte
	after  int
	read   int
	cancel context.CancelFunc
}

func (r *cancellingReader) Read(p []byte) (int, error) {
	if r.read >= r.after {
		r.cancel()
	}
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.data[:min(len(p), len(r.data))])
	r.data, r.read = r.data[n:], r.read+n
	return n, nil
}

// testCancelledLargePut: a put cancelled while a large object uploads
// returns the context's error and leaves nothing the store can list.
func testCancelledLargePut(t *testing.T, s blockmerge.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	data := pattern(24<<20, 9)
	err := s.Put(ctx, "c/large", &cancellingReader{data: data, after: 12 << 20, cancel: cancel})
	isErr(t, "a cancelled Put", err, context.Canceled)
	if exists(t, s, "c/large") {
		t.Fatal("a cancelled Put left an object")
	}
	equalKeys(t, "List after a cancelled put", list(t, s, "c/"), nil)
}

func testGetRange(t *testing.T, s blockmerge.Store) {
	ctx := context.Background()
	put(t, s, "r", []byte("0123456789"))
	for _, c := range []struct {
		off, n int64
		want   string
	}{
		{0, 3, "012"},
		{7, 3, "789"},
		{9, 1, "9"},
		{0, 10, "0123456789"},
		{8, 10, "89"}, // clamped to the end
		{0, 1 << 40, "0123456789"},
		{0, math.MaxInt64, "0123456789"}, // offset + length at the int64 limit
		{7, math.MaxInt64, "789"},        // and beyond it: still clamped
		{9, math.MaxInt64 - 8, "9"},
	} {
		equalBytes(t, fmt.Sprintf("GetRange(%d, %d)", c.off, c.n), getRange(t, s, "r", c.off, c.n), []byte(c.want))
	}
	for _, c := range [][2]int64{{-1, 3}, {0, 0}, {3, -1}, {10, 1}, {11, 1}} {
		_, err := s.GetRange(ctx, "r", c[0], c[1])
		isErr(t, fmt.Sprintf("GetRange(%d, %d)", c[0], c[1]), err, blockmerge.ErrInvalidKey)
	}
}

func testDelete(t *testing.T, s blockmerge.Store) {
	ctx := context.Background()
	put(t, s, "d/1", []byte("x"))
	put(t, s, "d/2", []byte("y"))
	if err := s.Delete(ctx, "d/1"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if exists(t, s, "d/1") {
		t.Fatal("object exists after Delete")
	}
	_, err := s.Get(ctx, "d/1")
	isErr(t, "Get after Delete", err, blockmerge.ErrNotFound)
	if err := s.Delete(ctx, "d/1"); err != nil {
		t.Fatalf("second Delete: %v", err)
	}
	if err := s.Delete(ctx, "never/was"); err != nil {
		t.Fatalf("Delete of an absent object: %v", err)
	}
	equalKeys(t, "List after Delete", list(t, s, ""), []string{"d/2"})
	// A deleted key can be written again.
	put(t, s, "d/1", []byte("again"))
	equalBytes(t, "Get after re-Put", get(t, s, "d/1"), []byte("again"))
}

// listKeys are chosen so that the lexical order of full keys differs from
// a naive directory walk ('-' and '.' sort before '/', '0' after it).
var listKeys = []string{
	"x/a/c", "x/a-b", "x/a.b", "x/a0", "x/b", "xa", "y/z", "x/a/d/e", "x/ab/1", "x/ab/10", "x/ab/2", "z",
}

func testList(t *testing.T, s blockmerge.Store) {
	for i, k := range listKeys {
		put(t, s, k, []byte{byte(i)})
	}
	sorted := slices.Sorted(slices.Values(listKeys))
	equalKeys(t, `List("")`, list(t, s, ""), sorted)
	filter := func(prefix string) []string {
		out := []string{}
		for _, k := range sorted {
			if strings.HasPrefix(k, prefix) {
				out = append(out, k)
			}
		}
		return out
	}
	for _, p := range []string{"x/", "x/a", "x/a/", "x/ab/1", "x/ab/", "y/", "y/z", "x", "nope/", "x/q", "z"} {
		equalKeys(t, fmt.Sprintf("List(%q)", p), list(t, s, p), filter(p))
	}
}

func testListCallbackError(t *testing.T, s blockmerge.Store) {
	for i, k := range listKeys {
		put(t, s, k, []byte{byte(i)})
	}
	stop := errors.New("stop here")
	var seen []string
	err := s.List(context.Background(), "x/", func(k string) error {
		seen = append(seen, k)
		if len(seen) == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Fatalf("List returned %v, want the callback's error", err)
	}
	if len(seen) != 3 {
		t.Fatalf("List went on after the callback's error: %q", seen)
	}
}

func testDeleteByPrefix(t *testing.T, s blockmerge.Store) {
	ctx := context.Background()
	for _, k := range []string{"p/1/a", "p/1/b/c", "p/10/a", "p/2", "q/1/a"} {
		put(t, s, k, []byte(k))
	}
	if err := s.DeleteByPrefix(ctx, "p/1/"); err != nil {
		t.Fatalf("DeleteByPrefix: %v", err)
	}
	equalKeys(t, "List after DeleteByPrefix", list(t, s, ""), []string{"p/10/a", "p/2", "q/1/a"})
	if err := s.DeleteByPrefix(ctx, "p/1/"); err != nil {
		t.Fatalf("second DeleteByPrefix: %v", err)
	}
	if err := s.DeleteByPrefix(ctx, "absent/"); err != nil {
		t.Fatalf("DeleteByPrefix of nothing: %v", err)
	}
	err := s.DeleteByPrefix(ctx, "")
	isErr(t, "DeleteByPrefix(\"\")", err, blockmerge.ErrInvalidKey)
	equalKeys(t, "List after refused DeleteByPrefix", list(t, s, ""), []string{"p/10/a", "p/2", "q/1/a"})
	if err := s.DeleteByPrefix(ctx, "p/"); err != nil {
		t.Fatalf("DeleteByPrefix: %v", err)
	}
	equalKeys(t, "List after DeleteByPrefix", list(t, s, ""), []string{"q/1/a"})
}

// InvalidKeys are keys every store refuses.
var InvalidKeys = []string{
	"", "/abs", "/", "a//b", "a/", "a/../b", "../x", "..", ".", "a/./b", "a/..", `a\b`, `..\x`, "a\x00b", "a\nb", "\xff",
	strings.Repeat("k", 1025), // longer than the 1024 bytes of a key
}

func testInvalidKeys(t *testing.T, s blockmerge.Store) {
	ctx := context.Background()
	for _, k := range InvalidKeys {
		what := func(op string) string { return fmt.Sprintf("%s(%.40q)", op, k) }
		isErr(t, what("Put"), s.Put(ctx, k, strings.NewReader("x")), blockmerge.ErrInvalidKey)
		_, err := s.Get(ctx, k)
		isErr(t, what("Get"), err, blockmerge.ErrInvalidKey)
		_, err = s.GetRange(ctx, k, 0, 1)
		isErr(t, what("GetRange"), err, blockmerge.ErrInvalidKey)
		_, err = s.Size(ctx, k)
		isErr(t, what("Size"), err, blockmerge.ErrInvalidKey)
		_, err = s.Exists(ctx, k)
		isErr(t, what("Exists"), err, blockmerge.ErrInvalidKey)
		isErr(t, what("Delete"), s.Delete(ctx, k), blockmerge.ErrInvalidKey)
		_, err = blockmerge.CreateObject(ctx, s, k, t.TempDir())
		isErr(t, what("CreateObject"), err, blockmerge.ErrInvalidKey)
	}
	for _, p := range []string{"../", "/x/", "a//", `a\`, "a/../"} {
		err := s.List(ctx, p, func(string) error { return nil })
		isErr(t, fmt.Sprintf("List(%q)", p), err, blockmerge.ErrInvalidKey)
		isErr(t, fmt.Sprintf("DeleteByPrefix(%q)", p), s.DeleteByPrefix(ctx, p), blockmerge.ErrInvalidKey)
	}
	equalKeys(t, "List after refused writes", list(t, s, ""), []string{})
}

// failingReader yields n bytes, then fails.
type failingReader struct {
	data []byte
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func testFailedPut(t *testing.T, s blockmerge.Store) {
	ctx := context.Background()
	boom := errors.New("reader broke")
	err := s.Put(ctx, "f/new", &failingReader{data: pattern(300<<10, 2), err: boom})
	if err == nil {
		t.Fatal("Put from a failing reader succeeded")
	}
	if exists(t, s, "f/new") {
		t.Fatal("a failed Put left an object")
	}
	put(t, s, "f/old", []byte("previous"))
	if err := s.Put(ctx, "f/old", &failingReader{data: pattern(300<<10, 3), err: boom}); err == nil {
		t.Fatal("Put from a failing reader succeeded")
	}
	equalBytes(t, "object after a failed overwrite", get(t, s, "f/old"), []byte("previous"))
	equalKeys(t, "List after failed puts", list(t, s, ""), []string{"f/old"})
}

func testCancelledContext(t *testing.T, s blockmerge.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Put(ctx, "c/x", strings.NewReader("data")); err == nil {
		t.Fatal("Put with a cancelled context succeeded")
	}
	if exists(t, s, "c/x") {
		t.Fatal("Put with a cancelled context left an object")
	}
	put(t, s, "c/y", []byte("data"))
	if _, err := s.Get(ctx, "c/y"); err == nil {
		t.Fatal("Get with a cancelled context succeeded")
	}
	equalKeys(t, "List", list(t, s, ""), []string{"c/y"})
}

func testCreateObject(t *testing.T, s blockmerge.Store) {
	ctx := context.Background()
	w, err := blockmerge.CreateObject(ctx, s, "w/obj", t.TempDir())
	if err != nil {
		t.Fatalf("CreateObject: %v", err)
	}
	data := pattern(200<<10, 4)
	for i := 0; i < len(data); i += 7000 {
		if _, err := w.Write(data[i:min(i+7000, len(data))]); err != nil {
			t.Fatalf("Write: %v", err)
		}
	}
	if exists(t, s, "w/obj") {
		t.Fatal("object visible before Commit")
	}
	if err := w.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if err := w.Abort(); err != nil {
		t.Fatalf("Abort after Commit: %v", err)
	}
	equalBytes(t, "Get after Commit", get(t, s, "w/obj"), data)

	w, err = blockmerge.CreateObject(ctx, s, "w/aborted", t.TempDir())
	if err != nil {
		t.Fatalf("CreateObject: %v", err)
	}
	if _, err := w.Write([]byte("never seen")); err != nil {
		t.Fatalf("Write: %v", err)
	}
	if err := w.Abort(); err != nil {
		t.Fatalf("Abort: %v", err)
	}
	if err := w.Commit(); err == nil {
		t.Fatal("Commit after Abort succeeded")
	}
	equalKeys(t, "List", list(t, s, ""), []string{"w/obj"})
}

func testConcurrent(t *testing.T, s blockmerge.Store) {
	ctx := context.Background()
	const writers, rounds = 4, 5
	values := make([][]byte, writers)
	for i := range values {
		values[i] = pattern(64<<10+i, uint64(10+i))
	}
	put(t, s, "shared", values[0])
	var wg sync.WaitGroup
	errs := make(chan error, writers*rounds*3)
	for i := range writers {
		wg.Go(func() {
			for r := range rounds {
				if err := s.Put(ctx, "shared", bytes.NewReader(values[i])); err != nil {
					errs <- err
				}
				if err := s.Put(ctx, fmt.Sprintf("own/%d/%d", i, r), bytes.NewReader(values[i])); err != nil {
					errs <- err
				}
				rc, err := s.Get(ctx, "shared")
				if err != nil {
					errs <- err
					continue
				}
				b, err := io.ReadAll(rc)
				rc.Close()
				if err != nil {
					errs <- err
					continue
				}
				if !slices.ContainsFunc(values, func(v []byte) bool { return bytes.Equal(v, b) }) {
					errs <- fmt.Errorf("get returned %d bytes that no writer wrote whole", len(b))
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := len(list(t, s, "own/")); got != writers*rounds {
		t.Fatalf("List found %d objects, want %d", got, writers*rounds)
	}
	if got := get(t, s, "shared"); !slices.ContainsFunc(values, func(v []byte) bool { return bytes.Equal(v, got) }) {
		t.Fatal("final object is not one of the values written")
	}
}
