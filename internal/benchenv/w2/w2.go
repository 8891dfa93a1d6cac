// Package w2 holds what the benchmarks of the W2 poll workload share
// (raftfsm.BenchmarkW2Poll and rpc.BenchmarkW2Poll): the state machine's
// configuration, the blocks of its queue, and the outputs a benchmark
// worker reports for the jobs it completes.
package w2

import (
	"fmt"
	"strconv"
	"strings"
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
// i mod 10, shard i/10 mod 64, 5 datasets of 100 records over its span
// ([BlockSpan]).
func Block(prefix string, i int, t0 int64) ck.BlockMeta {
	s := BlockSpan(i, t0)
	ds := make([]ck.DatasetMeta, 5)
	for d := range ds {
		ds[d] = ck.DatasetMeta{Name: fmt.Sprintf("service-%d", d), Size: s.Size / 5, Records: 100, MinTime: s.MinTime, MaxTime: s.MaxTime}
	}
	return ck.BlockMeta{
		ID: fmt.Sprintf("%s%08d", prefix, i), Tenant: fmt.Sprintf("tenant-%d", i%10), Shard: uint32(i/10) % 64,
		MinTime: s.MinTime, MaxTime: s.MaxTime, Size: s.Size, Datasets: ds,
	}
}

// Span is what a worker needs of a source block to write an output.
type Span struct{ MinTime, MaxTime, Size int64 }

// BlockSpan is the span of block i of the queue: a second starting i ms
// after t0, 5,000 bytes.
func BlockSpan(i int, t0 int64) Span {
	minT := t0 + int64(i)*int64(time.Millisecond)
	return Span{MinTime: minT, MaxTime: minT + int64(time.Second), Size: 5000}
}

// Spans knows the span of every live block — the queue's blocks "b%08d"
// from their IDs, the outputs a worker wrote from a map — so that a
// benchmark worker builds its outputs without reading the index (a view
// read between polls would make the next Apply copy, on write, the nodes
// it read) nor keeping a copy of every block.
type Spans struct {
	t0   int64
	outs map[string]Span
}

// NewSpans returns the spans of a queue built with Block("b", i, t0).
func NewSpans(t0 int64) *Spans { return &Spans{t0: t0, outs: map[string]Span{}} }

// span returns the span of a source block; it panics on a block neither
// the queue nor the worker wrote.
func (s *Spans) span(id string) Span {
	if sp, ok := s.outs[id]; ok {
		return sp
	}
	i, err := strconv.Atoi(strings.TrimPrefix(id, "b"))
	if err != nil || len(id) != 9 || id[0] != 'b' {
		panic("w2: a source neither the queue nor the worker wrote: " + id)
	}
	return BlockSpan(i, s.t0)
}

// Output returns the output of a completed job as the worker would have
// written it — one block of one dataset spanning the sources — and
// records its span.
func (s *Spans) Output(plan *ck.JobPlan, token fencing.Token) ck.BlockMeta {
	out := Span{MinTime: 1<<63 - 1}
	for _, id := range plan.Sources {
		src := s.span(id)
		out.MinTime, out.MaxTime = min(out.MinTime, src.MinTime), max(out.MaxTime, src.MaxTime)
		out.Size += src.Size
		delete(s.outs, id)
	}
	m := ck.BlockMeta{
		ID: ck.OutputID(plan.Name, token, 0), Tenant: plan.Tenant, Shard: plan.Shard, Level: plan.Level + 1,
		MinTime: out.MinTime, MaxTime: out.MaxTime, Size: out.Size,
		Datasets: []ck.DatasetMeta{{Name: "ds", Size: out.Size, Records: 10, MinTime: out.MinTime, MaxTime: out.MaxTime}},
	}
	s.outs[m.ID] = out
	return m
}
