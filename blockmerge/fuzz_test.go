package blockmerge_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/blockmerge/storetest"
)

var updateCorpus = flag.Bool("update-corpus", false, "rewrite the committed fuzz seed corpus of blockmerge")

// FuzzReader reads arbitrary bytes as the block "fuzz": footer, index and
// every dataset. Garbage must never panic, and what verifies must be
// consistent with the object.
func FuzzReader(f *testing.F) {
	for _, seed := range readerSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		s := fuzzStore(t, data)
		meta, err := blockmerge.Verify(ctx, s, "fuzz")
		if err != nil {
			return
		}
		if err := meta.Validate(); err != nil {
			t.Fatalf("verified block with invalid metadata: %v", err)
		}
		if meta.Size != int64(len(data)) || meta.ID != "fuzz" {
			t.Fatalf("verified block of size %d, id %q; object has %d bytes", meta.Size, meta.ID, len(data))
		}
		r, err := blockmerge.Open(ctx, s, "fuzz")
		if err != nil {
			t.Fatalf("Open fails after Verify succeeded: %v", err)
		}
		for _, d := range blockmerge.Datasets(r) {
			it, err := r.Dataset(ctx, meta.DatasetTenant(&d.DatasetMeta), d.Name)
			if err != nil {
				t.Fatal(err)
			}
			requireRecords(t, it, d)
		}
	})
}

// fuzzStore returns a memory store holding obj as the block "fuzz".
func fuzzStore(t *testing.T, obj []byte) blockmerge.Store {
	s := blockmerge.NewMemStore()
	if err := s.Put(context.Background(), "blocks/fuzz", bytes.NewReader(obj)); err != nil {
		t.Fatal(err)
	}
	return s
}

// FuzzFooter feeds the footer decoder and the index checks arbitrary
// footers behind a valid trailer (length, CRC-32C, version, magic), with
// arbitrary section bytes before them: mutations of whole blocks rarely
// get past the footer's checksum. Garbage must never panic; a footer that
// opens must describe the object it was read from.
func FuzzFooter(f *testing.F) {
	for _, seed := range footerSeeds(f) {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, body, footer []byte) {
		ctx := context.Background()
		obj := assemble(body, footer)
		s := fuzzStore(t, obj)
		r, err := blockmerge.Open(ctx, s, "fuzz")
		if err != nil {
			return
		}
		meta := r.Meta()
		if err := meta.Validate(); err != nil {
			t.Fatalf("opened block with invalid metadata: %v", err)
		}
		if meta.Size != int64(len(obj)) || meta.ID != "fuzz" {
			t.Fatalf("opened block of size %d, id %q; object has %d bytes", meta.Size, meta.ID, len(obj))
		}
		end := int64(8)
		for _, d := range blockmerge.Datasets(r) {
			if d.Offset != end || d.Size <= 0 {
				t.Fatalf("dataset %s at %d (+%d), expected at %d", d.Name, d.Offset, d.Size, end)
			}
			end = d.Offset + d.Size
		}
		if end != int64(8+len(body)) {
			t.Fatalf("sections end at %d, footer starts at %d", end, 8+len(body))
		}
		// Streaming every dataset must end cleanly or with an error.
		if _, err := blockmerge.Verify(ctx, s, "fuzz"); err == nil {
			for _, d := range blockmerge.Datasets(r) {
				it, err := blockmerge.DatasetAt(r, ctx, slices.IndexFunc(blockmerge.Datasets(r), func(x blockmerge.DatasetInfo) bool { return x.Offset == d.Offset }))
				if err != nil {
					t.Fatal(err)
				}
				requireRecords(t, it, d)
			}
		}
	})
}

// requireRecords streams it to its end and fails the test unless it ends
// cleanly after as many records as the index gives d.
func requireRecords(t *testing.T, it *blockmerge.DatasetIterator, d blockmerge.DatasetInfo) {
	t.Helper()
	n := int64(0)
	for it.Next() {
		n++
	}
	if it.Err() != nil || n != d.Records {
		t.Fatalf("dataset %s: %d records, index says %d, err %v", d.Name, n, d.Records, it.Err())
	}
}

// assemble builds a block object from section bytes and a footer, with a
// valid header and trailer.
func assemble(body, footer []byte) []byte {
	obj := []byte("CKBK\x01\x00\x00\x00")
	obj = append(obj, body...)
	obj = append(obj, footer...)
	obj = binary.LittleEndian.AppendUint32(obj, uint32(len(footer)))
	obj = binary.LittleEndian.AppendUint32(obj, crc32.Checksum(footer, crc32.MakeTable(crc32.Castagnoli)))
	return append(obj, "\x01\x00\x00\x00CKBK"...)
}

// footerSeeds are FuzzFooter's seeds: the sections and footers of the
// valid blocks of readerSeeds.
func footerSeeds(t testing.TB) [][2][]byte {
	var out [][2][]byte
	for _, b := range readerSeeds(t)[:3] {
		flen := int(binary.LittleEndian.Uint32(b[len(b)-16:]))
		fstart := len(b) - 16 - flen
		body, footer := b[8:fstart], b[fstart:len(b)-16]
		require.Equal(t, b, assemble(body, footer), "assemble does not rebuild a valid block")
		out = append(out, [2][]byte{body, footer})
	}
	return out
}

// FuzzFileStoreKey puts an object under an arbitrary key into a
// filesystem store: either the key is refused with ErrInvalidKey, or the
// object is stored inside the root, read back whole and deleted, and
// nothing ever appears outside the root.
func FuzzFileStoreKey(f *testing.F) {
	for _, k := range append([]string{"a", "blocks/x/1/0", "a/b/c", "../x", "a/../../x", "/etc/x", "a\\b", ".ck-tmp-1-1"}, storetest.InvalidKeys...) {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		ctx := context.Background()
		base := t.TempDir()
		root := filepath.Join(base, "root")
		s := openFileStore(t, root, blockmerge.WithoutSync())
		if err := s.Put(ctx, key, strings.NewReader("data")); err != nil {
			if !errors.Is(err, blockmerge.ErrInvalidKey) {
				t.Fatalf("Put(%q): %v, not ErrInvalidKey", key, err)
			}
		} else {
			if b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(key))); err != nil || string(b) != "data" {
				t.Fatalf("Put(%q): file under the root holds %q, %v", key, b, err)
			}
			if got := listKeys(t, s, ""); !slices.Equal(got, []string{key}) {
				t.Fatalf("Put(%q): List gives %q", key, got)
			}
			if err := s.Delete(ctx, key); err != nil {
				t.Fatalf("Delete(%q): %v", key, err)
			}
		}
		entries, err := os.ReadDir(base)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 1 || entries[0].Name() != "root" {
			t.Fatalf("Put(%q) created %d entries beside the root", key, len(entries))
		}
		if rest, _ := os.ReadDir(root); len(rest) != 0 {
			t.Fatalf("Put(%q) + Delete left %d entries in the root", key, len(rest))
		}
	})
}

// readerSeeds are FuzzReader's seeds: valid blocks (so that mutations
// reach the footer decoder and the pages), and broken ones.
func readerSeeds(t testing.TB) [][]byte {
	ctx := context.Background()
	s := blockmerge.NewMemStore()
	var big []blockmerge.Record
	for i := range 60 {
		big = append(big, rec(fmt.Sprintf("key-%02d", i), int64(i*1000-7), strings.Repeat("v", i)))
	}
	_, err := blockmerge.WriteBlock(ctx, s, blockmerge.BlockInfo{ID: "fuzz", Shard: 1}, []blockmerge.Dataset{
		{Tenant: "t1", Name: "a", Records: []blockmerge.Record{rec("k", 1, "v"), rec("k", 2, "")}},
		{Tenant: "t1", Name: "b", Records: big},
		{Tenant: "t2", Name: "a", Records: []blockmerge.Record{rec("", -5, "x")}},
	}, blockmerge.WithPageSize(blockmerge.MinPageSize))
	require.NoError(t, err)
	multi := objectBytes(t, s, "blocks/fuzz")
	_, err = blockmerge.WriteBlock(ctx, s, blockmerge.BlockInfo{ID: "fuzz", Tenant: "acme", Level: 3}, []blockmerge.Dataset{
		{Name: "d", Records: []blockmerge.Record{rec("a", 1, "b")}},
	})
	require.NoError(t, err)
	single := objectBytes(t, s, "blocks/fuzz")
	_, err = blockmerge.WriteBlock(ctx, s, blockmerge.BlockInfo{ID: "fuzz", Tenant: "acme"}, nil)
	require.NoError(t, err)
	empty := objectBytes(t, s, "blocks/fuzz")

	flipped := bytes.Clone(multi)
	flipped[len(flipped)-40] ^= 1
	hugeFooter := bytes.Clone(single)
	binary.LittleEndian.PutUint32(hugeFooter[len(hugeFooter)-16:], 1<<30)
	return [][]byte{
		multi, single, empty,
		multi[:len(multi)/2],
		multi[len(multi)-16:],
		flipped,
		hugeFooter,
		{},
		[]byte("CKBK\x01\x00\x00\x00"),
	}
}

// pagesSeeds are FuzzPages's seeds: the first page of a valid block.
func pagesSeeds(t testing.TB) [][2]any {
	b := readerSeeds(t)[0]
	plen := binary.LittleEndian.Uint32(b[8:])
	count := binary.LittleEndian.Uint32(b[12:])
	return [][2]any{{b[16 : 16+plen], count}}
}

func corpusFile(args ...any) []byte {
	var sb strings.Builder
	sb.WriteString("go test fuzz v1\n")
	for _, a := range args {
		switch v := a.(type) {
		case []byte:
			fmt.Fprintf(&sb, "[]byte(%s)\n", strconv.Quote(string(v)))
		case uint32:
			fmt.Fprintf(&sb, "uint32(%d)\n", v)
		default:
			panic(fmt.Sprintf("corpus value of type %T", a))
		}
	}
	return []byte(sb.String())
}

// TestFuzzCorpus checks that the committed seed corpus is the one the
// current format produces (run with -update-corpus to rewrite it).
func TestFuzzCorpus(t *testing.T) {
	want := map[string][]byte{}
	for i, seed := range readerSeeds(t) {
		want[filepath.Join("FuzzReader", fmt.Sprintf("seed-%02d", i))] = corpusFile(seed)
	}
	for i, seed := range footerSeeds(t) {
		want[filepath.Join("FuzzFooter", fmt.Sprintf("seed-%02d", i))] = corpusFile(seed[0], seed[1])
	}
	for i, seed := range pagesSeeds(t) {
		want[filepath.Join("FuzzPages", fmt.Sprintf("seed-%02d", i))] = corpusFile(seed[0], seed[1])
	}
	dir := filepath.Join("testdata", "fuzz")
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range want {
			if !yield(n) {
				return
			}
		}
	})
	for _, name := range names {
		path := filepath.Join(dir, name)
		if *updateCorpus {
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
			require.NoError(t, os.WriteFile(path, want[name], 0o644))
			continue
		}
		got, err := os.ReadFile(path)
		require.NoError(t, err, "missing seed: run go test -run TestFuzzCorpus -update-corpus")
		require.Equal(t, string(want[name]), string(got), "stale seed %s: run go test -run TestFuzzCorpus -update-corpus", name)
	}
}
