package prom_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/metrics/prom"
)

func TestLeaderCollector(t *testing.T) {
	m := leader.Metrics{
		PollSeconds:    leader.Histogram{Bounds: []float64{.01, .1}, Counts: []uint64{3, 5}, Count: 6, Sum: .9},
		JobSeconds:     leader.Histogram{Bounds: []float64{60}, Counts: []uint64{2}, Count: 2, Sum: 50},
		LastCompletion: map[uint32]time.Time{1: time.Unix(1_700_000_100, 0), 0: time.Unix(1_700_000_000, 0)},
	}
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(prom.NewLeaderCollector(func() leader.Metrics { return m })))
	n, err := testutil.GatherAndCount(reg)
	require.NoError(t, err)
	require.Equal(t, 4, n) // two histograms, two levels
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		switch mf.GetName() {
		case "compactkit_leader_poll_duration_seconds":
			require.Equal(t, uint64(6), mf.GetMetric()[0].GetHistogram().GetSampleCount())
		case "compactkit_leader_last_completion_timestamp_seconds":
			require.Len(t, mf.GetMetric(), 2)
			require.Equal(t, 1_700_000_000.0, mf.GetMetric()[0].GetGauge().GetValue())
		}
	}
	require.NoError(t, prometheus.NewPedanticRegistry().Register(prom.NewLeaderCollector(nil)))
}
