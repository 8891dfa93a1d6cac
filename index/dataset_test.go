package index

import (
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// TestPackedDatasetsRoundTrip: packing is exact for any values, valid or
// not (restore checks the datasets it decoded, then packs them).
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
		b.setDatasets(ds)
		require.Equal(t, uint32(len(ds)), b.nds)
		require.Equal(t, ds, b.appendDatasets(nil))
		require.Equal(t, len(ds) == 0, b.ds == nil)
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
	b.setDatasets(ds)
	require.Len(t, b.packed(), 5*6)
}

func TestBlockTenants(t *testing.T) {
	b := &block{tenant: 7}
	require.Equal(t, []uint32{7}, b.tenants(nil))
	m := &block{}
	m.setDatasets([]dataset{{tenant: 3, name: 1}, {tenant: 2, name: 1}, {tenant: 3, name: 2}})
	require.Equal(t, []uint32{9, 3, 2}, m.tenants([]uint32{9}))
}
