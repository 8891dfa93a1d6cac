package rpc

import (
	"context"
	"fmt"
	"net/http/httptest"
	"runtime"
	"syscall"
	"testing"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/internal/benchenv"
	"github.com/compactkit/compactkit/internal/benchenv/w2"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/worker"
)

// BenchmarkW2Poll compares one poll of raftfsm's W2 workload
// (raftfsm.BenchmarkW2Poll/jobs=J: 16 renewals, 16 completions of 20
// sources each and 32 free slots, with J jobs in progress for ten other
// workers and 1,000,000 blocks queued) made through Service.Poll
// in-process and through the protocol (the client, gRPC over plain-text
// HTTP/2 on loopback, the handler), on one service and log built with the
// exported API.
//
// Two workers hold 2,000 jobs each; every iteration makes one poll each
// way, the in-process worker's and the protocol worker's, in alternating
// order, so that both see the same state, garbage and machine load.
// µs/in-process and µs/protocol are the two polls' mean wall times,
// cpu-µs/* their process CPU times (every thread's: the client's, the
// handler's, the garbage collector's), allocs/* their allocations,
// overhead-% the protocol's wall time above in-process, and
// adds/poll the mean number of jobs a poll created. Each poll changes
// the state; it is built once per size (VS_SIZES, default 10,000), and
// the timed run continues from the state the testing package's first
// call (b.N = 1) left.
func BenchmarkW2Poll(b *testing.B) {
	for _, jobs := range benchenv.Sizes(b, 10_000) {
		st := newW2State(b, jobs)
		b.Run(fmt.Sprintf("jobs=%d", jobs), st.run)
		st.close()
		runtime.GC()
	}
}

// w2Worker is one of the benchmark's workers.
type w2Worker struct {
	id   string
	c    worker.Client
	seq  uint64
	held []ck.JobReply
}

type w2State struct {
	svc   *leader.Service
	srv   *httptest.Server
	in    *w2Worker // through Service.Poll
	wire  *w2Worker // through the protocol
	spans *w2.Spans
}

// newW2State builds W2's state on a leader over the in-memory log, with
// the benchmark's two workers holding 2,000 jobs each.
func newW2State(b *testing.B, jobs int) *w2State {
	b.Helper()
	fsm, err := raftfsm.New(w2.Config())
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	st := &w2State{svc: leader.New(leadertest.NewMemLog(fsm), fsm), spans: w2.NewSpans(t0)}
	ctx := context.Background()

	// 1,000,000 queued blocks of 5 datasets, plus 20 per job created below.
	const hold, pool = 2_000, 4_000
	count := 1_000_000 + 20*(jobs+pool+2*hold)
	const batch = 10_000
	for start := 0; start < count; start += batch {
		bs := make([]ck.BlockMeta, 0, batch)
		for i := start; i < min(count, start+batch); i++ {
			bs = append(bs, w2.Block("b", i, t0))
		}
		res, err := st.svc.AddBlocks(ctx, bs)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				b.Fatal(r.Err)
			}
		}
	}
	poll := func(req *ck.PollRequest) *ck.PollResponse {
		resp, err := st.svc.Poll(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		return resp
	}
	// The jobs in progress for other workers.
	for w := range 10 {
		poll(&ck.PollRequest{WorkerID: fmt.Sprintf("other-%d", w), Seq: 1, FreeSlots: int32(jobs / 10)})
	}
	// Released jobs, as W2 has: assigned, then released at most
	// Limits.MaxReports a poll.
	resp := poll(&ck.PollRequest{WorkerID: "releaser", Seq: 1, FreeSlots: pool})
	var rel []ck.StatusUpdate
	for _, j := range resp.Jobs {
		rel = append(rel, ck.StatusUpdate{Job: j.Job, Token: j.Token, Status: ck.ReportReleased})
	}
	for seq := uint64(2); len(rel) > 0; seq++ {
		k := min(len(rel), raftfsm.DefaultLimits.MaxReports)
		poll(&ck.PollRequest{WorkerID: "releaser", Seq: seq, Updates: rel[:k]})
		rel = rel[k:]
	}

	st.srv = httptest.NewUnstartedServer(nil)
	st.srv.Config = NewServer(NewHandler(st.svc))
	st.srv.Start()
	cl, err := NewClient([]string{st.srv.URL})
	if err != nil {
		b.Fatal(err)
	}
	st.in = &w2Worker{id: "bench-in-process", c: st.svc}
	st.wire = &w2Worker{id: "bench-protocol", c: cl}
	for _, w := range []*w2Worker{st.in, st.wire} {
		w.seq = 1
		w.held = poll(&ck.PollRequest{WorkerID: w.id, Seq: 1, FreeSlots: hold}).Jobs
		if len(w.held) != hold {
			b.Fatalf("%s holds %d jobs, want %d", w.id, len(w.held), hold)
		}
	}
	runtime.GC() // the setup's garbage is not the polls' to collect
	return st
}

func (st *w2State) close() {
	st.srv.Close()
	_ = st.svc.Close()
}

// request builds w's next poll: 16 renewals, 16 completions and 32 free
// slots.
func (st *w2State) request(w *w2Worker) *ck.PollRequest {
	w.seq++
	req := &ck.PollRequest{WorkerID: w.id, Seq: w.seq, FreeSlots: 32}
	for _, j := range w.held[:16] {
		req.Updates = append(req.Updates, ck.StatusUpdate{Job: j.Job, Token: j.Token, Status: ck.ReportInProgress, Signature: j.Signature})
	}
	for _, j := range w.held[16:32] {
		req.Updates = append(req.Updates, ck.StatusUpdate{Job: j.Job, Token: j.Token, Status: ck.ReportSuccess, Signature: j.Signature,
			Outputs: []ck.BlockMeta{st.spans.Output(j.Plan, j.Token)}})
	}
	return req
}

// cpuTime returns the process's CPU time, user and system, every thread's.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// pollCost is what one poll took.
type pollCost struct {
	wall, cpu time.Duration
	allocs    uint64
}

// poll makes w's next poll with the timer running and returns its cost.
// Its renewed jobs go to the back of w.held, its completed ones leave,
// its new ones join.
func (st *w2State) poll(b *testing.B, w *w2Worker) pollCost {
	b.StopTimer()
	if len(w.held) < 64 {
		b.Fatalf("%s ran out of jobs", w.id)
	}
	req := st.request(w)
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	b.StartTimer()
	c0, t0 := cpuTime(b), time.Now()
	resp, err := w.c.Poll(context.Background(), req)
	d, c := time.Since(t0), cpuTime(b)-c0
	b.StopTimer()
	runtime.ReadMemStats(&m1)
	defer b.StartTimer()
	if err != nil {
		b.Fatalf("%s poll %d: %v", w.id, req.Seq, err)
	}
	var assigned []ck.JobReply
	for _, r := range resp.Jobs {
		switch r.Outcome {
		case ck.OutcomeAssigned:
			assigned = append(assigned, r)
		case ck.OutcomeRenewed, ck.OutcomeCompleted:
		default:
			b.Fatalf("%s poll %d: job %s %s", w.id, req.Seq, r.Job, r.Outcome)
		}
	}
	if len(assigned) != 32 {
		b.Fatalf("%s poll %d: %d jobs assigned, want 32", w.id, req.Seq, len(assigned))
	}
	w.held = append(append(w.held[32:], w.held[:16]...), assigned...)
	return pollCost{wall: d, cpu: c, allocs: m1.Mallocs - m0.Mallocs}
}

// run makes b.N polls each way, alternating which goes first.
func (st *w2State) run(b *testing.B) {
	stats := st.svc.FSM().Stats()
	jobs0 := stats.Scheduler.Counters.Added
	var in, wire pollCost
	for i := range b.N {
		order := []*w2Worker{st.in, st.wire}
		if i%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
		for _, w := range order {
			c, sum := st.poll(b, w), &wire
			if w == st.in {
				sum = &in
			}
			sum.wall += c.wall
			sum.cpu += c.cpu
			sum.allocs += c.allocs
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(in.wall)/1e3/n, "µs/in-process")
	b.ReportMetric(float64(wire.wall)/1e3/n, "µs/protocol")
	b.ReportMetric(float64(in.cpu)/1e3/n, "cpu-µs/in-process")
	b.ReportMetric(float64(wire.cpu)/1e3/n, "cpu-µs/protocol")
	b.ReportMetric(float64(in.allocs)/n, "allocs/in-process")
	b.ReportMetric(float64(wire.allocs)/n, "allocs/protocol")
	b.ReportMetric(100*(float64(wire.wall)/float64(in.wall)-1), "overhead-%")
	b.ReportMetric(float64(st.svc.FSM().Stats().Scheduler.Counters.Added-jobs0)/(2*n), "adds/poll")
}
