package prom

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Option configures a collector made by NewFSMCollector or
// NewWorkerCollector.
type Option func(*options)

type options struct {
	constLabels prometheus.Labels
	noTenants   bool
	clock       func() time.Time
}

func buildOptions(opts []Option) options {
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// WithConstLabels adds labels with fixed values to every metric of the
// collector. Use it to tell apart several collectors of the same kind
// registered on one registry: one worker collector per worker
// (prometheus.Labels{"worker": w.ID()}), or one state machine collector per
// replica hosted in one process. The label names must not clash with the
// collector's own labels ("level", "status", "tenant", "state", "result",
// "outcome").
func WithConstLabels(labels prometheus.Labels) Option {
	return func(o *options) {
		if len(labels) == 0 {
			return
		}
		if o.constLabels == nil {
			o.constLabels = prometheus.Labels{}
		}
		for k, v := range labels {
			o.constLabels[k] = v
		}
	}
}

// WithoutTenants aggregates tenants away in the state machine collector:
// the index's live blocks and bytes are exported per level only
// (compactkit_index_live_blocks{level} and compactkit_index_live_bytes{level},
// summed over tenants) instead of per tenant and level. Use it when the
// number of tenants is large enough that a series per tenant and level
// would strain the monitoring system. It has no effect on the worker
// collector.
func WithoutTenants() Option {
	return func(o *options) { o.noTenants = true }
}

// WithClock makes the state machine collector compute the compaction lag
// and debt at the time clock returns at each scrape (typically time.Now)
// rather than at the state machine's log time. Log time only moves when an
// entry is applied: on a cluster where nothing is applied — ingest stopped
// and every worker gone — lag and debt measured in log time stand still,
// while measured by the clock they keep growing, which is what an alert or
// an autoscaler wants to see. A clock behind the log time is ignored (the
// log time is used). It has no effect on the worker collector.
func WithClock(clock func() time.Time) Option {
	return func(o *options) { o.clock = clock }
}
