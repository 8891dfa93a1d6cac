package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/fencing"
)

// Fixture of MergeBenchmark: 20 source blocks × 5 datasets of records with
// 16-byte keys and 100-byte values, about 100 MB in all.
const (
	benchSources     = 20
	benchDatasets    = 5
	benchPerDataset  = 7900
	benchKeySize     = 16
	benchValueSize   = 100
	benchBaseTime    = int64(1_700_000_000_000_000_000)
	benchTenant      = "tenant"
	benchSourceLevel = 1
)

// writeBenchSources writes the fixture to s and returns the plan merging
// it and the total size of the sources.
func writeBenchSources(b *testing.B, s blockmerge.Store) (*compactkit.JobPlan, int64) {
	ctx := context.Background()
	plan := &compactkit.JobPlan{Name: "bench", Tenant: benchTenant, Level: benchSourceLevel}
	var total int64
	for src := range benchSources {
		rng := rand.New(rand.NewPCG(uint64(src), 42))
		id := fmt.Sprintf("src-%02d", src)
		datasets := make([]blockmerge.Dataset, benchDatasets)
		for d := range datasets {
			buf := make([]byte, benchPerDataset*(benchKeySize+benchValueSize))
			for i := range buf {
				buf[i] = byte(rng.Uint32())
			}
			recs := make([]blockmerge.Record, benchPerDataset)
			for i := range recs {
				kv := buf[i*(benchKeySize+benchValueSize):]
				recs[i] = blockmerge.Record{
					Key:       kv[:benchKeySize],
					Timestamp: benchBaseTime + int64(src*benchPerDataset+i),
					Value:     kv[benchKeySize : benchKeySize+benchValueSize],
				}
			}
			datasets[d] = blockmerge.Dataset{Name: fmt.Sprintf("dataset-%d", d), Records: recs}
		}
		meta, err := blockmerge.WriteBlock(ctx, s, blockmerge.BlockInfo{ID: id, Tenant: benchTenant, Level: benchSourceLevel}, datasets)
		if err != nil {
			b.Fatal(err)
		}
		plan.Sources = append(plan.Sources, id)
		total += meta.Size
	}
	return plan, total
}

// copySources copies every source object through the store (Get + Put to
// a new key) and returns how long that took.
func copySources(b *testing.B, s blockmerge.Store, plan *compactkit.JobPlan) time.Duration {
	ctx := context.Background()
	start := time.Now()
	for _, id := range plan.Sources {
		rc, err := s.Get(ctx, compactkit.ObjectKey(id))
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Put(ctx, "copy/"+id, rc); err != nil {
			b.Fatal(err)
		}
		rc.Close()
	}
	d := time.Since(start)
	if err := s.DeleteByPrefix(ctx, "copy/"); err != nil {
		b.Fatal(err)
	}
	return d
}

// MergeBenchmark merges 20 blocks (5 datasets each, 16-byte keys and
// 100-byte values, ~100 MB) through s, a new empty store. It reports MB/s
// (source bytes per second of merge) and x-copy: the merge time divided by
// the time to copy the same bytes through the same store (Get + Put of
// each source object), measured in each iteration. ns/op is the merge
// alone. A store's own benchmark calls it.
func MergeBenchmark(b *testing.B, s blockmerge.Store) {
	ctx := context.Background()
	plan, total := writeBenchSources(b, s)
	b.Logf("sources: %d blocks, %.1f MB", len(plan.Sources), float64(total)/1e6)

	var merging, copying time.Duration
	var outBytes int64
	token := fencing.Token(0)
	for b.Loop() {
		b.StopTimer()
		copying += copySources(b, s, plan)
		token++
		b.StartTimer()

		start := time.Now()
		outs, err := blockmerge.Merge(ctx, s, plan, token)
		merging += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}

		b.StopTimer()
		outBytes = 0
		for _, o := range outs {
			outBytes += o.Size
		}
		if err := s.DeleteByPrefix(ctx, compactkit.AttemptPrefix(plan.Name, token)); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	n := float64(b.N)
	b.ReportMetric(float64(total)/1e6/(merging.Seconds()/n), "MB/s")
	b.ReportMetric(merging.Seconds()/copying.Seconds(), "x-copy")
	b.ReportMetric(float64(total)/1e6/(copying.Seconds()/n), "copy-MB/s")
	if outBytes < total/2 {
		b.Fatalf("outputs of %d bytes for %d bytes of sources", outBytes, total)
	}
}
