package codec_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/compactkit/compactkit/internal/codec"
)

// column is a frame of n records with one string and one integer column.
type column struct {
	_     struct{} `cbor:",toarray"`
	N     int
	Names codec.Strings
	Times []byte
}

func frame(names []string, times []int64) *column {
	return &column{N: len(names), Names: codec.PackStrings(names), Times: codec.PackInts(times)}
}

// decoder returns a decoder over a stream of the given frames.
func decoder(t *testing.T, frames ...any) *codec.Decoder {
	t.Helper()
	var buf bytes.Buffer
	w, err := codec.NewWriter(&buf, codec.Snapshot, codec.KindSection, 1)
	require.NoError(t, err)
	for _, f := range frames {
		require.NoError(t, w.Encode(f))
	}
	require.NoError(t, w.Close())
	r, err := codec.NewReader(&buf, codec.Snapshot, codec.KindSection)
	require.NoError(t, err)
	return codec.NewDecoder(r)
}

// readAll reads a run of records of the given count and returns its names
// and times.
func readAll(d *codec.Decoder, records uint64) ([]string, []int64, error) {
	var names []string
	var times []int64
	for d.Records("records", records); d.More(); {
		var f column
		n := d.Frame(&f, &f.N)
		ns := d.Strings("names", f.Names, n)
		ts := codec.Ints[int64](d, "times", f.Times, n)
		if err := d.Err(); err != nil {
			return nil, nil, err
		}
		names, times = append(names, ns...), append(times, ts...)
	}
	return names, times, d.Err()
}

func TestDecoderReadsRuns(t *testing.T) {
	type header struct {
		_ struct{} `cbor:",toarray"`
		N uint64
	}
	d := decoder(t, &header{N: 3}, frame([]string{"a", "b"}, []int64{1, 2}), frame([]string{"c"}, []int64{3}))
	var h header
	require.NoError(t, d.Decode("header", &h))
	names, times, err := readAll(d, h.N)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b", "c"}, names)
	require.Equal(t, []int64{1, 2, 3}, times)
	require.Zero(t, d.Left())
	require.NoError(t, d.Finish())
}

func TestDecoderErrors(t *testing.T) {
	good := frame([]string{"a", "b"}, []int64{1, 2})
	cases := []struct {
		name    string
		frames  []any
		records uint64
		want    error
	}{
		{"stream ends early", []any{good}, 3, codec.ErrTruncated},
		{"more records than left", []any{good}, 1, codec.ErrMalformed},
		{"empty frame", []any{&column{}}, 1, codec.ErrMalformed},
		{"negative count", []any{&column{N: -1}}, 1, codec.ErrMalformed},
		{"short column", []any{&column{N: 2, Names: good.Names, Times: codec.PackInts([]int64{1})}}, 2, codec.ErrMalformed},
		{"not a frame", []any{"text"}, 1, codec.ErrMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := decoder(t, c.frames...)
			names, _, err := readAll(d, c.records)
			require.ErrorIs(t, err, c.want)
			require.Nil(t, names)
			require.ErrorIs(t, d.Finish(), c.want, "the first error sticks")
		})
	}
}

func TestDecoderIsSticky(t *testing.T) {
	d := decoder(t, &column{N: 1, Names: codec.PackStrings([]string{"a"}), Times: []byte{0x80}}) // a varint that never ends
	d.Records("records", 1)
	var f column
	n := d.Frame(&f, &f.N)
	require.Equal(t, 1, n)
	require.Nil(t, codec.Ints[int64](d, "times", f.Times, n))
	first := d.Err()
	require.ErrorIs(t, first, codec.ErrMalformed)
	require.ErrorContains(t, first, "records: times: ")
	// Later columns, even good ones, return nothing and keep the first error.
	require.Nil(t, d.Strings("names", f.Names, n))
	require.Zero(t, codec.Total(d, "counts", []uint32{1, 2}))
	require.Zero(t, d.Frame(&f, &f.N))
	require.False(t, d.More())
	require.Same(t, first, d.Err())
}

func TestDecoderTotal(t *testing.T) {
	d := decoder(t)
	d.Records("lists", 2)
	require.Equal(t, 7, codec.Total(d, "counts", []uint32{3, 4}))
	require.NoError(t, d.Err())
	require.Zero(t, codec.Total(d, "counts", []int8{3, -1}))
	require.ErrorIs(t, d.Err(), codec.ErrMalformed)
	d = decoder(t)
	require.Zero(t, codec.Total(d, "counts", []uint64{1 << 62, 1 << 62}))
	require.ErrorIs(t, d.Err(), codec.ErrMalformed)
}

func TestMalformed(t *testing.T) {
	errLimit := errors.New("over the limit")
	err := codec.Malformed("block %s: %w", "a", errLimit)
	require.ErrorIs(t, err, codec.ErrMalformed)
	require.ErrorIs(t, err, errLimit)
	require.EqualError(t, err, "block a: over the limit: malformed encoding")
}

func TestDecoderRun(t *testing.T) {
	d := decoder(t, frame([]string{"a"}, []int64{1}))
	var got []string
	require.NoError(t, d.Run(func() error {
		names, _, err := readAll(d, 1)
		got = names
		return err
	}))
	require.Equal(t, []string{"a"}, got)

	errStop := errors.New("stop")
	d = decoder(t, frame([]string{"a"}, []int64{1}))
	calls := 0
	err := d.Run(func() error { calls++; return errStop }, func() error { calls++; return nil })
	require.ErrorIs(t, err, errStop)
	require.Equal(t, 1, calls)
	require.ErrorIs(t, d.Err(), errStop)
}
