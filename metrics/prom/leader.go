package prom

import (
	"slices"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/compactkit/compactkit/leader"
)

// leaderCollector is the collector NewLeaderCollector returns.
type leaderCollector struct {
	metrics                 func() leader.Metrics
	pollSeconds, jobSeconds *prometheus.Desc
	lastCompletion          *prometheus.Desc
}

// NewLeaderCollector returns a collector for what a leader service measured
// (leader.Service.Metrics): poll latency, job duration and the last
// completion per level, by the leader's clock. It calls metrics (typically
// the method value svc.Metrics) at every scrape, reads one snapshot and
// starts no goroutine. Option WithConstLabels adds
// fixed labels.
func NewLeaderCollector(metrics func() leader.Metrics, opts ...Option) prometheus.Collector {
	o := buildOptions(opts)
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(namespace, "leader", name), help, labels, o.constLabels)
	}
	return &leaderCollector{
		metrics:        metrics,
		pollSeconds:    d("poll_duration_seconds", "Latency of the polls this leader answered."),
		jobSeconds:     d("job_duration_seconds", "Time from the assignment of a compaction job by this leader to the completion it committed."),
		lastCompletion: d("last_completion_timestamp_seconds", "When this leader last committed a completed compaction job of the level (Unix seconds). time() minus this is how long a level has gone without compaction.", "level"),
	}
}

// Describe implements [prometheus.Collector].
func (c *leaderCollector) Describe(ch chan<- *prometheus.Desc) {
	describe(ch, c.pollSeconds, c.jobSeconds, c.lastCompletion)
}

// Collect implements prometheus.Collector.
func (c *leaderCollector) Collect(ch chan<- prometheus.Metric) {
	collect(ch, c.metrics, c.pollSeconds, func(m leader.Metrics) { c.send(ch, m) })
}

// send sends every metric of the snapshot m.
func (c *leaderCollector) send(ch chan<- prometheus.Metric, m leader.Metrics) {
	for _, h := range []struct {
		d *prometheus.Desc
		h leader.Histogram
	}{{c.pollSeconds, m.PollSeconds}, {c.jobSeconds, m.JobSeconds}} {
		buckets := make(map[float64]uint64, len(h.h.Bounds))
		for i, b := range h.h.Bounds {
			buckets[b] = h.h.Counts[i]
		}
		ch <- prometheus.MustNewConstHistogram(h.d, h.h.Count, h.h.Sum, buckets)
	}
	levels := make([]uint32, 0, len(m.LastCompletion))
	for l := range m.LastCompletion {
		levels = append(levels, l)
	}
	slices.Sort(levels)
	for _, l := range levels {
		ch <- prometheus.MustNewConstMetric(c.lastCompletion, prometheus.GaugeValue,
			float64(m.LastCompletion[l].UnixNano())/1e9, strconv.FormatUint(uint64(l), 10))
	}
}
