package raftfsm_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/raftfsm"
)

// benchBlocks adds n level-0 blocks with five datasets each, over 10
// tenants × 64 shards, in commands of 10,000 blocks.
func benchBlocks(b *testing.B, n *node, count int, prefix string) {
	b.Helper()
	const batch = 10000
	for start := 0; start < count; start += batch {
		bs := make([]ck.BlockMeta, 0, batch)
		for i := start; i < min(count, start+batch); i++ {
			minT := t0 + int64(i)*int64(time.Millisecond)
			maxT := minT + int64(time.Second)
			ds := make([]ck.DatasetMeta, 5)
			for d := range ds {
				ds[d] = ck.DatasetMeta{Name: fmt.Sprintf("service-%d", d), Size: 1000, Records: 100, MinTime: minT, MaxTime: maxT}
			}
			bs = append(bs, ck.BlockMeta{
				ID: fmt.Sprintf("%s%08d", prefix, i), Tenant: fmt.Sprintf("tenant-%d", i%10), Shard: uint32(i/10) % 64,
				MinTime: minT, MaxTime: maxT, Size: 5000, Datasets: ds,
			})
		}
		_, err := n.f.ApplyCommand(ck.Entry{Index: n.index + 1, Term: 1, Time: n.now}, &raftfsm.Command{Time: n.now, AddBlocks: &raftfsm.AddBlocks{Blocks: bs}})
		require.NoError(b, err)
		n.index++
	}
}

// BenchmarkFSMRestore restores a state of 1,000,000 blocks: index entries
// with five datasets each, all queued. Target (ARCHITECTURE.md, "Performance budget"): ≤ 1.2 s/op.
func BenchmarkFSMRestore(b *testing.B) {
	cfg := raftfsm.DefaultConfig()
	cfg.Planner.Levels[0].MaxAge = 0
	n := newNode(b, cfg)
	benchBlocks(b, n, 1_000_000, "b")
	var snap bytes.Buffer
	require.NoError(b, n.f.Snapshot(&snap))
	b.ReportMetric(float64(snap.Len())/(1<<20), "MiB")
	b.ResetTimer()
	for b.Loop() {
		f, err := raftfsm.Restore(bytes.NewReader(snap.Bytes()))
		if err != nil {
			b.Fatal(err)
		}
		_ = f
	}
}

// pollBench is the state of BenchmarkPoll: 10,000 jobs in progress, a pool
// of unassigned jobs, 1,000,000 blocks queued, and one worker's jobs.
type pollBench struct {
	n    *node
	held []ck.JobReply
	seq  uint64
	// spans holds the time range and size of every live block, so that the
	// benchmark worker builds its outputs without reading the index: a
	// view read between polls would make the next Apply copy, on write,
	// the nodes of every tree the view read (see the reader variant).
	spans map[string]span
}

// span is what the benchmark worker needs of a source block.
type span struct{ minTime, maxTime, size int64 }

func newPollBench(b *testing.B) *pollBench {
	cfg := raftfsm.DefaultConfig()
	cfg.Planner.Levels[0].MaxAge = 0 // only full batches: the queue stays
	cfg.Planner.Levels[1].MaxAge = 0
	cfg.Planner.TombstonesPerJob = 0
	cfg.Scheduler.MaxQueueSize = 0
	cfg.Scheduler.MaxSlotsPerRequest = 1 << 20
	cfg.Scheduler.LeaseDuration = time.Hour
	pb := &pollBench{n: newNode(b, cfg)}
	// 1,000,000 queued blocks, plus 20 per job created below.
	benchBlocks(b, pb.n, 1_000_000+20*(10_000+4_000+2_000), "b")
	// 10,000 jobs in progress for other workers.
	for w := range 10 {
		pb.n.poll(&ck.PollRequest{WorkerID: fmt.Sprintf("other-%d", w), Seq: 1, FreeSlots: 1000})
	}
	// 4,000 unassigned jobs: assigned, then released.
	resp := pb.n.poll(&ck.PollRequest{WorkerID: "releaser", Seq: 1, FreeSlots: 4000})
	var rel []ck.StatusUpdate
	for _, j := range resp.Jobs {
		rel = append(rel, ck.StatusUpdate{Job: j.Job, Token: j.Token, Status: ck.ReportReleased})
	}
	pb.n.poll(&ck.PollRequest{WorkerID: "releaser", Seq: 2, Updates: rel})
	// The benchmark worker's own jobs.
	pb.seq = 1
	pb.held = pb.n.poll(&ck.PollRequest{WorkerID: "bench", Seq: 1, FreeSlots: 2000}).Jobs
	view := pb.n.f.Index()
	defer view.Close()
	pb.spans = make(map[string]span, view.Len())
	for _, m := range view.Blocks("", 0) {
		pb.spans[m.ID] = span{m.MinTime, m.MaxTime, m.Size}
	}
	return pb
}

// outputs returns the output of a completed job, as the benchmark worker
// would have written it, and records its span.
func (pb *pollBench) outputs(plan *ck.JobPlan, token fencing.Token) []ck.BlockMeta {
	out := span{minTime: 1<<63 - 1}
	for _, id := range plan.Sources {
		s := pb.spans[id]
		out.minTime, out.maxTime = min(out.minTime, s.minTime), max(out.maxTime, s.maxTime)
		out.size += s.size
		delete(pb.spans, id)
	}
	m := outputMeta(plan, token, out.minTime, out.maxTime, out.size)
	pb.spans[m.ID] = out
	return []ck.BlockMeta{m}
}

// request builds the next poll: 16 renewals, 16 completions of 20 sources
// each, and 32 free slots (16 of them the completed jobs'), filled by 16
// unassigned jobs and 16 new ones.
func (pb *pollBench) request() *ck.PollRequest {
	pb.seq++
	req := &ck.PollRequest{WorkerID: "bench", Seq: pb.seq, FreeSlots: 32}
	for i := range 16 {
		j := pb.held[i]
		req.Updates = append(req.Updates, ck.StatusUpdate{Job: j.Job, Token: j.Token, Status: ck.ReportInProgress})
	}
	for i := 16; i < 32; i++ {
		j := pb.held[i]
		req.Updates = append(req.Updates, ck.StatusUpdate{Job: j.Job, Token: j.Token, Status: ck.ReportSuccess, Outputs: pb.outputs(j.Plan, j.Token)})
	}
	return req
}

// BenchmarkPoll measures Prepare + Apply of one poll — 16 renewals, 16
// completions of 20 sources each, 16 assignments and 16 new jobs — with
// 10,000 jobs in progress and 1,000,000 blocks queued. Target (ARCHITECTURE.md,
// §7): ≤ 500 µs/op; the prepare sub-benchmark, Prepare alone: ≤ 30 µs and
// ≤ 200 allocs. The reader sub-benchmark also reads the index through a
// view between polls (untimed), as a host serving queries does: the
// next Apply then copies, on write, the index nodes it mutates. Each
// sub-benchmark's repetitions (-count) continue from the state the last
// one left; the state supports about 1,700 polls (-benchtime 300x -count 2
// uses 602 per sub-benchmark).
func BenchmarkPoll(b *testing.B) {
	pb := newPollBench(b)
	b.Run("prepare", func(b *testing.B) {
		req := pb.request()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := pb.n.f.Prepare(req, pb.n.now); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("prepare+apply", func(b *testing.B) { pb.run(b, false) })
	// The reader variant starts from the same state as prepare+apply did,
	// so that the two compare poll for poll (each poll changes the state:
	// later polls find more jobs held and fewer blocks queued).
	pb = newPollBench(b)
	b.Run("prepare+apply+reader", func(b *testing.B) { pb.run(b, true) })
}

// run times b.N polls, each Prepare then Apply; with reader, an index
// view is read between polls.
func (pb *pollBench) run(b *testing.B, reader bool) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		if len(pb.held) < 64 {
			b.Fatal("the benchmark worker ran out of jobs")
		}
		req := pb.request()
		pb.n.advance(time.Millisecond)
		if reader {
			// A query reads a block: a source of a job the worker holds.
			view := pb.n.f.Index()
			if _, ok := view.Lookup(pb.held[len(pb.held)-1].Plan.Sources[0]); !ok {
				b.Fatal("a held job's source is not live")
			}
			view.Close()
		}
		b.StartTimer()
		cmd, err := pb.n.f.Prepare(req, pb.n.now)
		if err != nil {
			b.Fatal(err)
		}
		pb.n.index++
		res, err := pb.n.f.ApplyCommand(ck.Entry{Index: pb.n.index, Term: 1, Time: pb.n.now}, cmd)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		var assigned []ck.JobReply
		for _, r := range res.Poll.Jobs {
			if r.Outcome == ck.OutcomeAssigned {
				assigned = append(assigned, r)
			}
		}
		if len(assigned) != 32 {
			b.Fatalf("poll %d: %d jobs assigned, want 32", pb.seq, len(assigned))
		}
		// Renewed jobs go to the back; completed ones leave; new ones join.
		pb.held = append(append(pb.held[32:], pb.held[:16]...), assigned...)
		b.StartTimer()
	}
}
