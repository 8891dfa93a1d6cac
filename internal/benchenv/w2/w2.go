// Package w2 holds what the benchmarks of the W2 poll workload share
// (raftfsm.BenchmarkW2Poll and rpc.BenchmarkW2Poll): the state machine's
// configuration, the blocks of its queue, and the outputs a benchmark
// worker reports for the jobs it completes.
package w2

import (
	"fmt"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/raftfsm"
)

// Config returns the state machine's configuration: only full batches
// are planned (the queue stays), no tombstone rides on a job, the
// scheduler's queue and a poll's slots are unbounded, and leases last an
// hour.
func Config() raftfsm.Config {
	cfg := raftfsm.DefaultConfig()
	cfg.Planner.Levels[0].MaxAge = 0
	cfg.Planner.Levels[1].MaxAge = 0
	cfg.Planner.TombstonesPerJob = 0
	cfg.Scheduler.MaxQueueSize = 0
	cfg.Scheduler.MaxSlotsPerRequest = 1 << 20
	cfg.Scheduler.LeaseDuration = time.Hour
	return cfg
}

// Block returns block i of the queue: ID prefix and i in 8 digits, tenant
// i mod 10, shard i/10 mod 64, a second starting i ms after t0, 5,000
// bytes in 5 datasets of 100 records.
func Block(prefix string, i int, t0 int64) ck.BlockMeta {
	minT := t0 + int64(i)*int64(time.Millisecond)
	maxT := minT + int64(time.Second)
	ds := make([]ck.DatasetMeta, 5)
	for d := range ds {
		ds[d] = ck.DatasetMeta{Name: fmt.Sprintf("service-%d", d), Size: 1000, Records: 100, MinTime: minT, MaxTime: maxT}
	}
	return ck.BlockMeta{
		ID: fmt.Sprintf("%s%08d", prefix, i), Tenant: fmt.Sprintf("tenant-%d", i%10), Shard: uint32(i/10) % 64,
		MinTime: minT, MaxTime: maxT, Size: 5000, Datasets: ds,
	}
}

// Span is what a worker needs of a source block to write an output.
type Span struct{ MinTime, MaxTime, Size int64 }

// Spans holds the span of every live block, so that a benchmark worker
// builds its outputs without reading the index (a view read between polls
// would make the next Apply copy, on write, the nodes it read).
type Spans map[string]Span

// Output returns the output of a completed job as the worker would have
// written it — one block of one dataset spanning the sources — and
// records its span in place of the sources'.
func (s Spans) Output(plan *ck.JobPlan, token fencing.Token) ck.BlockMeta {
	out := Span{MinTime: 1<<63 - 1}
	for _, id := range plan.Sources {
		src := s[id]
		out.MinTime, out.MaxTime = min(out.MinTime, src.MinTime), max(out.MaxTime, src.MaxTime)
		out.Size += src.Size
		delete(s, id)
	}
	m := ck.BlockMeta{
		ID: ck.OutputID(plan.Name, token, 0), Tenant: plan.Tenant, Shard: plan.Shard, Level: plan.Level + 1,
		MinTime: out.MinTime, MaxTime: out.MaxTime, Size: out.Size,
		Datasets: []ck.DatasetMeta{{Name: "ds", Size: out.Size, Records: 10, MinTime: out.MinTime, MaxTime: out.MaxTime}},
	}
	s[m.ID] = out
	return m
}
