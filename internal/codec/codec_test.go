package codec_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/compactkit/compactkit/internal/codec"
)

type rec struct {
	_    struct{} `cbor:",toarray"`
	Name string
	N    int64
	Tags []string
}

func TestMarshalDeterministic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := rec{Name: rapid.String().Draw(t, "name"), N: rapid.Int64().Draw(t, "n"), Tags: rapid.SliceOf(rapid.String()).Draw(t, "tags")}
		a, err := codec.Default.Marshal(v)
		require.NoError(t, err)
		b, err := codec.Default.Marshal(v)
		require.NoError(t, err)
		require.Equal(t, a, b)
		var got rec
		require.NoError(t, codec.Default.Unmarshal(a, &got))
		require.Equal(t, v.Name, got.Name)
		require.Equal(t, v.N, got.N)
		require.Equal(t, len(v.Tags), len(got.Tags))
	})
}

func TestMapsEncodeSorted(t *testing.T) {
	// Core deterministic mode sorts map keys, so two maps built in
	// different orders encode identically.
	a := map[string]int{}
	b := map[string]int{}
	for i, k := range []string{"z", "a", "m", "b"} {
		a[k] = i
	}
	for _, k := range []string{"b", "m", "a", "z"} {
		b[k] = a[k]
	}
	ea, err := codec.Default.Marshal(a)
	require.NoError(t, err)
	eb, err := codec.Default.Marshal(b)
	require.NoError(t, err)
	require.Equal(t, ea, eb)
}

func TestUnmarshalErrors(t *testing.T) {
	var v rec
	require.ErrorIs(t, codec.Default.Unmarshal(nil, &v), codec.ErrTruncated)
	require.ErrorIs(t, codec.Default.Unmarshal([]byte{0x83, 0x61}, &v), codec.ErrTruncated)
	require.ErrorIs(t, codec.Default.Unmarshal([]byte{0x01}, &v), codec.ErrMalformed)
	good, err := codec.Default.Marshal(rec{Name: "a"})
	require.NoError(t, err)
	require.ErrorIs(t, codec.Default.Unmarshal(append(good, 0), &v), codec.ErrMalformed)
	small := codec.Must(codec.Limits{MaxArrayElements: 16, MaxBytes: 64})
	var ints []int
	big, err := codec.Default.Marshal(make([]int, 17))
	require.NoError(t, err)
	require.ErrorIs(t, small.Unmarshal(big, &ints), codec.ErrTooLarge)
	require.ErrorIs(t, small.Unmarshal(make([]byte, 65), &ints), codec.ErrTooLarge)
}

func TestHeader(t *testing.T) {
	b, err := codec.Default.Encode(codec.KindCommand, 2, rec{Name: "x"})
	require.NoError(t, err)
	var v rec
	ver, err := codec.Default.Decode(b, codec.KindCommand, func(v byte) bool { return v <= 2 }, &v)
	require.NoError(t, err)
	require.Equal(t, byte(2), ver)
	require.Equal(t, "x", v.Name)

	_, err = codec.Default.Decode(b, codec.KindCommand, func(v byte) bool { return v == 1 }, &v)
	require.ErrorIs(t, err, codec.ErrUnknownVersion)
	_, err = codec.Default.Decode(b, codec.KindSnapshot, func(byte) bool { return true }, &v)
	require.ErrorIs(t, err, codec.ErrMalformed)
	_, _, err = codec.ParseHeader(b[:3], codec.KindCommand)
	require.ErrorIs(t, err, codec.ErrTruncated)
}

func writeStream(t require.TestingT, frames []rec) []byte {
	var buf bytes.Buffer
	w, err := codec.NewWriter(&buf, codec.Snapshot, codec.KindSection, 1)
	require.NoError(t, err)
	for _, f := range frames {
		require.NoError(t, w.Encode(f))
	}
	require.Equal(t, len(frames), w.Frames())
	require.NoError(t, w.Close())
	return buf.Bytes()
}

func readStream(data []byte) ([]rec, error) {
	r, err := codec.NewReader(bytes.NewReader(data), codec.Snapshot, codec.KindSection)
	if err != nil {
		return nil, err
	}
	var out []rec
	for {
		var v rec
		err := r.Decode(&v)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, v)
	}
}

func TestStreamRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		frames := rapid.SliceOf(rapid.Custom(func(t *rapid.T) rec {
			return rec{Name: rapid.String().Draw(t, "name"), N: rapid.Int64().Draw(t, "n"), Tags: rapid.SliceOfN(rapid.String(), 1, 3).Draw(t, "tags")}
		})).Draw(t, "frames")
		data := writeStream(t, frames)
		got, err := readStream(data)
		require.NoError(t, err)
		require.Len(t, got, len(frames))
		for i := range frames {
			require.Equal(t, frames[i].Name, got[i].Name)
			require.Equal(t, frames[i].Tags, got[i].Tags)
		}
		// Any truncation is detected.
		cut := rapid.IntRange(0, len(data)-1).Draw(t, "cut")
		_, err = readStream(data[:cut])
		require.Error(t, err)
		require.True(t, errors.Is(err, codec.ErrTruncated) || errors.Is(err, codec.ErrMalformed) || errors.Is(err, codec.ErrChecksum), err)
		// Any flipped byte is detected.
		pos := rapid.IntRange(0, len(data)-1).Draw(t, "pos")
		flipped := bytes.Clone(data)
		flipped[pos] ^= byte(rapid.IntRange(1, 255).Draw(t, "xor"))
		_, err = readStream(flipped)
		require.Error(t, err, "flipping byte %d went unnoticed", pos)
	})
}

func TestConsecutiveStreams(t *testing.T) {
	// Two sections written back to back are read back through one shared
	// *bufio.Reader, each reader consuming exactly its own stream.
	a := writeStream(t, []rec{{Name: "a1"}, {Name: "a2"}})
	b := writeStream(t, []rec{{Name: "b1"}})
	br := bufio.NewReader(bytes.NewReader(append(append([]byte(nil), a...), b...)))
	for _, want := range [][]string{{"a1", "a2"}, {"b1"}} {
		r, err := codec.NewReader(br, codec.Snapshot, codec.KindSection)
		require.NoError(t, err)
		for _, name := range want {
			var v rec
			require.NoError(t, r.Decode(&v))
			require.Equal(t, name, v.Name)
		}
		require.NoError(t, r.Finish())
	}
	_, err := br.ReadByte()
	require.ErrorIs(t, err, io.EOF)
}

func TestFinishRejectsExtraFrames(t *testing.T) {
	data := writeStream(t, []rec{{Name: "a"}, {Name: "b"}})
	r, err := codec.NewReader(bytes.NewReader(data), codec.Snapshot, codec.KindSection)
	require.NoError(t, err)
	var v rec
	require.NoError(t, r.Decode(&v))
	require.ErrorIs(t, r.Finish(), codec.ErrMalformed)
}

func TestFrameLimit(t *testing.T) {
	small := codec.Must(codec.Limits{MaxBytes: 32})
	var buf bytes.Buffer
	w, err := codec.NewWriter(&buf, small, codec.KindSection, 1)
	require.NoError(t, err)
	require.ErrorIs(t, w.Encode(rec{Name: string(make([]byte, 64))}), codec.ErrTooLarge)
	// A reader refuses a frame whose declared length exceeds the limit
	// before allocating it.
	data := append(codec.AppendHeader(nil, codec.KindSection, 1), 0xff, 0xff, 0xff, 0xff, 0x0f)
	r, err := codec.NewReader(bytes.NewReader(data), small, codec.KindSection)
	require.NoError(t, err)
	var v rec
	require.ErrorIs(t, r.Decode(&v), codec.ErrTooLarge)
	require.ErrorIs(t, r.Decode(&v), codec.ErrTooLarge, "errors are sticky")
}

func TestColumns(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ss := rapid.SliceOf(rapid.String()).Draw(t, "strings")
		col := codec.PackStrings(ss)
		got, err := col.Unpack(len(ss))
		require.NoError(t, err)
		require.Equal(t, len(ss), len(got))
		for i := range ss {
			require.Equal(t, ss[i], got[i])
		}
		if len(ss) > 0 {
			_, err = col.Unpack(len(ss) - 1)
			require.ErrorIs(t, err, codec.ErrMalformed)
		}
		_, err = col.Unpack(len(ss) + 1)
		require.ErrorIs(t, err, codec.ErrMalformed)

		i64 := rapid.SliceOf(rapid.Int64()).Draw(t, "int64s")
		gi, err := codec.UnpackInts[int64](codec.PackInts(i64), len(i64))
		require.NoError(t, err)
		require.Equal(t, len(i64), len(gi))
		for i := range i64 {
			require.Equal(t, i64[i], gi[i])
		}
		u32 := rapid.SliceOf(rapid.Uint32()).Draw(t, "uint32s")
		gu, err := codec.UnpackInts[uint32](codec.PackInts(u32), len(u32))
		require.NoError(t, err)
		for i := range u32 {
			require.Equal(t, u32[i], gu[i])
		}
	})
}

func TestIntColumnRange(t *testing.T) {
	packed := codec.PackInts([]uint64{1 << 40})
	_, err := codec.UnpackInts[uint32](packed, 1)
	require.ErrorIs(t, err, codec.ErrMalformed)
	_, err = codec.UnpackInts[int64](packed, 2)
	require.ErrorIs(t, err, codec.ErrMalformed)
	_, err = codec.UnpackInts[int64](append(packed, 0), 1)
	require.ErrorIs(t, err, codec.ErrMalformed)
}

func FuzzReader(f *testing.F) {
	f.Add(writeStream(f, []rec{{Name: "a", N: 1, Tags: []string{"x"}}, {Name: "b"}}))
	f.Add([]byte{'c', 'k', 'X', 1, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := readStream(data)
		if err != nil {
			return
		}
		// A stream that reads cleanly re-encodes to a stream that does too.
		again, err := readStream(writeStream(t, got))
		require.NoError(t, err)
		require.Equal(t, len(got), len(again))
	})
}

func FuzzColumns(f *testing.F) {
	c := codec.PackStrings([]string{"01J", "blocks/x"})
	f.Add(c.Data, c.Lens, codec.PackInts([]int64{5, -3, 1 << 50}), 2)
	f.Fuzz(func(t *testing.T, data, lens, ints []byte, n int) {
		if ss, err := (codec.Strings{Data: data, Lens: lens}).Unpack(n); err == nil {
			require.Len(t, ss, n)
		}
		vs, err := codec.UnpackInts[int64](ints, n)
		if err == nil {
			require.Equal(t, ints, codec.PackInts(vs))
		}
		checkUvarints(t, ints, n, vs, err)
		if vs, err := codec.UnpackInts[uint16](ints, n); err == nil {
			require.Len(t, vs, n)
		}
	})
}

// referenceInts decodes an integer column with binary.Uvarint, refusing
// the overlong varints the format refuses: what UnpackInts must accept.
func referenceInts(b []byte, n int) ([]int64, bool) {
	if n < 0 {
		return nil, false
	}
	out := []int64{}
	var prev uint64
	for range n {
		z, k := binary.Uvarint(b)
		if k <= 0 || k > 1 && b[k-1] == 0 {
			return nil, false
		}
		b = b[k:]
		prev += uint64(int64(z>>1) ^ -int64(z&1))
		out = append(out, int64(prev))
	}
	return out, len(b) == 0
}

// checkUvarints asserts that UnpackInts' answer for (b, n), got and err,
// is the reference decoder's.
func checkUvarints(t require.TestingT, b []byte, n int, got []int64, err error) {
	want, ok := referenceInts(b, n)
	if !ok {
		require.ErrorIs(t, err, codec.ErrMalformed)
		return
	}
	require.NoError(t, err)
	require.Equal(t, want, got)
}

// An integer column decodes exactly as binary.Uvarint reads it, without
// overlong varints: every value of one to ten bytes, truncated and
// followed by anything.
func TestIntsDecodeAsUvarint(t *testing.T) {
	for _, b := range [][]byte{
		{}, {0}, {0x80}, {0x80, 0}, {0x81, 0}, {0xff, 0x7f},
		{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 1},
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1},
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2},
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x80, 1},
	} {
		for n := range 3 {
			got, err := codec.UnpackInts[int64](b, n)
			checkUvarints(t, b, n, got, err)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		var b []byte
		for range rapid.IntRange(0, 8).Draw(t, "values") {
			// A varint of 1 to 11 bytes: continuation bytes, then a last
			// byte that may be zero, above 1, or missing.
			for range rapid.IntRange(0, 10).Draw(t, "continuations") {
				b = append(b, rapid.ByteRange(0x80, 0xff).Draw(t, "continuation"))
			}
			if rapid.IntRange(0, 9).Draw(t, "last") > 0 {
				b = append(b, rapid.ByteRange(0, 0x7f).Draw(t, "byte"))
			}
		}
		n := rapid.IntRange(0, 9).Draw(t, "n")
		got, err := codec.UnpackInts[int64](b, n)
		checkUvarints(t, b, n, got, err)
	})
}

// AppendInts decodes what UnpackInts decodes, after what dst holds, in
// dst's array when it has room; on error it returns dst as it was.
func TestAppendInts(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		vs := rapid.SliceOf(rapid.Int64()).Draw(t, "values")
		prefix := rapid.SliceOf(rapid.Int64()).Draw(t, "prefix")
		room := rapid.IntRange(0, 10).Draw(t, "room")
		dst := append(make([]int64, 0, len(prefix)+room), prefix...)
		got, err := codec.AppendInts(dst, codec.PackInts(vs), len(vs))
		require.NoError(t, err)
		require.Equal(t, append(append([]int64{}, prefix...), vs...), append([]int64{}, got...))
		if len(vs) <= room && len(got) > 0 {
			require.Same(t, &dst[:1][0], &got[0], "decoded in dst's array")
		}
		bad := append(codec.PackInts(vs), 0)
		got, err = codec.AppendInts(dst, bad, len(vs))
		require.ErrorIs(t, err, codec.ErrMalformed)
		require.Equal(t, append([]int64{}, prefix...), append([]int64{}, got...))
	})
}

// BenchmarkUnpackInts decodes a column of 4,096 values whose deltas take
// one, two and four bytes (steps of 1, 1,000 and 64,000,000 between
// consecutive values: arrivals, sizes, and times in nanoseconds).
func BenchmarkUnpackInts(b *testing.B) {
	for _, c := range []struct {
		name string
		step int64
	}{{"bytes=1", 1}, {"bytes=2", 1000}, {"bytes=4", 64_000_000}} {
		v := make([]int64, 4096)
		for i := range v {
			v[i] = int64(i) * c.step
		}
		col := codec.PackInts(v)
		b.Run(c.name, func(b *testing.B) {
			dst := make([]int64, 0, len(v))
			for b.Loop() {
				var err error
				if dst, err = codec.AppendInts(dst[:0], col, len(v)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(v)), "ns/value")
		})
	}
}
