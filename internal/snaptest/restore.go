package snaptest

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// Golden compares a snapshot with its golden file, testdata/golden/name,
// and returns the file's bytes. With update (a test's -update flag) it
// first rewrites the file with got: a format changed on purpose.
func Golden(t testing.TB, name string, got []byte, update bool) []byte {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatalf("%v", err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatalf("%v", err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v", err)
	}
	if !bytes.Equal(want, got) {
		t.Fatalf("the snapshot of %s changed (run with -update if intended)", name)
	}
	return want
}

// Err adapts a package's Restore to [RejectsDamage], which needs only its
// error.
func Err[T any](restore func(io.Reader) (T, error)) func(io.Reader) error {
	return func(r io.Reader) error {
		_, err := restore(r)
		return err
	}
}

// TB is what RoundTrip needs of a test: a *testing.T, a *testing.F or a
// *rapid.T.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	FailNow()
}

// RoundTrip restores snap, checks that the restored value snapshots to
// snap's bytes again, and returns it.
func RoundTrip[T any](t TB, snap []byte, restore func(io.Reader) (T, error), snapshot func(T) []byte) T {
	t.Helper()
	v, err := restore(bytes.NewReader(snap))
	if err != nil {
		t.Fatalf("restore: %v", err)
		return v
	}
	if again := snapshot(v); !bytes.Equal(again, snap) {
		t.Fatalf("Restore(Snapshot) re-snapshots to other bytes: %d bytes, then %d", len(snap), len(again))
	}
	return v
}

// RefusesOrWorks checks a decoder against damage that the checksum does
// not catch: it restores each of snap's resealed damaged copies (see
// [ResealedDamage], one byte in step). restore must refuse some of them,
// and works must accept what restore accepts (a consistent state, one that
// can be used and round-trips); works fails t otherwise. snap's own body,
// resealed, must restore.
func RefusesOrWorks[T any](t testing.TB, snap []byte, step int, restore func(io.Reader) (T, error), works func(T)) {
	t.Helper()
	refused := ResealedDamage(snap, step, func(data []byte) bool {
		v, err := restore(bytes.NewReader(data))
		if err != nil {
			return true
		}
		works(v)
		return false
	})
	if refused == 0 {
		t.Fatalf("no damaged copy of the snapshot was refused")
		return
	}
	if _, err := restore(bytes.NewReader(Reseal(snap[:len(snap)-4]))); err != nil {
		t.Fatalf("the snapshot resealed: %v", err)
	}
}

// TryRestore is the body of a fuzz target of a decoder: it restores data
// as it is, then with its checksum recomputed so that the fuzzer reaches
// the decoder, and hands what restore accepts to works.
func TryRestore[T any](data []byte, restore func(io.Reader) (T, error), works func(T)) {
	if v, err := restore(bytes.NewReader(data)); err == nil {
		works(v)
	}
	if len(data) >= 4 {
		if v, err := restore(bytes.NewReader(Reseal(data[:len(data)-4]))); err == nil {
			works(v)
		}
	}
}
