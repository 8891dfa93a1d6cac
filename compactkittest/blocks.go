package compactkittest

import (
	"fmt"
	"strings"
	"time"

	"pgregory.net/rapid"

	ck "github.com/compactkit/compactkit"
)

// Space is where generated blocks live. Zero fields take defaults.
type Space struct {
	// Tenants are the blocks' tenants (default "acme" and "globex").
	Tenants []string
	// Shards are the blocks' shards (default 0).
	Shards []uint32
	// Levels are the blocks' levels (default 0).
	Levels []uint32
	// Start is the beginning of the blocks' time window, in unix
	// nanoseconds (default 2023-11-14T22:13:20Z), and Span its length
	// (default one hour).
	Start int64
	Span  time.Duration
}

const defaultStart = int64(1_700_000_000) * int64(time.Second)

func (s Space) withDefaults() Space {
	if len(s.Tenants) == 0 {
		s.Tenants = []string{"acme", "globex"}
	}
	if len(s.Shards) == 0 {
		s.Shards = []uint32{0}
	}
	if len(s.Levels) == 0 {
		s.Levels = []uint32{0}
	}
	if s.Start == 0 {
		s.Start = defaultStart
	}
	if s.Span <= 0 {
		s.Span = time.Hour
	}
	return s
}

// Name generates valid tenant, dataset and worker names (lower-case ASCII
// letters, digits, '.', '_' and '-', at most 12 bytes).
func Name() *rapid.Generator[string] {
	return rapid.StringMatching(`[a-z0-9][a-z0-9._-]{0,11}`)
}

// ID generates valid block IDs: one to three '/'-separated segments of
// ASCII letters, digits, '_' and '-'.
func ID() *rapid.Generator[string] {
	seg := rapid.StringMatching(`[A-Za-z0-9][A-Za-z0-9_-]{0,9}`)
	return rapid.Custom(func(t *rapid.T) string {
		return strings.Join(rapid.SliceOfN(seg, 1, 3).Draw(t, "segments"), "/")
	})
}

// Dataset generates valid dataset metadata of the tenant (empty: the
// block's) inside the time range [minT, maxT], minT ≤ maxT.
func Dataset(tenant string, minT, maxT int64) *rapid.Generator[ck.DatasetMeta] {
	return rapid.Custom(func(t *rapid.T) ck.DatasetMeta {
		d := ck.DatasetMeta{
			Tenant:  tenant,
			Name:    Name().Draw(t, "name"),
			Size:    rapid.Int64Range(0, 1<<30).Draw(t, "size"),
			Records: rapid.Int64Range(0, 1<<20).Draw(t, "records"),
			MinTime: rapid.Int64Range(minT, maxT).Draw(t, "min"),
		}
		d.MaxTime = rapid.Int64Range(d.MinTime, maxT).Draw(t, "max")
		return d
	})
}

// Block generates valid block metadata in the space: a tenant, shard and
// level of the space's, a time range inside its window, and one to three
// datasets of distinct names inside the block's range, whose sizes add up
// to the block's.
func Block(s Space) *rapid.Generator[ck.BlockMeta] {
	s = s.withDefaults()
	return rapid.Custom(func(t *rapid.T) ck.BlockMeta {
		span := int64(s.Span)
		minT := s.Start + rapid.Int64Range(0, span).Draw(t, "offset")
		b := ck.BlockMeta{
			ID:      ID().Draw(t, "id"),
			Tenant:  rapid.SampledFrom(s.Tenants).Draw(t, "tenant"),
			Shard:   rapid.SampledFrom(s.Shards).Draw(t, "shard"),
			Level:   rapid.SampledFrom(s.Levels).Draw(t, "level"),
			MinTime: minT,
			MaxTime: minT + rapid.Int64Range(0, s.Start+span-minT).Draw(t, "length"),
		}
		n := rapid.IntRange(1, 3).Draw(t, "datasets")
		for i := range n {
			d := Dataset("", b.MinTime, b.MaxTime).Draw(t, "dataset")
			d.Name = fmt.Sprintf("%s-%d", d.Name, i) // distinct
			b.Size += d.Size
			b.Datasets = append(b.Datasets, d)
		}
		return b
	})
}

// Blocks generates between minLen and maxLen valid blocks of the space
// with distinct IDs.
func Blocks(s Space, minLen, maxLen int) *rapid.Generator[[]ck.BlockMeta] {
	return rapid.SliceOfNDistinct(Block(s), minLen, maxLen, func(b ck.BlockMeta) string { return b.ID })
}
