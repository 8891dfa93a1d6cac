package worker_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/worker"
)

// fakeLeader is an in-process leader implementing worker.Client with the
// state machine's rules (ARCHITECTURE.md, "Data flow" and "Job states and changes"), much simplified: it assigns
// queued jobs in order, renews, completes, accepts failures and releases,
// answers "no lease" to a stale or unknown token and "completed" to a
// repeated success, and answers a retried (worker, seq) with the recorded
// response. It records everything it receives, and the protocol violations
// it sees (a retry with other content, a sequence number skipped, an
// invalid request or report).
//
// Knobs (set under mu, or before the worker starts): down fails every
// request in transport; failBefore fails a request in transport before the
// leader sees it; dropReply loses the reply of an applied request;
// revokeOnRenewal reassigns a job to another worker when it is next
// reported in progress.
type fakeLeader struct {
	mu sync.Mutex

	lease           time.Duration            // default lease
	leases          map[string]time.Duration // per job
	requeue         bool                     // failed jobs return to the queue
	down            bool
	failBefore      func(req *ck.PollRequest) bool
	dropReply       func(req *ck.PollRequest, resp *ck.PollResponse) bool
	revokeOnRenewal map[string]bool
	// reject, if it returns an error, rejects the request as invalid
	// without applying it, as the state machine's Prepare does.
	reject func(req *ck.PollRequest) error
	// reassignExpired lets the leader reassign jobs whose lease expired
	// (after the queued ones), as the scheduler does.
	reassignExpired bool

	index      uint64 // the log index: tokens
	queue      []string
	jobs       map[string]*fakeJob
	completed  map[string]fakeCompletion
	polls      map[pollKey]*ck.PollRequest
	responses  map[pollKey]*ck.PollResponse
	lastSeq    map[string]uint64
	received   []receivedReq         // every request received, retries included
	firstSeen  map[pollKey]time.Time // when each request first arrived
	grants     map[attempt][]grant   // every assignment and renewal, by attempt
	reports    []fakeReport          // every status update applied
	violations []string
}

// attempt identifies one assignment of a job.
type attempt struct {
	job   string
	token fencing.Token
}

// grant is an assignment or renewal: the request that got it, and when
// that request first arrived (there is no latency in a synctest bubble:
// when the worker first sent it).
type grant struct {
	seq  uint64
	sent time.Time
}

type pollKey struct {
	worker string
	seq    uint64
}

type receivedReq struct {
	req     *ck.PollRequest
	at      time.Time
	applied bool // the leader applied it (first arrival, not a transport failure)
}

type fakeReport struct {
	seq    uint64
	update ck.StatusUpdate
	answer ck.Outcome
	at     time.Time
}

type fakeJob struct {
	plan       ck.JobPlan
	inProgress bool
	token      fencing.Token
	worker     string
	deadline   time.Time
	failures   int
	releases   int
	renewals   []time.Time // the assignment, then each renewal, of the current token
	tokens     []fencing.Token
}

type fakeCompletion struct {
	token   fencing.Token
	worker  string
	outputs []ck.BlockMeta
}

var (
	errUnavailable = errors.New("fake leader: unavailable")
	errReplyLost   = errors.New("fake leader: reply lost")
)

func newFakeLeader(lease time.Duration) *fakeLeader {
	return &fakeLeader{
		lease:           lease,
		leases:          make(map[string]time.Duration),
		revokeOnRenewal: make(map[string]bool),
		jobs:            make(map[string]*fakeJob),
		completed:       make(map[string]fakeCompletion),
		polls:           make(map[pollKey]*ck.PollRequest),
		responses:       make(map[pollKey]*ck.PollResponse),
		lastSeq:         make(map[string]uint64),
		firstSeen:       make(map[pollKey]time.Time),
		grants:          make(map[attempt][]grant),
	}
}

// add queues a job.
func (l *fakeLeader) add(plan ck.JobPlan) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := plan.Validate(); err != nil {
		panic(err)
	}
	l.jobs[plan.Name] = &fakeJob{plan: plan.Clone()}
	l.queue = append(l.queue, plan.Name)
}

// revoke reassigns an in-progress job to another worker, as the leader does
// once a lease expired: the holder's token is stale from now on.
func (l *fakeLeader) revoke(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.revokeLocked(name)
}

func (l *fakeLeader) revokeLocked(name string) {
	j := l.jobs[name]
	if j == nil || !j.inProgress {
		panic("revoke: job " + name + " not in progress")
	}
	l.index++
	j.token = fencing.Token(l.index)
	j.worker = "another-worker"
	j.renewals = nil
	j.tokens = append(j.tokens, j.token)
}

func (l *fakeLeader) setDown(down bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.down = down
}

func (l *fakeLeader) violate(format string, args ...any) {
	l.violations = append(l.violations, fmt.Sprintf(format, args...))
}

// Poll implements worker.Client.
func (l *fakeLeader) Poll(ctx context.Context, req *ck.PollRequest) (*ck.PollResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	cp := cloneRequest(req)
	rec := receivedReq{req: cp, at: time.Now()}
	if _, ok := l.firstSeen[pollKey{req.WorkerID, req.Seq}]; !ok {
		l.firstSeen[pollKey{req.WorkerID, req.Seq}] = rec.at
	}
	if l.down || (l.failBefore != nil && l.failBefore(cp)) {
		l.received = append(l.received, rec)
		return nil, errUnavailable
	}
	if err := req.Validate(); err != nil {
		l.violate("invalid request %d: %v", req.Seq, err)
		l.received = append(l.received, rec)
		return nil, err
	}
	key := pollKey{req.WorkerID, req.Seq}
	if _, applied := l.polls[key]; !applied && l.reject != nil {
		if err := l.reject(cp); err != nil {
			l.received = append(l.received, rec)
			if last := l.lastSeq[req.WorkerID]; req.Seq != last+1 {
				l.violate("worker %s: request %d after %d", req.WorkerID, req.Seq, last)
			}
			l.lastSeq[req.WorkerID] = req.Seq // gone for good: the next one takes the next number
			return nil, fmt.Errorf("fake leader: %w: %w", worker.ErrRejected, err)
		}
	}
	if prev, ok := l.polls[key]; ok {
		l.received = append(l.received, rec)
		if !reflect.DeepEqual(prev, cp) {
			l.violate("request %d retried with other content:\nfirst: %+v\nretry: %+v", req.Seq, prev, cp)
		}
		resp := cloneResponse(l.responses[key])
		if l.dropReply != nil && l.dropReply(cp, resp) {
			return nil, errReplyLost
		}
		return resp, nil
	}
	if last := l.lastSeq[req.WorkerID]; req.Seq != last+1 {
		l.violate("worker %s: request %d after %d", req.WorkerID, req.Seq, last)
	}
	l.lastSeq[req.WorkerID] = req.Seq
	rec.applied = true
	l.received = append(l.received, rec)
	l.index++
	resp := l.apply(cp)
	l.polls[key] = cp
	l.responses[key] = cloneResponse(resp)
	if l.dropReply != nil && l.dropReply(cp, resp) {
		return nil, errReplyLost
	}
	return resp, nil
}

func (l *fakeLeader) leaseOf(name string) time.Duration {
	if d, ok := l.leases[name]; ok {
		return d
	}
	return l.lease
}

func (l *fakeLeader) apply(req *ck.PollRequest) *ck.PollResponse {
	now := time.Now()
	resp := &ck.PollResponse{}
	for _, u := range req.Updates {
		j := l.jobs[u.Job]
		if j != nil && j.inProgress && j.token == u.Token && j.worker == req.WorkerID &&
			u.Status == ck.ReportInProgress && l.revokeOnRenewal[u.Job] {
			delete(l.revokeOnRenewal, u.Job)
			l.revokeLocked(u.Job)
		}
		reply := ck.JobReply{Job: u.Job, Token: u.Token}
		switch {
		case j == nil || !j.inProgress || j.token != u.Token || j.worker != req.WorkerID:
			if c, ok := l.completed[u.Job]; ok && c.token == u.Token && u.Status == ck.ReportSuccess {
				reply.Outcome = ck.OutcomeCompleted
			} else {
				reply.Outcome = ck.OutcomeNoLease
			}
		default:
			if err := u.ValidateFor(&j.plan); err != nil {
				l.violate("request %d: %v", req.Seq, err)
			}
			switch u.Status {
			case ck.ReportInProgress:
				j.deadline = now.Add(l.leaseOf(u.Job))
				j.renewals = append(j.renewals, now)
				l.grantLocked(req, attempt{u.Job, u.Token})
				reply.Outcome, reply.Lease, reply.Deadline = ck.OutcomeRenewed, l.leaseOf(u.Job), j.deadline.UnixNano()
			case ck.ReportSuccess:
				delete(l.jobs, u.Job)
				l.completed[u.Job] = fakeCompletion{token: u.Token, worker: req.WorkerID, outputs: u.Outputs}
				reply.Outcome = ck.OutcomeCompleted
			case ck.ReportFailure:
				j.inProgress = false
				j.failures++
				if l.requeue {
					l.queue = append(l.queue, u.Job)
				}
				reply.Outcome = ck.OutcomeAccepted
			case ck.ReportReleased:
				j.inProgress = false
				j.releases++
				l.queue = append(l.queue, u.Job)
				reply.Outcome = ck.OutcomeAccepted
			}
		}
		resp.Jobs = append(resp.Jobs, reply)
		l.reports = append(l.reports, fakeReport{seq: req.Seq, update: u, answer: reply.Outcome, at: now})
	}
	candidates := l.queue
	l.queue = nil
	if l.reassignExpired {
		var expired []string
		for name, j := range l.jobs {
			if j.inProgress && now.After(j.deadline) {
				expired = append(expired, name)
			}
		}
		slices.Sort(expired)
		candidates = append(candidates, expired...)
	}
	for i, name := range candidates {
		if int32(i) >= req.FreeSlots {
			for _, rest := range candidates[i:] {
				if !l.jobs[rest].inProgress {
					l.queue = append(l.queue, rest)
				}
			}
			break
		}
		j := l.jobs[name]
		j.inProgress = true
		j.token = fencing.Token(l.index)
		j.tokens = append(j.tokens, j.token)
		j.worker = req.WorkerID
		j.deadline = now.Add(l.leaseOf(name))
		j.renewals = []time.Time{now}
		l.grantLocked(req, attempt{name, j.token})
		plan := j.plan.Clone()
		resp.Jobs = append(resp.Jobs, ck.JobReply{
			Job: name, Outcome: ck.OutcomeAssigned, Token: j.token,
			Deadline: j.deadline.UnixNano(), Lease: l.leaseOf(name), Plan: &plan,
		})
	}
	return resp
}

func (l *fakeLeader) grantLocked(req *ck.PollRequest, a attempt) {
	l.grants[a] = append(l.grants[a], grant{seq: req.Seq, sent: l.firstSeen[pollKey{req.WorkerID, req.Seq}]})
}

// Accessors, all under the lock.

func (l *fakeLeader) requests() []receivedReq {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.received)
}

func (l *fakeLeader) reportsOf(job string) []fakeReport {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []fakeReport
	for _, r := range l.reports {
		if r.update.Job == job {
			out = append(out, r)
		}
	}
	return out
}

func (l *fakeLeader) completion(job string) (fakeCompletion, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.completed[job]
	return c, ok
}

func (l *fakeLeader) job(name string) fakeJob {
	l.mu.Lock()
	defer l.mu.Unlock()
	j := l.jobs[name]
	if j == nil {
		return fakeJob{}
	}
	c := *j
	c.renewals = slices.Clone(j.renewals)
	c.tokens = slices.Clone(j.tokens)
	return c
}

func (l *fakeLeader) numCompleted() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.completed)
}

// successesIn lists every request (retries included) that reported job
// successful.
func (l *fakeLeader) successesOf(job string) []*ck.PollRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []*ck.PollRequest
	for _, r := range l.received {
		for _, u := range r.req.Updates {
			if u.Job == job && u.Status == ck.ReportSuccess {
				out = append(out, r.req)
			}
		}
	}
	return out
}

// check fails the test if the leader saw a protocol violation.
func (l *fakeLeader) check(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	require.Empty(t, l.violations, "protocol violations")
}

func cloneRequest(r *ck.PollRequest) *ck.PollRequest {
	c := *r
	c.Updates = make([]ck.StatusUpdate, len(r.Updates))
	for i, u := range r.Updates {
		c.Updates[i] = u
		if u.Outputs != nil {
			c.Updates[i].Outputs = make([]ck.BlockMeta, len(u.Outputs))
			for k := range u.Outputs {
				c.Updates[i].Outputs[k] = u.Outputs[k].Clone()
			}
		}
	}
	return &c
}

func cloneResponse(r *ck.PollResponse) *ck.PollResponse {
	c := &ck.PollResponse{Jobs: slices.Clone(r.Jobs)}
	for i := range c.Jobs {
		if p := c.Jobs[i].Plan; p != nil {
			pc := p.Clone()
			c.Jobs[i].Plan = &pc
		}
	}
	return c
}

// --- blocks and plans ---

const tenant = "acme"

// writeSource writes a level-0 block of the tenant with one dataset
// holding one record per key (timestamp 1, value "v-"+key, so that the
// same key in two sources is one record).
func writeSource(t *testing.T, store blockmerge.Store, id string, keys ...string) ck.BlockMeta {
	t.Helper()
	recs := make([]blockmerge.Record, len(keys))
	for i, k := range keys {
		recs[i] = blockmerge.Record{Key: []byte(k), Timestamp: 1, Value: []byte("v-" + k)}
	}
	meta, err := blockmerge.WriteBlock(context.Background(), store, blockmerge.BlockInfo{ID: id, Tenant: tenant, Shard: 1},
		[]blockmerge.Dataset{{Tenant: tenant, Name: "api", Records: recs}})
	require.NoError(t, err)
	return meta
}

// sourceID is the ID of the i-th source of job: the merger below finds the
// job from it.
func sourceID(job string, i int) string { return fmt.Sprintf("%s~src%d", job, i) }

func jobOf(blockID string) string {
	name, _, _ := strings.Cut(blockID, "~")
	return name
}

// mergeJob writes n sources for job (two records each, one shared with the
// next source) and returns its plan.
func mergeJob(t *testing.T, store blockmerge.Store, job string, n int) ck.JobPlan {
	t.Helper()
	p := ck.JobPlan{Name: job, Tenant: tenant, Shard: 1}
	for i := range n {
		id := sourceID(job, i)
		writeSource(t, store, id, fmt.Sprintf("k%02d", i), fmt.Sprintf("k%02d", i+1))
		p.Sources = append(p.Sources, id)
	}
	return p
}

// --- a controllable dataset merger ---

// merges controls the merges of the jobs: a job's merge can be held until
// released, or take some (fake) time; it records the merges started and
// how they were cancelled.
type merges struct {
	mu        sync.Mutex
	hold      map[string]chan struct{}
	take      map[string]time.Duration
	stubborn  map[string]bool // the hold ignores cancellation
	started   map[string]int
	cancelled map[string]error
}

func newMerges() *merges {
	return &merges{
		hold:      make(map[string]chan struct{}),
		take:      make(map[string]time.Duration),
		stubborn:  make(map[string]bool),
		started:   make(map[string]int),
		cancelled: make(map[string]error),
	}
}

// holdJob makes job's merge wait until release(job) or its cancellation.
func (m *merges) holdJob(job string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.hold[job] = make(chan struct{})
}

func (m *merges) release(job string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	close(m.hold[job])
}

func (m *merges) startedCount(job string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.started[job]
}

func (m *merges) cancelCause(job string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cancelled[job]
}

func (m *merges) option() blockmerge.Option {
	return blockmerge.WithDatasetMerger(blockmerge.DatasetMergerFunc(
		func(ctx context.Context, out *blockmerge.DatasetWriter, inputs []*blockmerge.DatasetIterator) error {
			job := jobOf(inputs[0].Block())
			m.mu.Lock()
			m.started[job]++
			gate := m.hold[job]
			take := m.take[job]
			stubborn := m.stubborn[job]
			m.mu.Unlock()
			if stubborn {
				<-gate
			}
			var timer <-chan time.Time
			if take > 0 {
				timer = time.After(take)
			}
			if gate != nil || timer != nil {
				select {
				case <-gate:
				case <-timer:
				case <-ctx.Done():
					m.mu.Lock()
					m.cancelled[job] = context.Cause(ctx)
					m.mu.Unlock()
					return context.Cause(ctx)
				}
			}
			return blockmerge.RecordMerger{}.MergeDataset(ctx, out, inputs)
		}))
}

// --- running a worker in a bubble ---

type running struct {
	w    *worker.Worker
	stop func() error
}

// start runs a worker against l until stop is called. Call it inside a
// synctest bubble.
func start(t *testing.T, l worker.Client, store blockmerge.Store, cfg worker.Config, before ...func(*worker.Worker)) running {
	t.Helper()
	if cfg.ID == "" {
		cfg.ID = "w1"
	}
	w, err := worker.New(l, store, cfg)
	require.NoError(t, err)
	for _, f := range before {
		f(w)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- w.Run(ctx) }()
	var once sync.Once
	var runErr error
	stop := func() error {
		once.Do(func() {
			cancel()
			runErr = <-errc
		})
		return runErr
	}
	t.Cleanup(func() { _ = stop() })
	return running{w: w, stop: stop}
}

// eventually lets fake time pass, in steps, until cond holds (at most ten
// minutes of fake time).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Minute)
	for {
		synctest.Wait()
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still not %s after 10 minutes of fake time", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newTextLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
