package blockmerge_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
)

// sampleDatasets returns datasets of two tenants with enough records to
// fill several 1 KiB pages.
func sampleDatasets() []blockmerge.Dataset {
	var a, b, c []blockmerge.Record
	for i := range 200 {
		a = append(a, rec(fmt.Sprintf("key-%03d", (i*7)%200), int64(1000+i), strings.Repeat("v", i%40)))
		b = append(b, rec(fmt.Sprintf("k%d", i%10), int64(-50+i), fmt.Sprint(i)))
	}
	c = append(c, rec("only", 5, "one"), rec("only", 5, "one")) // duplicate collapses
	return []blockmerge.Dataset{
		{Tenant: "tenant-b", Name: "svc-1", Records: b},
		{Tenant: "tenant-a", Name: "svc-2", Records: a},
		{Tenant: "tenant-a", Name: "svc-1", Records: c},
		{Tenant: "tenant-a", Name: "empty"},
	}
}

func TestWriteBlockRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := blockmerge.NewMemStore()
	info := blockmerge.BlockInfo{ID: "01SEGMENT", Shard: 3}
	meta, err := blockmerge.WriteBlock(ctx, s, info, sampleDatasets(), blockmerge.WithPageSize(1024))
	require.NoError(t, err)
	require.NoError(t, meta.Validate())

	require.Equal(t, "01SEGMENT", meta.ID)
	require.Empty(t, meta.Tenant)
	require.Equal(t, uint32(3), meta.Shard)
	require.Equal(t, uint32(0), meta.Level)
	require.Equal(t, int64(len(objectBytes(t, s, compactkit.ObjectKey("01SEGMENT")))), meta.Size)
	require.Equal(t, []string{"tenant-a", "tenant-b"}, meta.Tenants())
	require.Equal(t, int64(-50), meta.MinTime)
	require.Equal(t, int64(1199), meta.MaxTime)

	// Datasets in (tenant, name) order, each naming its tenant, the empty
	// one left out.
	require.Len(t, meta.Datasets, 3)
	for i, want := range []struct {
		tenant, name     string
		records          int64
		minTime, maxTime int64
	}{
		{"tenant-a", "svc-1", 1, 5, 5},
		{"tenant-a", "svc-2", 200, 1000, 1199},
		{"tenant-b", "svc-1", 200, -50, 149},
	} {
		d := meta.Datasets[i]
		require.Equal(t, want.tenant, d.Tenant)
		require.Equal(t, want.name, d.Name)
		require.Equal(t, want.records, d.Records)
		require.Equal(t, want.minTime, d.MinTime)
		require.Equal(t, want.maxTime, d.MaxTime)
	}

	r, err := blockmerge.Open(ctx, s, "01SEGMENT")
	require.NoError(t, err)
	require.Equal(t, meta, r.Meta())
	var total int64 = 8 // header
	for i, d := range blockmerge.Datasets(r) {
		require.Equal(t, total, d.Offset, "dataset %d", i)
		require.Equal(t, meta.Datasets[i], d.DatasetMeta)
		total += d.Size
	}

	got := readDatasets(t, s, "01SEGMENT")
	for _, d := range sampleDatasets() {
		want := blockmerge.SortRecords(append([]blockmerge.Record(nil), d.Records...))
		if len(want) == 0 {
			require.NotContains(t, got, d.Tenant+"/"+d.Name)
			continue
		}
		require.Equal(t, want, got[d.Tenant+"/"+d.Name], "%s/%s", d.Tenant, d.Name)
	}

	v, err := blockmerge.Verify(ctx, s, "01SEGMENT")
	require.NoError(t, err)
	require.Equal(t, meta, v)
}

func TestSingleTenantBlockStoresEmptyDatasetTenant(t *testing.T) {
	ctx := context.Background()
	s := blockmerge.NewMemStore()
	meta, err := blockmerge.WriteBlock(ctx, s, blockmerge.BlockInfo{ID: "b1", Tenant: "acme", Level: 2}, []blockmerge.Dataset{
		{Tenant: "acme", Name: "x", Records: []blockmerge.Record{rec("a", 1, "1")}},
		{Name: "y", Records: []blockmerge.Record{rec("b", 2, "2")}},
	})
	require.NoError(t, err)
	require.Equal(t, "acme", meta.Tenant)
	for _, d := range meta.Datasets {
		require.Empty(t, d.Tenant, "dataset %s", d.Name)
		require.Equal(t, "acme", meta.DatasetTenant(&d))
	}
	r, err := blockmerge.Open(ctx, s, "b1")
	require.NoError(t, err)
	it, err := r.Dataset(ctx, "", "y")
	require.NoError(t, err)
	require.Equal(t, "acme", it.Meta().Tenant)
	require.Equal(t, []blockmerge.Record{rec("b", 2, "2")}, drain(t, it))
	it, err = r.Dataset(ctx, "acme", "x")
	require.NoError(t, err)
	require.Len(t, drain(t, it), 1)

	_, err = blockmerge.WriteBlock(ctx, s, blockmerge.BlockInfo{ID: "b2", Tenant: "acme"}, []blockmerge.Dataset{
		{Tenant: "other", Name: "x", Records: []blockmerge.Record{rec("a", 1, "1")}},
	})
	require.ErrorIs(t, err, compactkit.ErrInconsistent)
	ok, err := s.Exists(ctx, compactkit.ObjectKey("b2"))
	require.NoError(t, err)
	require.False(t, ok, "a failed WriteBlock left an object")
}

func TestWriteBlockRefusals(t *testing.T) {
	ctx := context.Background()
	s := blockmerge.NewMemStore()
	one := []blockmerge.Record{rec("k", 1, "v")}
	_, err := blockmerge.WriteBlock(ctx, s, blockmerge.BlockInfo{ID: "dup"}, []blockmerge.Dataset{
		{Tenant: "t", Name: "x", Records: one}, {Tenant: "t", Name: "x", Records: one},
	})
	require.ErrorIs(t, err, compactkit.ErrInconsistent)
	_, err = blockmerge.WriteBlock(ctx, s, blockmerge.BlockInfo{ID: "notenant"}, []blockmerge.Dataset{{Name: "x", Records: one}})
	require.ErrorIs(t, err, compactkit.ErrInconsistent)
	_, err = blockmerge.WriteBlock(ctx, s, blockmerge.BlockInfo{ID: "nodata"}, nil)
	require.ErrorIs(t, err, compactkit.ErrInconsistent)
	_, err = blockmerge.WriteBlock(ctx, s, blockmerge.BlockInfo{ID: "../escape"}, nil)
	require.ErrorIs(t, err, compactkit.ErrInvalidID)
	_, err = blockmerge.WriteBlock(ctx, s, blockmerge.BlockInfo{ID: "bigkey", Tenant: "t"}, []blockmerge.Dataset{
		{Name: "x", Records: []blockmerge.Record{{Key: make([]byte, blockmerge.MaxKeySize+1)}}},
	})
	require.ErrorIs(t, err, compactkit.ErrTooLarge)
	_, err = blockmerge.WriteBlock(ctx, s, blockmerge.BlockInfo{ID: "badname", Tenant: "t"}, []blockmerge.Dataset{
		{Name: "", Records: one},
	})
	require.ErrorIs(t, err, compactkit.ErrEmptyID)
	require.Empty(t, listKeys(t, s, ""), "refused writes left objects")
}

func TestWriterMisuse(t *testing.T) {
	var buf bytes.Buffer
	w, err := blockmerge.NewWriter(&buf, blockmerge.BlockInfo{ID: "w", Tenant: "t"})
	require.NoError(t, err)
	d, err := w.BeginDataset("", "b")
	require.NoError(t, err)
	require.NoError(t, d.Append(rec("k", 2, "v")))
	require.ErrorIs(t, d.Append(rec("k", 2, "v")), blockmerge.ErrOutOfOrder, "identical record")
	// The error is sticky.
	_, err = w.Close()
	require.ErrorIs(t, err, blockmerge.ErrOutOfOrder)

	w, err = blockmerge.NewWriter(&buf, blockmerge.BlockInfo{ID: "w", Tenant: "t"})
	require.NoError(t, err)
	d, err = w.BeginDataset("", "b")
	require.NoError(t, err)
	require.NoError(t, d.Append(rec("k", 2, "v")))
	require.NoError(t, d.Append(rec("k", 2, "w")))
	require.NoError(t, d.Append(rec("k", 3, "a")))
	require.NoError(t, d.Append(rec("l", -1, "")))
	_, err = w.BeginDataset("", "a")
	require.ErrorIs(t, err, blockmerge.ErrOutOfOrder, "dataset out of order")

	w, err = blockmerge.NewWriter(&buf, blockmerge.BlockInfo{ID: "w", Tenant: "t"})
	require.NoError(t, err)
	d, err = w.BeginDataset("", "a")
	require.NoError(t, err)
	require.NoError(t, d.Append(rec("k", 1, "v")))
	_, err = w.BeginDataset("", "b")
	require.NoError(t, err)
	require.ErrorIs(t, d.Append(rec("z", 1, "v")), os.ErrClosed, "append to a finished dataset")
	meta, err := w.Close()
	require.NoError(t, err)
	require.Len(t, meta.Datasets, 1, "the dataset without records is left out")
	_, err = w.Close()
	require.ErrorIs(t, err, os.ErrClosed)
	_, err = w.BeginDataset("", "c")
	require.ErrorIs(t, err, os.ErrClosed)
}

// failWriter fails after n bytes.
type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		n := f.n
		f.n = 0
		return n, errors.New("disk full")
	}
	f.n -= len(p)
	return len(p), nil
}

func TestWriterPropagatesWriteErrors(t *testing.T) {
	w, err := blockmerge.NewWriter(&failWriter{n: 100}, blockmerge.BlockInfo{ID: "w", Tenant: "t"}, blockmerge.WithPageSize(1024))
	require.NoError(t, err)
	d, err := w.BeginDataset("", "a")
	require.NoError(t, err)
	for i := range 100 {
		if err = d.Append(rec(fmt.Sprintf("%05d", i), 0, strings.Repeat("x", 50))); err != nil {
			break
		}
	}
	require.ErrorContains(t, err, "disk full")
	_, err = w.Close()
	require.ErrorContains(t, err, "disk full")
}

func TestOpenReadsFooterWithOneRangeRead(t *testing.T) {
	ctx := context.Background()
	mem := blockmerge.NewMemStore()
	_, err := blockmerge.WriteBlock(ctx, mem, blockmerge.BlockInfo{ID: "seg"}, sampleDatasets(), blockmerge.WithPageSize(1024))
	require.NoError(t, err)
	cs := &countingStore{Store: mem}
	r, err := blockmerge.Open(ctx, cs, "seg")
	require.NoError(t, err)
	require.Equal(t, 1, cs.sizes)
	require.Equal(t, 1, cs.ranges, "trailer and footer in one range read")
	it, err := r.Dataset(ctx, "tenant-b", "svc-1")
	require.NoError(t, err)
	require.Len(t, drain(t, it), 200)
	require.Equal(t, 2, cs.ranges, "a dataset is one range read")
	require.Equal(t, 0, cs.gets, "never a whole-object read")

	// A footer larger than the first read needs a second one.
	var ds []blockmerge.Dataset
	for i := range 3000 {
		ds = append(ds, blockmerge.Dataset{Tenant: "t", Name: fmt.Sprintf("dataset-with-a-long-name-%05d", i), Records: []blockmerge.Record{rec("k", int64(i), "v")}})
	}
	meta, err := blockmerge.WriteBlock(ctx, mem, blockmerge.BlockInfo{ID: "wide"}, ds)
	require.NoError(t, err)
	cs = &countingStore{Store: mem}
	r, err = blockmerge.Open(ctx, cs, "wide")
	require.NoError(t, err)
	require.Equal(t, 2, cs.ranges)
	require.Equal(t, meta, r.Meta())
	_, err = blockmerge.Verify(ctx, mem, "wide")
	require.NoError(t, err)
}

func TestWriteBlockDeterministic(t *testing.T) {
	ctx := context.Background()
	s1, s2 := blockmerge.NewMemStore(), blockmerge.NewMemStore()
	ds := sampleDatasets()
	_, err := blockmerge.WriteBlock(ctx, s1, blockmerge.BlockInfo{ID: "x"}, ds)
	require.NoError(t, err)
	// The same data given in another order.
	rev := make([]blockmerge.Dataset, len(ds))
	for i, d := range ds {
		recs := append([]blockmerge.Record(nil), d.Records...)
		for l, r := 0, len(recs)-1; l < r; l, r = l+1, r-1 {
			recs[l], recs[r] = recs[r], recs[l]
		}
		rev[len(ds)-1-i] = blockmerge.Dataset{Tenant: d.Tenant, Name: d.Name, Records: recs}
	}
	_, err = blockmerge.WriteBlock(ctx, s2, blockmerge.BlockInfo{ID: "x"}, rev)
	require.NoError(t, err)
	require.Equal(t, objectBytes(t, s1, "blocks/x"), objectBytes(t, s2, "blocks/x"))
	// WriteBlock does not reorder the caller's slices.
	require.Equal(t, sampleDatasets(), ds)
}

func TestMissingDataset(t *testing.T) {
	ctx := context.Background()
	s := blockmerge.NewMemStore()
	l0Segment(t, s, "seg", sampleDatasets()...)
	r, err := blockmerge.Open(ctx, s, "seg")
	require.NoError(t, err)
	_, err = r.Dataset(ctx, "tenant-a", "nope")
	require.ErrorIs(t, err, blockmerge.ErrNotFound)
	require.ErrorContains(t, err, `"blocks/seg"`)
	require.ErrorContains(t, err, "tenant-a/nope")
	_, err = blockmerge.DatasetAt(r, ctx, 3)
	require.ErrorIs(t, err, blockmerge.ErrNotFound)
	require.ErrorContains(t, err, "dataset #3 of 3")

	// The object vanishes after the footer was read.
	require.NoError(t, s.Delete(ctx, "blocks/seg"))
	_, err = r.Dataset(ctx, "tenant-a", "svc-2")
	require.ErrorIs(t, err, blockmerge.ErrNotFound)
	require.ErrorContains(t, err, "tenant-a/svc-2")

	_, err = blockmerge.Open(ctx, s, "seg")
	require.ErrorIs(t, err, blockmerge.ErrNotFound)
	require.ErrorContains(t, err, "blocks/seg")
}

// decodeErrors are the errors a corrupt block may produce.
var decodeErrors = []error{
	compactkit.ErrMalformed, compactkit.ErrTruncated, compactkit.ErrUnknownVersion, compactkit.ErrTooLarge, compactkit.ErrChecksum,
}

func requireDecodeError(t testing.TB, err error, what string) {
	t.Helper()
	require.Error(t, err, what)
	for _, e := range decodeErrors {
		if errors.Is(err, e) {
			require.Contains(t, err.Error(), `"blocks/c"`, "%s: the error names the object", what)
			return
		}
	}
	t.Fatalf("%s: error %v wraps no decoding error", what, err)
}

func corruptionFixture(t testing.TB) []byte {
	s := blockmerge.NewMemStore()
	_, err := blockmerge.WriteBlock(context.Background(), s, blockmerge.BlockInfo{ID: "c"}, []blockmerge.Dataset{
		{Tenant: "t1", Name: "a", Records: []blockmerge.Record{rec("k1", 1, "v1"), rec("k2", 2, "v2"), rec("k3", 3, strings.Repeat("x", 300))}},
		{Tenant: "t2", Name: "b", Records: []blockmerge.Record{rec("k", 10, "v")}},
	}, blockmerge.WithPageSize(blockmerge.MinPageSize))
	require.NoError(t, err)
	return objectBytes(t, s, "blocks/c")
}

func verifyBytes(b []byte) error {
	s := blockmerge.NewMemStore()
	if err := s.Put(context.Background(), "blocks/c", bytes.NewReader(b)); err != nil {
		return err
	}
	_, err := blockmerge.Verify(context.Background(), s, "c")
	return err
}

func TestCorruptionFlippedByte(t *testing.T) {
	good := corruptionFixture(t)
	require.NoError(t, verifyBytes(good))
	// Every byte is covered by a check: the header by comparison, pages
	// and sections by CRC-32C, the footer by its CRC, the trailer by its
	// magic, version and length. CRC-32C catches every single-byte error.
	for i := range good {
		for _, mask := range []byte{0x01, 0x80, 0xff} {
			bad := bytes.Clone(good)
			bad[i] ^= mask
			requireDecodeError(t, verifyBytes(bad), fmt.Sprintf("byte %d ^ %#x", i, mask))
		}
	}
}

func TestCorruptionTruncated(t *testing.T) {
	good := corruptionFixture(t)
	for n := range len(good) {
		requireDecodeError(t, verifyBytes(good[:n]), fmt.Sprintf("truncated to %d bytes", n))
	}
	requireDecodeError(t, verifyBytes(append(bytes.Clone(good), 0)), "one byte appended")
	requireDecodeError(t, verifyBytes(append([]byte{0}, good...)), "one byte prepended")
}

func TestCorruptionNamesDataset(t *testing.T) {
	good := corruptionFixture(t)
	// The first page of dataset t1/a starts after the 8-byte header and
	// its 8-byte page header.
	bad := bytes.Clone(good)
	bad[8+8+3] ^= 1
	s := blockmerge.NewMemStore()
	putBytes(t, s, "blocks/c", bad)
	ctx := context.Background()
	r, err := blockmerge.Open(ctx, s, "c") // the footer is intact
	require.NoError(t, err)
	it, err := r.Dataset(ctx, "t2", "b")
	require.NoError(t, err)
	require.Len(t, drain(t, it), 1, "other datasets still read")
	it, err = r.Dataset(ctx, "t1", "a")
	require.NoError(t, err)
	require.False(t, it.Next(), "no record of a corrupt page is handed out")
	require.ErrorIs(t, it.Err(), compactkit.ErrChecksum)
	require.ErrorContains(t, it.Err(), `object "blocks/c": dataset t1/a: page 1`)
}

func TestCorruptionUnknownVersion(t *testing.T) {
	good := corruptionFixture(t)
	bad := bytes.Clone(good)
	bad[len(bad)-8] = 2 // trailer version
	err := verifyBytes(bad)
	require.ErrorIs(t, err, compactkit.ErrUnknownVersion)

	bad = bytes.Clone(good)
	bad[4] = 2 // header version
	require.ErrorIs(t, verifyBytes(bad), compactkit.ErrUnknownVersion)
}

func TestCorruptionFooterLength(t *testing.T) {
	good := corruptionFixture(t)
	bad := bytes.Clone(good)
	binary.LittleEndian.PutUint32(bad[len(bad)-16:], 1<<31)
	require.ErrorIs(t, verifyBytes(bad), compactkit.ErrTooLarge)
	binary.LittleEndian.PutUint32(bad[len(bad)-16:], uint32(len(bad)))
	require.ErrorIs(t, verifyBytes(bad), compactkit.ErrTruncated)
}

func TestOpenRefusesWrongID(t *testing.T) {
	ctx := context.Background()
	s := blockmerge.NewMemStore()
	l0Segment(t, s, "seg", sampleDatasets()...)
	putBytes(t, s, "blocks/other", objectBytes(t, s, "blocks/seg"))
	_, err := blockmerge.Open(ctx, s, "other")
	require.ErrorIs(t, err, compactkit.ErrMalformed)
	require.ErrorContains(t, err, `footer names block "seg"`)
}

func TestLargeRecordsAndSectionCRC(t *testing.T) {
	ctx := context.Background()
	s := blockmerge.NewMemStore()
	big := bytes.Repeat([]byte("0123456789"), 200_000) // 2 MB, far over the page size
	recs := []blockmerge.Record{
		{Key: []byte("a"), Timestamp: 1, Value: []byte("small")},
		{Key: []byte("b"), Timestamp: 2, Value: big},
		{Key: bytes.Repeat([]byte("k"), blockmerge.MaxKeySize), Timestamp: 3, Value: []byte{}},
		{Key: []byte("z"), Timestamp: 4, Value: []byte("small again")},
	}
	_, err := blockmerge.WriteBlock(ctx, s, blockmerge.BlockInfo{ID: "big", Tenant: "t"},
		[]blockmerge.Dataset{{Name: "d", Records: recs}}, blockmerge.WithPageSize(blockmerge.MinPageSize))
	require.NoError(t, err)
	require.Equal(t, map[string][]blockmerge.Record{"t/d": recs}, readDatasets(t, s, "big"))

	// The index's CRC is the CRC-32C of the section's bytes.
	r, err := blockmerge.Open(ctx, s, "big")
	require.NoError(t, err)
	obj := objectBytes(t, s, "blocks/big")
	for _, d := range blockmerge.Datasets(r) {
		sec := obj[d.Offset : d.Offset+d.Size]
		require.Equal(t, crc32.Checksum(sec, crc32.MakeTable(crc32.Castagnoli)), d.CRC)
	}
}
