package prom_test

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/metrics/prom"
)

// BenchmarkFSMGather measures a scrape of a state machine holding 100,000
// queued level-0 blocks over 1,000 tenants × 4 shards: Stats (under the
// state machine's lock) plus building the metrics, through a registry's
// Gather, with and without tenants; it reports the series gathered. The
// "stats" sub-benchmark measures raftfsm.FSM.Stats alone: the part that
// holds the state machine's lock.
func BenchmarkFSMGather(b *testing.B) {
	n := newNode(b)
	const perBatch = 1000
	for i := range 100 {
		bs := make([]ck.BlockMeta, 0, perBatch)
		for j := range perBatch {
			bl := blocks(fmt.Sprintf("b%03d-%04d", i, j), fmt.Sprintf("tenant-%04d", j%1000), uint32(j%4), 1, 100)[0]
			bs = append(bs, bl)
		}
		n.addBlocks(bs...)
	}
	b.Run("stats", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = n.f.Stats()
		}
	})
	for _, tenants := range []bool{true, false} {
		b.Run(fmt.Sprintf("tenants=%t", tenants), func(b *testing.B) {
			var opts []prom.Option
			if !tenants {
				opts = append(opts, prom.WithoutTenants())
			}
			reg := prometheus.NewRegistry()
			reg.MustRegister(prom.NewFSMCollector(n.f.Stats, opts...))
			var series int
			b.ReportAllocs()
			for b.Loop() {
				mfs, err := reg.Gather()
				if err != nil {
					b.Fatal(err)
				}
				series = 0
				for _, mf := range mfs {
					series += len(mf.GetMetric())
				}
			}
			b.ReportMetric(float64(series), "series")
		})
	}
}
