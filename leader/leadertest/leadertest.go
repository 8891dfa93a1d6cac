// Package leadertest is a scenario that checks a [leader.Service] over a
// host's [leader.Log]: workers poll through whichever node leads while
// blocks arrive and the leader changes, and the scenario checks what the
// service promises — no poll answered twice differently, no assignment
// lost, nothing waiting forever, and every replica byte-identical at the
// end. A host runs it over its own log, as blockmerge/storetest runs a
// store through the Store contract.
//
// What a passing run does not prove: that the log survives faults the
// host's [Cluster] does not inject (lost disks, partitions, clock jumps:
// the scenario changes the leader only through [Cluster.ChangeLeader]),
// that it is fast enough, or that it holds beyond the run's length. Its
// check that no poll is answered twice differently sees only the answers
// that reach its workers, and a worker sends a sequence number again only
// after an error: the state machine's poll log, which compactkit's own
// simulation checks, carries the rest of that promise.
package leadertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/scheduler"
)

// Cluster is the host's cluster under test: one [leader.Service] per node,
// over one log.
type Cluster interface {
	// Services returns every node's service, in a fixed order (a node
	// restarted during the run has a new one).
	Services() []*leader.Service
	// ChangeLeader makes another node lead (it may return before the
	// election ends).
	ChangeLeader(t testing.TB)
	// Settle returns once every node has applied everything committed.
	Settle(t testing.TB)
}

// Options shape a run.
type Options struct {
	// Workers poll concurrently (default 4); each sends Polls requests
	// (default 40).
	Workers, Polls int
	// LeaderChanges is how many times the leader changes during the run
	// (default 5), evenly spread over the polls answered.
	LeaderChanges int
	// Blocks is how many level-0 blocks arrive during the run (default
	// 200), in batches of 10.
	Blocks int
	// CallTimeout bounds each call to a service (default 5 s): a call that
	// takes longer fails the run, since nothing may wait forever.
	CallTimeout time.Duration
}

func (o *Options) defaults() {
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.Polls <= 0 {
		o.Polls = 40
	}
	if o.LeaderChanges < 0 {
		o.LeaderChanges = 0
	} else if o.LeaderChanges == 0 {
		o.LeaderChanges = 5
	}
	if o.Blocks <= 0 {
		o.Blocks = 200
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 5 * time.Second
	}
}

// Report is what a run did, for the caller's own assertions.
type Report struct {
	// Polls answered, Assigned jobs, Completed jobs, calls Retried after
	// an error, and leader changes.
	Polls, Assigned, Completed, Retried, LeaderChanges int
}

// Run runs the scenario and fails t on a broken promise.
func Run(t *testing.T, c Cluster, opt Options) Report {
	t.Helper()
	opt.defaults()
	r := &run{t: t, c: c, opt: opt, answers: map[key]answer{}, change: make(chan struct{}, opt.LeaderChanges)}
	r.arrived = sync.NewCond(&r.mu)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.ingest(ctx)
	}()
	var workers sync.WaitGroup
	for i := range opt.Workers {
		workers.Add(1)
		go func() {
			defer workers.Done()
			r.work(ctx, fmt.Sprintf("w%d", i))
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.changeLeaders(done)
	}()
	workers.Wait()
	close(done)
	wg.Wait()
	if t.Failed() {
		return r.rep
	}
	r.check(ctx)
	return r.rep
}

type key struct {
	worker string
	seq    uint64
}

type answer struct {
	resp *ck.PollResponse
}

type held struct {
	token fencing.Token
	plan  *ck.JobPlan
}

type run struct {
	t   *testing.T
	c   Cluster
	opt Options

	// change receives a signal each time the polls answered pass another
	// step of the run: the leader changes then, whatever the host's speed.
	change chan struct{}

	mu       sync.Mutex
	arrived  *sync.Cond      // signalled as blocks are added and when ingest ends
	ingestOK bool            // ingest has ended
	ingested []string        // blocks added
	replaced map[string]bool // sources of the jobs completed
	answers  map[key]answer
	holds    map[string]map[string]held // worker's public name → job → attempt
	rep      Report
}

// call runs f on the services in turn until one answers, retrying what a
// worker retries (not leader, unknown outcome, timeout) and giving up on a
// rejection.
func (r *run) call(ctx context.Context, what string, f func(context.Context, *leader.Service) error) error {
	svcs := r.c.Services()
	for i := 0; ; i++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if i%len(svcs) == 0 {
			svcs = r.c.Services() // a restarted node has a new service
		}
		s := svcs[i%len(svcs)]
		// Every call is bounded by its context: a service that waited past
		// it would hang the run, and the test binary's timeout fails it.
		cctx, cancel := context.WithTimeout(ctx, r.opt.CallTimeout)
		err := f(cctx, s)
		cancel()
		if err == nil {
			return nil
		}
		if errors.Is(err, ck.ErrRejected) {
			return err
		}
		if !errors.Is(err, leader.ErrNotLeader) {
			r.mu.Lock()
			r.rep.Retried++
			r.mu.Unlock()
		}
		if i > 0 && i%len(svcs) == 0 {
			time.Sleep(10 * time.Millisecond) // an election is under way
		}
		if i > 2000 {
			r.t.Errorf("%s: no node answered after %d tries: %v", what, i, err)
			return err
		}
	}
}

func (r *run) ingest(ctx context.Context) {
	defer func() {
		r.mu.Lock()
		r.ingestOK = true
		r.arrived.Broadcast()
		r.mu.Unlock()
	}()
	for b := 0; b < r.opt.Blocks; b += 10 {
		blocks := make([]ck.BlockMeta, 0, 10)
		for i := b; i < min(b+10, r.opt.Blocks); i++ {
			blocks = append(blocks, Block(fmt.Sprintf("seg-%05d", i), "tenant", uint32(i%2), int64(i)*int64(time.Second)))
		}
		err := r.call(ctx, "add blocks", func(ctx context.Context, s *leader.Service) error {
			_, err := s.AddBlocks(ctx, blocks)
			return err
		})
		if err != nil && ctx.Err() == nil {
			r.t.Errorf("add blocks: %v", err)
			return
		}
		if err == nil {
			r.mu.Lock()
			for _, b := range blocks {
				r.ingested = append(r.ingested, b.ID)
			}
			r.arrived.Broadcast()
			r.mu.Unlock()
		}
	}
}

func (r *run) changeLeaders(done <-chan struct{}) {
	for range r.opt.LeaderChanges {
		select {
		case <-done:
			return
		case <-r.change:
		}
		r.c.ChangeLeader(r.t)
		r.mu.Lock()
		r.rep.LeaderChanges++
		r.mu.Unlock()
	}
}

// paced waits until the blocks have arrived in proportion to the polls:
// before its seq-th poll a worker waits for (seq-1)/Polls of the blocks, so
// that on a log fast enough to answer every poll before the first block is
// added the workers still poll while blocks arrive and after the last.
func (r *run) paced(seq int) {
	want := r.opt.Blocks * (seq - 1) / r.opt.Polls
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(r.ingested) < want && !r.ingestOK {
		r.arrived.Wait()
	}
}

// changeStep is how many answered polls separate two leader changes.
func (r *run) changeStep() int {
	return max(1, r.opt.Workers*r.opt.Polls/(r.opt.LeaderChanges+1))
}

// work is one worker: it polls Polls times, completing every job it holds
// (with outputs computed from the sources), retrying each request with the
// same sequence number until it is answered.
func (r *run) work(ctx context.Context, id string) {
	mine := map[string]held{}
	for seq := uint64(1); seq <= uint64(r.opt.Polls); seq++ {
		r.paced(int(seq))
		req := &ck.PollRequest{WorkerID: id, Seq: seq, FreeSlots: 1}
		for job, h := range mine {
			outs, ok := r.outputs(ctx, job, h)
			if !ok {
				req.Updates = append(req.Updates, ck.StatusUpdate{Job: job, Token: h.token, Status: ck.ReportInProgress})
				continue
			}
			req.Updates = append(req.Updates, ck.StatusUpdate{Job: job, Token: h.token, Status: ck.ReportSuccess, Outputs: outs})
		}
		req.FreeSlots = int32(max(0, 1-len(req.Updates)))
		var resp *ck.PollResponse
		err := r.call(ctx, "poll "+id, func(ctx context.Context, s *leader.Service) error {
			var err error
			resp, err = s.Poll(ctx, req)
			return err
		})
		if err != nil {
			if ctx.Err() == nil {
				r.t.Errorf("poll %s/%d: %v", id, seq, err)
			}
			return
		}
		r.record(key{id, seq}, resp)
		for _, jr := range resp.Jobs {
			switch jr.Outcome {
			case ck.OutcomeAssigned:
				mine[jr.Job] = held{token: jr.Token, plan: jr.Plan}
			case ck.OutcomeRenewed:
			case ck.OutcomeCompleted:
				r.compacted(mine[jr.Job].plan)
				delete(mine, jr.Job)
			default:
				delete(mine, jr.Job)
			}
		}
		r.mu.Lock()
		if r.holds == nil {
			r.holds = map[string]map[string]held{}
		}
		r.holds[ck.PublicWorkerName(id)] = cloneHeld(mine)
		r.mu.Unlock()
	}
}

func cloneHeld(m map[string]held) map[string]held {
	c := make(map[string]held, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// outputs returns the output a worker writes for its job: one block one
// level up spanning the sources, read from any node that still has them.
func (r *run) outputs(ctx context.Context, job string, h held) ([]ck.BlockMeta, bool) {
	_ = ctx
	for _, s := range r.c.Services() {
		view := s.FSM().Index()
		minT, maxT, size, ok := int64(1<<62), int64(0), int64(0), true
		for _, src := range h.plan.Sources {
			b, live := view.Lookup(src)
			if !live {
				ok = false
				break
			}
			minT, maxT, size = min(minT, b.MinTime), max(maxT, b.MaxTime), size+b.Size
		}
		view.Close()
		if ok {
			out := Block(ck.OutputID(job, h.token, 0), h.plan.Tenant, h.plan.Shard, minT)
			out.Level, out.MaxTime, out.Size = h.plan.Level+1, maxT, size
			out.Datasets[0].MaxTime, out.Datasets[0].Size = maxT, size
			return []ck.BlockMeta{out}, true
		}
	}
	return nil, false
}

// compacted records the sources of a completed job; a source completed
// twice is compacted twice.
func (r *run) compacted(plan *ck.JobPlan) {
	if plan == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.replaced == nil {
		r.replaced = map[string]bool{}
	}
	for _, id := range plan.Sources {
		if r.replaced[id] {
			r.t.Errorf("block %s compacted twice", id)
		}
		r.replaced[id] = true
	}
}

func (r *run) record(k key, resp *ck.PollResponse) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rep.Polls++
	if r.rep.Polls%r.changeStep() == 0 && r.rep.Polls/r.changeStep() <= r.opt.LeaderChanges {
		r.change <- struct{}{} // buffered for every change
	}
	for _, jr := range resp.Jobs {
		switch jr.Outcome {
		case ck.OutcomeAssigned:
			r.rep.Assigned++
		case ck.OutcomeCompleted:
			r.rep.Completed++
		}
	}
	if prev, ok := r.answers[k]; ok && !reflect.DeepEqual(prev.resp, resp) {
		r.t.Errorf("poll %s/%d answered twice differently:\n%+v\n%+v", k.worker, k.seq, prev.resp, resp)
	}
	r.answers[k] = answer{resp: resp}
}

// check runs the end-of-run checks: every replica byte-identical, and
// every job the state machine holds in progress known to its worker.
func (r *run) check(ctx context.Context) {
	r.c.Settle(r.t)
	svcs := r.c.Services()
	var first []byte
	for i, s := range svcs {
		var b bytes.Buffer
		if err := s.FSM().Snapshot(&b); err != nil {
			r.t.Fatalf("snapshot of node %d: %v", i, err)
		}
		if i == 0 {
			first = b.Bytes()
		} else if !bytes.Equal(first, b.Bytes()) {
			r.t.Errorf("node %d's snapshot differs from node 0's", i)
		}
	}
	jobs, _ := svcs[0].FSM().Jobs(scheduler.Filter{Status: ck.StatusInProgress}, "", 0)
	if n := svcs[0].FSM().Stats().Scheduler.Counters.Excluded; n != 0 {
		r.t.Errorf("%d jobs excluded: no worker failed, so leader changes cost them their leases", n)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// Every block added is accounted for: live (queued, in a job, or
	// final) or replaced by a completed job, never both.
	view := svcs[0].FSM().Index()
	for _, id := range r.ingested {
		if live := view.Live(id); live == r.replaced[id] {
			r.t.Errorf("block %s: live %t, replaced by a completed job %t", id, live, r.replaced[id])
		}
	}
	view.Close()
	for _, js := range jobs {
		h, ok := r.holds[js.Worker][js.Name]
		if !ok || h.token != js.Token {
			r.t.Errorf("assignment lost: job %s is in progress for %s with token %d, which the worker was never told", js.Name, js.Worker, js.Token)
		}
	}
	if r.rep.Completed == 0 {
		r.t.Errorf("no job completed in %d polls", r.rep.Polls)
	}
	_ = ctx
}

// Block returns a valid level-0 block of one dataset, one second long from
// minT.
func Block(id, tenant string, shard uint32, minT int64) ck.BlockMeta {
	maxT := minT + int64(time.Second)
	return ck.BlockMeta{
		ID: id, Tenant: tenant, Shard: shard, MinTime: minT, MaxTime: maxT, Size: 100,
		Datasets: []ck.DatasetMeta{{Name: "ds", Size: 100, Records: 10, MinTime: minT, MaxTime: maxT}},
	}
}

// Outputs is what a test worker reports for job j, as if it had merged
// the sources: one block one level up spanning them, made with [Block]
// and sized as their sum. It reports false if the job has no sources or
// one of them is not live in fsm's index (another attempt replaced it).
func Outputs(fsm *raftfsm.FSM, j *ck.JobReply) ([]ck.BlockMeta, bool) {
	if j.Plan == nil || len(j.Plan.Sources) == 0 {
		return nil, false
	}
	view := fsm.Index()
	defer view.Close()
	out := Block(ck.OutputID(j.Job, j.Token, 0), j.Plan.Tenant, j.Plan.Shard, 1<<62)
	out.Level, out.MaxTime, out.Size = j.Plan.Level+1, 0, 0
	for _, src := range j.Plan.Sources {
		b, ok := view.Lookup(src)
		if !ok {
			return nil, false
		}
		out.MinTime, out.MaxTime, out.Size = min(out.MinTime, b.MinTime), max(out.MaxTime, b.MaxTime), out.Size+b.Size
	}
	out.Datasets[0].MinTime, out.Datasets[0].MaxTime, out.Datasets[0].Size = out.MinTime, out.MaxTime, out.Size
	return []ck.BlockMeta{out}, true
}
