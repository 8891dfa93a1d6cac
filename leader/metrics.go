package leader

import (
	"slices"
	"sync"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/raftfsm"
)

// Histogram counts observations in buckets: Counts[i] is the number of
// observations at most Bounds[i] (cumulative, as Prometheus histograms
// are), Count and Sum those of all of them.
type Histogram struct {
	Bounds []float64
	Counts []uint64
	Count  uint64
	Sum    float64
}

func newHistogram(bounds ...float64) Histogram {
	return Histogram{Bounds: bounds, Counts: make([]uint64, len(bounds))}
}

func (h *Histogram) observe(v float64) {
	for i, b := range h.Bounds {
		if v <= b {
			h.Counts[i]++
		}
	}
	h.Count++
	h.Sum += v
}

func (h Histogram) clone() Histogram {
	h.Bounds, h.Counts = slices.Clone(h.Bounds), slices.Clone(h.Counts)
	return h
}

// Metrics is what a service measured while it led, by its own clock:
// leader-local, reset when the process restarts, and only on the node
// that served the polls — what alerting needs beside the replicated
// statistics ([raftfsm.FSM.Stats]).
type Metrics struct {
	// PollSeconds is the latency of the polls answered.
	PollSeconds Histogram
	// JobSeconds is how long compaction jobs took from the assignment
	// this service made to the completion it committed.
	JobSeconds Histogram
	// LastCompletion is when this service last committed a completed
	// compaction job of each level (the level of the job's sources).
	LastCompletion map[uint32]time.Time
}

// metrics is the service's measuring state.
type metrics struct {
	mu       sync.Mutex
	poll     Histogram
	job      Histogram
	last     map[uint32]time.Time
	assigned map[string]time.Time // job → when this service assigned it
}

func newMetrics() *metrics {
	return &metrics{
		poll:     newHistogram(.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10),
		job:      newHistogram(1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600),
		last:     map[uint32]time.Time{},
		assigned: map[string]time.Time{},
	}
}

// Metrics returns a copy of what the service measured.
func (s *Service) Metrics() Metrics {
	m := s.metrics
	m.mu.Lock()
	defer m.mu.Unlock()
	out := Metrics{PollSeconds: m.poll.clone(), JobSeconds: m.job.clone(), LastCompletion: map[uint32]time.Time{}}
	for l, t := range m.last {
		out.LastCompletion[l] = t
	}
	return out
}

// measurePoll records an answered poll: its latency and the jobs it
// assigned and ended.
func (s *Service) measurePoll(start time.Time, resp *ck.PollResponse) {
	now := s.o.clock()
	m := s.metrics
	m.mu.Lock()
	defer m.mu.Unlock()
	m.poll.observe(now.Sub(start).Seconds())
	for _, r := range resp.Jobs {
		switch r.Outcome {
		case ck.OutcomeAssigned:
			m.assigned[r.Job] = now
		case ck.OutcomeRenewed:
		default:
			if t, ok := m.assigned[r.Job]; ok && r.Outcome == ck.OutcomeCompleted {
				m.job.observe(now.Sub(t).Seconds())
			}
			delete(m.assigned, r.Job)
		}
	}
}

// measureCompletions records the completions an applied poll committed.
func (s *Service) measureCompletions(res *raftfsm.Result) {
	now := s.o.clock()
	m := s.metrics
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range res.Changes {
		if c.Applied && c.Kind == ck.ChangeComplete && c.Replace != nil && c.Replace.Applied {
			m.last[c.Level] = now
		}
	}
}
