package blockmerge_test

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/fencing"
)

// genRecord draws records from a small space, so that sources overlap and
// identical records occur; some values are long enough to spill over
// pages.
func genRecord() *rapid.Generator[blockmerge.Record] {
	return rapid.Custom(func(t *rapid.T) blockmerge.Record {
		key := rapid.StringOfN(rapid.RuneFrom([]rune("xyz")), 0, 3, -1).Draw(t, "key")
		ts := rapid.Int64Range(-3, 3).Draw(t, "ts")
		val := strings.Repeat(rapid.SampledFrom([]string{"v", "w"}).Draw(t, "letter"), rapid.IntRange(0, 300).Draw(t, "len"))
		return blockmerge.Record{Key: []byte(key), Timestamp: ts, Value: []byte(val)}
	})
}

// TestMergeProperty: the outputs of a merge hold exactly the union of the
// sources' records (identical records collapsed), sorted, split by tenant,
// with exact footer statistics, and read back intact.
func TestMergeProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ctx := context.Background()
		s := blockmerge.NewMemStore()
		multiTenant := rapid.Bool().Draw(t, "level0")
		planTenant := ""
		if !multiTenant {
			planTenant = rapid.SampledFrom([]string{"t0", "t1"}).Draw(t, "tenant")
		}
		tenants := []string{"t0", "t1", "t2"}
		names := []string{"a", "b", "c"}
		pageSize := rapid.SampledFrom([]int{blockmerge.MinPageSize, 3000, blockmerge.DefaultPageSize}).Draw(t, "pageSize")

		// model: tenant → dataset name → records
		model := map[string]map[string][]blockmerge.Record{}
		nSources := rapid.IntRange(1, 5).Draw(t, "sources")
		var sources []string
		maxLevel := uint32(0)
		for i := range nSources {
			id := fmt.Sprintf("src-%d", i)
			level := uint32(0)
			if !multiTenant {
				level = rapid.Uint32Range(1, 3).Draw(t, "level")
			}
			maxLevel = max(maxLevel, level)
			var ds []blockmerge.Dataset
			hasData := false
			for _, tenant := range tenants {
				if !multiTenant && tenant != planTenant {
					continue
				}
				for _, name := range names {
					if !rapid.Bool().Draw(t, "has "+tenant+"/"+name) {
						continue
					}
					recs := rapid.SliceOfN(genRecord(), 0, 40).Draw(t, "records")
					ds = append(ds, blockmerge.Dataset{Tenant: tenant, Name: name, Records: recs})
					if len(recs) > 0 {
						hasData = true
						if model[tenant] == nil {
							model[tenant] = map[string][]blockmerge.Record{}
						}
						model[tenant][name] = append(model[tenant][name], recs...)
					}
				}
			}
			info := blockmerge.BlockInfo{ID: id, Tenant: planTenant, Shard: 4, Level: level}
			if multiTenant && !hasData {
				// A segment without a tenant must hold data.
				r := genRecord().Draw(t, "record")
				ds = append(ds, blockmerge.Dataset{Tenant: "t0", Name: "z", Records: []blockmerge.Record{r}})
				if model["t0"] == nil {
					model["t0"] = map[string][]blockmerge.Record{}
				}
				model["t0"]["z"] = append(model["t0"]["z"], r)
			}
			_, err := blockmerge.WriteBlock(ctx, s, info, ds, blockmerge.WithPageSize(pageSize))
			require.NoError(t, err)
			sources = append(sources, id)
		}

		token := fencing.Token(rapid.Uint64Range(1, 1<<40).Draw(t, "token"))
		plan := &compactkit.JobPlan{Name: "job", Tenant: planTenant, Shard: 4, Level: maxLevel, Sources: sources}
		outs, err := blockmerge.Merge(ctx, s, plan, token, blockmerge.WithPageSize(pageSize))
		require.NoError(t, err)

		wantTenants := slices.Sorted(func(yield func(string) bool) {
			for tenant := range model {
				if !yield(tenant) {
					return
				}
			}
		})
		if len(wantTenants) == 0 && planTenant != "" {
			wantTenants = []string{planTenant}
		}
		require.Len(t, outs, len(wantTenants))
		for n, o := range outs {
			require.NoError(t, o.Validate())
			require.Equal(t, compactkit.OutputID("job", token, n), o.ID)
			require.Equal(t, wantTenants[n], o.Tenant)
			require.Equal(t, uint32(4), o.Shard)
			require.Equal(t, maxLevel+1, o.Level)
			require.Equal(t, int64(len(objectBytes(t, s, compactkit.ObjectKey(o.ID)))), o.Size)
			v, err := blockmerge.Verify(ctx, s, o.ID)
			require.NoError(t, err)
			require.Equal(t, o, v, "footer metadata equals the returned metadata")

			got := readDatasets(t, s, o.ID)
			wantNames := slices.Sorted(func(yield func(string) bool) {
				for name := range model[o.Tenant] {
					if !yield(name) {
						return
					}
				}
			})
			require.Len(t, o.Datasets, len(wantNames))
			var minT, maxT int64
			for i, name := range wantNames {
				want := blockmerge.SortRecords(slices.Clone(model[o.Tenant][name]))
				require.Equal(t, want, got[o.Tenant+"/"+name], "%s/%s", o.Tenant, name)
				d := o.Datasets[i]
				require.Equal(t, name, d.Name)
				require.Empty(t, d.Tenant)
				require.Equal(t, int64(len(want)), d.Records)
				lo := slices.MinFunc(want, func(a, b blockmerge.Record) int { return cmp.Compare(a.Timestamp, b.Timestamp) }).Timestamp
				hi := slices.MaxFunc(want, func(a, b blockmerge.Record) int { return cmp.Compare(a.Timestamp, b.Timestamp) }).Timestamp
				require.Equal(t, lo, d.MinTime)
				require.Equal(t, hi, d.MaxTime)
				if i == 0 || lo < minT {
					minT = lo
				}
				if i == 0 || hi > maxT {
					maxT = hi
				}
			}
			require.Equal(t, minT, o.MinTime)
			require.Equal(t, maxT, o.MaxTime)
		}
		// Nothing else was written under the attempt's prefix.
		require.Len(t, listKeys(t, s, compactkit.AttemptPrefix("job", token)), len(outs))
	})
}
