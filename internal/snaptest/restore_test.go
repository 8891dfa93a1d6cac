package snaptest_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/compactkit/compactkit/internal/codec"
	"github.com/compactkit/compactkit/internal/snaptest"
)

// ints is a stream of one frame, a list of integers.
func ints(t *testing.T, v ...int) []byte {
	var b bytes.Buffer
	w, err := codec.NewWriter(&b, codec.Default, codec.KindSection, 1)
	require.NoError(t, err)
	require.NoError(t, w.Encode(v))
	require.NoError(t, w.Close())
	return b.Bytes()
}

// readInts restores a stream written by ints.
func readInts(r io.Reader) ([]int, error) {
	sr, err := codec.NewReader(r, codec.Default, codec.KindSection)
	if err != nil {
		return nil, err
	}
	var v []int
	if err := sr.Decode(&v); err != nil {
		return nil, err
	}
	return v, sr.Finish()
}

// fatal records a test's first failure instead of ending it.
type fatal struct {
	testing.TB
	msg string
}

func (f *fatal) Helper() {}

func (f *fatal) Fatalf(format string, args ...any) {
	if f.msg == "" {
		f.msg = fmt.Sprintf(format, args...)
	}
}

func TestGolden(t *testing.T) {
	t.Chdir(t.TempDir())
	snap := ints(t, 1)
	require.Equal(t, snap, snaptest.Golden(t, "x_v1.bin", snap, true), "written")
	require.Equal(t, snap, snaptest.Golden(t, "x_v1.bin", snap, false), "read")
	file, err := os.ReadFile(filepath.Join("testdata", "golden", "x_v1.bin"))
	require.NoError(t, err)
	require.Equal(t, snap, file)

	f := &fatal{TB: t}
	snaptest.Golden(f, "x_v1.bin", ints(t, 2), false)
	require.Equal(t, "the snapshot of x_v1.bin changed (run with -update if intended)", f.msg)
	f = &fatal{TB: t}
	snaptest.Golden(f, "x_v2.bin", snap, false)
	require.Contains(t, f.msg, "no such file")
}

func TestErr(t *testing.T) {
	check := snaptest.Err(readInts)
	require.NoError(t, check(bytes.NewReader(ints(t, 1, 2))))
	require.ErrorIs(t, check(bytes.NewReader(nil)), codec.ErrTruncated)
}

func TestRefusesOrWorks(t *testing.T) {
	snap := ints(t, 1, 2, 3)
	var worked [][]int
	f := &fatal{TB: t}
	snaptest.RefusesOrWorks(f, snap, 1, readInts, func(v []int) { worked = append(worked, v) })
	require.Empty(t, f.msg)
	require.NotEmpty(t, worked, "some damage decodes: those lists are handed on")

	acceptAll := func(io.Reader) ([]int, error) { return nil, nil }
	f = &fatal{TB: t}
	snaptest.RefusesOrWorks(f, snap, 1, acceptAll, func([]int) {})
	require.Equal(t, "no damaged copy of the snapshot was refused", f.msg)

	errRefused := errors.New("refused")
	refuseAll := func(io.Reader) ([]int, error) { return nil, errRefused }
	f = &fatal{TB: t}
	snaptest.RefusesOrWorks(f, snap, 1, refuseAll, func([]int) {})
	require.Equal(t, "the snapshot resealed: refused", f.msg)
}

func TestRoundTrip(t *testing.T) {
	snap := ints(t, 1, 2)
	f := &fatal{TB: t}
	v := snaptest.RoundTrip(f, snap, readInts, func(v []int) []byte { return ints(t, v...) })
	require.Empty(t, f.msg)
	require.Equal(t, []int{1, 2}, v)

	f = &fatal{TB: t}
	snaptest.RoundTrip(f, snap, readInts, func(v []int) []byte { return ints(t, append(v, 3)...) })
	require.Contains(t, f.msg, "Restore(Snapshot) re-snapshots to other bytes")
	f = &fatal{TB: t}
	snaptest.RoundTrip(f, snap[:5], readInts, func(v []int) []byte { return ints(t, v...) })
	require.Contains(t, f.msg, "restore: ")
}

func TestTryRestore(t *testing.T) {
	snap := ints(t, 7)
	count := func(data []byte) int {
		n := 0
		snaptest.TryRestore(data, readInts, func(v []int) {
			require.Equal(t, []int{7}, v)
			n++
		})
		return n
	}
	require.Equal(t, 2, count(snap), "as it is and resealed")
	bad := bytes.Clone(snap)
	bad[len(bad)-1] ^= 1
	require.Equal(t, 1, count(bad), "resealed only")
	require.Zero(t, count(snap[:3]))
}
