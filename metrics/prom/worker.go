package prom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/compactkit/compactkit/worker"
)

// workerCollector is the collector NewWorkerCollector returns.
type workerCollector struct {
	stats func() worker.Stats

	counters          []counter[worker.Stats]
	jobsEnded         *prometheus.Desc
	jobsHeld, running *prometheus.Desc
}

// NewWorkerCollector returns a collector for a compactkit worker
// (worker.Worker). It calls stats (typically the method value w.Stats) at
// every scrape, reads one snapshot and exports what it returns; it starts
// no goroutine and registers itself nowhere. To export several workers of
// one process on one registry, register one collector per worker, each
// with WithConstLabels(prometheus.Labels{"worker": w.ID()}). Option WithConstLabels adds fixed labels.
func NewWorkerCollector(stats func() worker.Stats, opts ...Option) prometheus.Collector {
	o := buildOptions(opts)
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(namespace, "worker", name), help, labels, o.constLabels)
	}
	wc := func(name, help string, get func(worker.Stats) uint64) counter[worker.Stats] {
		return counter[worker.Stats]{d(name, help), get}
	}
	return &workerCollector{
		stats: stats,
		counters: []counter[worker.Stats]{
			wc("polls_total", "Poll requests answered by the leader.", func(s worker.Stats) uint64 { return s.Polls }),
			wc("poll_retries_total", "Poll requests that failed in transport and were sent again with the same sequence number.", func(s worker.Stats) uint64 { return s.PollRetries }),
			wc("bad_responses_total", "Poll responses that failed validation and were ignored.", func(s worker.Stats) uint64 { return s.BadResponses }),
			wc("rejected_requests_total", "Poll requests the leader rejected as invalid.", func(s worker.Stats) uint64 { return s.Rejections }),
			wc("lease_renewals_total", "Leases the leader renewed at the request of the worker's lease keepers.", func(s worker.Stats) uint64 { return s.Renewals }),
			wc("jobs_assigned_total", "Jobs the leader assigned to the worker.", func(s worker.Stats) uint64 { return s.JobsAssigned }),
			wc("jobs_started_total", "Jobs the worker started running.", func(s worker.Stats) uint64 { return s.JobsStarted }),
			wc("tombstones_deleted_total", "Tombstones whose objects the worker deleted.", func(s worker.Stats) uint64 { return s.TombstonesDeleted }),
			wc("blocks_written_total", "Output blocks written by merges that succeeded.", func(s worker.Stats) uint64 { return s.BlocksWritten }),
			wc("written_bytes_total", "Bytes of the output blocks written by merges that succeeded.", func(s worker.Stats) uint64 { return s.BytesWritten }),
		},
		jobsEnded: d("jobs_ended_total", "Jobs that ended, by outcome: completed (success committed), failed (failure accepted), released (release accepted), lost (dropped without the leader accepting a report). Assigned = sum of ended + held.", "outcome"),
		jobsHeld:  d("jobs_held", "Jobs the worker holds now: running, or ended with a report not yet answered."),
		running:   d("jobs_running", "Jobs running now (including cancelled merges that have not returned yet)."),
	}
}

// Describe sends the descriptors of every metric the collector exports.
func (c *workerCollector) Describe(ch chan<- *prometheus.Desc) {
	describe(ch, descs(c.counters)...)
	describe(ch, c.jobsEnded, c.jobsHeld, c.running)
}

// Collect reads one stats snapshot and sends every metric.
func (c *workerCollector) Collect(ch chan<- prometheus.Metric) {
	collect(ch, c.stats, c.jobsHeld, func(s worker.Stats) { c.send(ch, s) })
}

// send sends every metric of the snapshot s.
func (c *workerCollector) send(ch chan<- prometheus.Metric, s worker.Stats) {
	for _, x := range c.counters {
		emit(ch, x.desc, prometheus.CounterValue, float64(x.get(s)))
	}
	for _, e := range []struct {
		outcome string
		v       uint64
	}{{"completed", s.JobsCompleted}, {"failed", s.JobsFailed}, {"released", s.JobsReleased}, {"lost", s.JobsLost}} {
		emit(ch, c.jobsEnded, prometheus.CounterValue, float64(e.v), e.outcome)
	}
	emit(ch, c.jobsHeld, prometheus.GaugeValue, float64(s.JobsHeld))
	emit(ch, c.running, prometheus.GaugeValue, float64(s.JobsRunning))
}
