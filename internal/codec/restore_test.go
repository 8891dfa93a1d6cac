package codec_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/compactkit/compactkit/internal/codec"
)

func TestFramesReadsRuns(t *testing.T) {
	d := decoder(t, frame([]string{"a", "b"}, []int64{1, 2}), frame([]string{"c"}, []int64{3}))
	var names []string
	var counts []int
	var f column
	err := codec.Frames(d, "records", 3, &f, &f.N, func(n int) error {
		ns := d.Strings("names", f.Names, n)
		if err := d.Err(); err != nil {
			return err
		}
		names, counts = append(names, ns...), append(counts, n)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b", "c"}, names)
	require.Equal(t, []int{2, 1}, counts)
	require.Zero(t, d.Left())
	require.NoError(t, d.Finish())
}

func TestFramesClearsTheFrame(t *testing.T) {
	// A CBOR null leaves a struct as it is: read into the previous frame,
	// it would pass for a copy of that frame.
	d := decoder(t, frame([]string{"a"}, []int64{1}), nil)
	calls := 0
	var f column
	err := codec.Frames(d, "records", 2, &f, &f.N, func(int) error { calls++; return nil })
	require.ErrorIs(t, err, codec.ErrMalformed)
	require.ErrorContains(t, err, "records: frame of 0 records, 1 left")
	require.Equal(t, 1, calls)
}

func TestFramesStops(t *testing.T) {
	errStop := errors.New("stop")
	d := decoder(t, frame([]string{"a"}, []int64{1}), frame([]string{"b"}, []int64{2}))
	calls := 0
	var f column
	err := codec.Frames(d, "records", 2, &f, &f.N, func(int) error { calls++; return errStop })
	require.ErrorIs(t, err, errStop)
	require.Equal(t, 1, calls, "body's error ends the run")

	// The decoder's error ends the run before body sees the frame.
	d = decoder(t, frame([]string{"a"}, []int64{1}))
	calls = 0
	err = codec.Frames(d, "records", 2, &f, &f.N, func(int) error { calls++; return nil })
	require.ErrorIs(t, err, codec.ErrTruncated)
	require.Equal(t, 1, calls)
	d = decoder(t, &column{N: 3})
	calls = 0
	err = codec.Frames(d, "records", 2, &f, &f.N, func(int) error { calls++; return nil })
	require.ErrorIs(t, err, codec.ErrMalformed)
	require.ErrorContains(t, err, "records: frame of 3 records, 2 left")
	require.Zero(t, calls)
}

func TestRestoreSection(t *testing.T) {
	// build reads two records of version 1.
	build := func(d *codec.Decoder, version byte) ([]string, error) {
		if version != 1 {
			return nil, codec.ErrUnknownVersion
		}
		var names []string
		err := d.Run(func() error {
			for range 2 {
				var v rec
				if err := d.Decode("record", &v); err != nil {
					return err
				}
				names = append(names, v.Name)
			}
			return nil
		})
		return names, err
	}
	good := writeStream(t, []rec{{Name: "a"}, {Name: "b"}})
	after := []byte("the next section")
	r := bytes.NewReader(append(bytes.Clone(good), after...))
	names, err := codec.RestoreSection(r, "test: restore", build)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, names)
	require.Equal(t, len(after), r.Len(), "nothing past the checksum is read")

	damage := func(i int, b byte) []byte {
		bad := bytes.Clone(good)
		bad[i] = b
		return bad
	}
	for _, c := range []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, codec.ErrTruncated},
		{"another kind", damage(2, byte(codec.KindCommand)), codec.ErrMalformed},
		{"a version build refuses", damage(3, 2), codec.ErrUnknownVersion},
		{"stream ends early", writeStream(t, []rec{{Name: "a"}}), codec.ErrTruncated},
		{"frames after the end", writeStream(t, []rec{{Name: "a"}, {Name: "b"}, {Name: "c"}}), codec.ErrMalformed},
		{"damaged checksum", damage(len(good)-1, good[len(good)-1]^1), codec.ErrChecksum},
	} {
		t.Run(c.name, func(t *testing.T) {
			names, err := codec.RestoreSection(bytes.NewReader(c.data), "test: restore", build)
			require.ErrorIs(t, err, c.want)
			require.ErrorContains(t, err, "test: restore: ")
			require.Nil(t, names, "nothing half-built")
		})
	}
}

func TestHeaderNamesTheComponent(t *testing.T) {
	var h rec
	require.NoError(t, codec.Header(decoder(t, rec{Name: "planner", N: 3}), &h, &h.Name, "planner"))
	require.Equal(t, int64(3), h.N)

	h = rec{}
	err := codec.Header(decoder(t, rec{Name: "index"}), &h, &h.Name, "planner")
	require.ErrorIs(t, err, codec.ErrMalformed)
	require.EqualError(t, err, `component "index", want "planner": malformed encoding`)
	require.ErrorIs(t, codec.Header(decoder(t), &h, &h.Name, "planner"), codec.ErrTruncated)
}
