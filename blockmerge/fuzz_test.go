package blockmerge_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/compactkit/compactkit/blockmerge"
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
		s := blockmerge.NewMemStore()
		if err := s.Put(ctx, "blocks/fuzz", bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
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
		for _, d := range r.Datasets() {
			it, err := r.Dataset(ctx, meta.DatasetTenant(&d.DatasetMeta), d.Name)
			if err != nil {
				t.Fatal(err)
			}
			n := int64(0)
			for it.Next() {
				n++
			}
			if it.Err() != nil || n != d.Records {
				t.Fatalf("dataset %s: %d records, index says %d, err %v", d.Name, n, d.Records, it.Err())
			}
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
