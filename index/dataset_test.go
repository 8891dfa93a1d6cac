package index

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	ck "github.com/compactkit/compactkit"
)

// TestPackedDatasetsRoundTrip: packing is exact for any values, valid or
// not (restore packs what it decoded, then checks the block).
func TestPackedDatasetsRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := &block{minTime: rapid.Int64().Draw(t, "min"), maxTime: rapid.Int64().Draw(t, "max")}
		near := func(label string, base int64) int64 {
			if rapid.Bool().Draw(t, label+" equal") {
				return base
			}
			return rapid.Int64().Draw(t, label)
		}
		var ds []dataset
		for range rapid.IntRange(0, 40).Draw(t, "n") {
			ds = append(ds, dataset{
				tenant:  rapid.Uint32().Draw(t, "tenant"),
				name:    rapid.Uint32().Draw(t, "name"),
				size:    rapid.Int64().Draw(t, "size"),
				records: rapid.Int64().Draw(t, "records"),
				minTime: near("dmin", b.minTime),
				maxTime: near("dmax", b.maxTime),
			})
		}
		level := uint32(rapid.SampledFrom([]uint64{0, 1, 1<<32 - 1}).Draw(t, "level"))
		size := rapid.SampledFrom([]int64{0, 1, -1, rapid.Int64().Draw(t, "size")}).Draw(t, "size kind")
		b = newBlock(*b, level, size, ds)
		e := b.unpack()
		require.Equal(t, uint32(len(ds)), e.nds)
		require.Equal(t, level, e.level)
		require.Equal(t, size, e.size)
		require.Equal(t, size, b.size())
		require.Equal(t, ds, b.appendDatasets(nil))
		var read []dataset
		r := b.datasets()
		for d := (dataset{}); r.next(&d); {
			read = append(read, d)
		}
		require.Equal(t, ds, read)
		require.Equal(t, len(ds) == 0 && level == 0 && size == 0, b.ext == nil)
	})
}

// TestPackedDatasetsSize: the benchmark's datasets (no tenant, the block's
// range, sizes of kilobytes) take a few bytes each.
func TestPackedDatasetsSize(t *testing.T) {
	b := &block{minTime: 1e18, maxTime: 1e18 + 3600e9}
	ds := make([]dataset, 5)
	for i := range ds {
		ds[i] = dataset{name: uint32(i + 1), size: 200 << 10, records: 1000, minTime: b.minTime, maxTime: b.maxTime}
	}
	b = newBlock(*b, 1, 5<<20, ds)
	e := b.unpack()
	require.Len(t, e.ds, 5*6)
	// Before the datasets: the level, the size and the count.
	require.Equal(t, uintptr(1+4+1), uintptr(unsafe.Pointer(&e.ds[0]))-uintptr(unsafe.Pointer(b.ext)))
}

// TestBlockAllocation: a block's ID and packed bytes follow it in its
// allocation, one allocation in all up to 464 bytes of them; the block
// holds what it was given.
func TestBlockAllocation(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		id := rapid.StringN(0, 600, -1).Draw(t, "id")
		var ds []dataset
		for range rapid.IntRange(0, 30).Draw(t, "n") {
			ds = append(ds, dataset{name: rapid.Uint32().Draw(t, "name"), size: rapid.Int64().Draw(t, "size")})
		}
		f := block{id: id, minTime: 5, maxTime: 9, shard: 3, tenant: 2}
		var b *block
		allocs := testing.AllocsPerRun(1, func() { b = newBlock(f, 1, 7, ds) })
		ext := appendPacked(nil, 5, 9, 1, 7, ds)
		n := len(id) + len(ext)
		// Packing beyond 256 bytes grows its buffer.
		if n <= 464 && len(ext) <= 256 && allocs != 1 {
			t.Fatalf("%d bytes after the block (%d packed): %v allocations, want 1", n, len(ext), allocs)
		}
		if b.id != id || b.minTime != 5 || b.maxTime != 9 || b.shard != 3 || b.tenant != 2 || b.size() != 7 {
			t.Fatalf("block %+v", *b)
		}
		require.Equal(t, ds, b.appendDatasets(nil))
		if n <= 464 {
			base, end := uintptr(unsafe.Pointer(b)), uintptr(unsafe.Pointer(b))+unsafe.Sizeof(block{})+uintptr(n)
			if len(id) > 0 {
				if p := uintptr(unsafe.Pointer(unsafe.StringData(b.id))); p < base || p+uintptr(len(id)) > end {
					t.Fatalf("ID bytes at %#x, block at %#x", p, base)
				}
			}
			if b.ext != nil {
				if p := uintptr(unsafe.Pointer(b.ext)); p < base || p+uintptr(len(ext)) > end {
					t.Fatalf("packed bytes at %#x, block at %#x", p, base)
				}
			}
		}
	})
}

// TestBlockSize: a block holds what searches, scans and filters read in
// 48 bytes, a size class of the Go allocator; the rest is packed.
func TestBlockSize(t *testing.T) {
	require.Equal(t, uintptr(48), unsafe.Sizeof(block{}))
}

func TestBlockTenants(t *testing.T) {
	b := &block{tenant: 7}
	require.Equal(t, []uint32{7}, b.tenants(nil))
	m := newBlock(block{}, 0, 0, []dataset{{tenant: 3, name: 1}, {tenant: 2, name: 1}, {tenant: 3, name: 2}})
	require.Equal(t, []uint32{9, 3, 2}, m.tenants([]uint32{9}))
}

// TestTombstonesOwnTheirIDs: the tombstones of a replacement's sources,
// with records and without, and of retention, keep their targets in bytes
// of their own, not in the removed blocks' allocations (which they would
// keep alive until their deletion records expire).
func TestTombstonesOwnTheirIDs(t *testing.T) {
	for _, records := range []bool{false, true} {
		x := newIndex(Config{DedupHorizon: 1000, CleanupDelay: 10, CompletedRetention: 1000})
		x.SetRecords(records)
		var blocks []*block
		for i := range 6 {
			id := fmt.Sprintf("b%02d", i)
			require.NoError(t, x.Add(ck.Entry{Index: uint64(i + 1)}, 0, gblock(id, "acme", 0, 0, int64(i), 10+int64(i))))
			b, ok := x.s.get(id, nil)
			require.True(t, ok)
			blocks = append(blocks, b)
		}
		job := "acme.s0.l0.1.0123456789abcdef"
		out := gblock(ck.OutputID(job, 9, 0), "acme", 0, 1, 0, 20)
		r := x.Replace(ck.Entry{Index: 9}, 1, job, 9, []string{"b00", "b01", "b02"}, []ck.BlockMeta{*out})
		require.True(t, r.Applied, "%+v", r)
		require.Len(t, x.DropBefore(ck.Entry{Index: 10}, 2, "acme", false, 15), 2)
		for i, b := range blocks[:5] {
			tb, ok := x.s.getTomb(newKey(ck.TombstoneBlock, b.id), nil)
			require.True(t, ok, "block %d: no tombstone", i)
			p := uintptr(unsafe.Pointer(unsafe.StringData(tb.target)))
			base := uintptr(unsafe.Pointer(b))
			require.False(t, p >= base && p < base+unsafe.Sizeof(block{})+uintptr(len(b.id))+64,
				"records %t: tombstone of %s points into its block", records, b.id)
		}
	}
}
