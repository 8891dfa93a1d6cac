package worker_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/planner"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/worker"
)

// fsmLeader is a worker.Client over the real state machine, in process:
// each request is prepared (raftfsm.FSM.Prepare) and applied as the next
// log entry, as a host does, with the bubble's clock as the log's time.
// The scheduling rules are the state machine's own; the tests check the
// worker against them.
//
// Around it, faults a network and a leader produce. At random (faults,
// seeded): a request lost before the leader sees it, a reply lost after
// the request was applied, a request delivered twice (the second is
// answered from the poll log), a reply delayed, a request refused with an
// error. And by hooks, which a test sets before the worker starts or
// under mu, and which run under mu:
//
//   - down loses every request in transport; lose loses the requests it
//     selects.
//   - reject refuses a new request as invalid, unapplied, with an error
//     wrapping ck.ErrRejected (as a host refuses what Prepare calls
//     invalid).
//   - before runs before a request is prepared; it may apply commands
//     (applyLocked), such as an operator's cancel (revokeLocked).
//   - dropReply loses the reply of an applied request.
//   - rewrite alters the real reply before the worker gets it: a leader
//     answering what the state machine would not.
//   - skew puts the leader's clock ahead: leases expire sooner than the
//     worker counts.
//
// It records what it received and, from the applied results, what it
// granted, what each report was answered and what was committed; and the
// protocol violations it sees (a retry with other content, a sequence
// number skipped, a request the state machine refused as invalid).
type fsmLeader struct {
	mu     sync.Mutex
	f      *raftfsm.FSM
	index  uint64
	rnd    *rand.Rand
	faults faults
	// applied counts the entries applied; injected the random faults
	// injected, by kind.
	applied  int
	injected map[string]int

	down      bool
	lose      func(req *ck.PollRequest) bool
	reject    func(req *ck.PollRequest) error
	before    func(req *ck.PollRequest)
	dropReply func(req *ck.PollRequest, resp *ck.PollResponse) bool
	rewrite   func(req *ck.PollRequest, resp *ck.PollResponse)
	// skew puts the leader's clock (the log's time) ahead of the
	// bubble's.
	skew time.Duration

	received   []receivedReq
	firstSeen  map[pollKey]time.Time       // when each request first arrived
	first      map[pollKey]*ck.PollRequest // each request as first applied or rejected
	lastSeq    map[string]uint64
	plans      map[string]ck.JobPlan // every job assigned, by name
	grants     map[attempt][]grant   // every assignment and renewal, by attempt
	reports    []report              // every status update applied, with its answer
	completed  map[string]completion // by job name
	violations []string
}

// faults are the probabilities of each fault, per request.
type faults struct {
	lost, dropReply, duplicate, delay, refuse float64
}

// attempt identifies one assignment of a job.
type attempt struct {
	job   string
	token fencing.Token
}

// grant is an assignment or renewal: the request that got it, when that
// request first arrived (there is no latency in a synctest bubble: when
// the worker first sent it), the lease the reply gave, and when it was
// applied.
type grant struct {
	seq   uint64
	sent  time.Time
	lease time.Duration
	at    time.Time
}

type pollKey struct {
	worker string
	seq    uint64
}

type receivedReq struct {
	req     *ck.PollRequest
	at      time.Time
	applied bool // applied as a new entry (not lost, refused or replayed)
}

type report struct {
	seq    uint64
	update ck.StatusUpdate
	answer ck.Outcome
	at     time.Time
}

type completion struct {
	name    string
	token   fencing.Token
	worker  string
	outputs []ck.BlockMeta
}

var (
	errLost    = errors.New("fsm leader: request lost")
	errDropped = errors.New("fsm leader: reply lost")
	errRefused = errors.New("fsm leader: not the leader")
)

// newFSMLeader returns a leader for TestWorkersAgainstStateMachine: two
// blocks per job, outputs left at level 1.
func newFSMLeader(t *testing.T, seed uint64, fs faults) *fsmLeader {
	t.Helper()
	cfg := raftfsm.DefaultConfig()
	cfg.Planner.Levels[0].MaxBlocks = 2
	cfg.Planner.Levels[1].MaxBlocks = 1000 // outputs wait: the test ends at level 1
	cfg.Planner.Levels[1].MaxAge = 0
	l := newLeaderWith(t, cfg)
	l.rnd, l.faults = rand.New(rand.NewPCG(seed, seed)), fs
	return l
}

// leaderConfig is the state machine's configuration for the worker
// tests: one level; the sources of a tenant are one job (up to eight)
// as soon as they are added (see add), whose outputs are final; leases of
// lease; a job that fails once is excluded; no tombstone rides on a
// compaction job, and tombstones wait the default 15 minutes before a
// cleanup-only job may take them.
func leaderConfig(lease time.Duration) raftfsm.Config {
	cfg := raftfsm.DefaultConfig()
	cfg.Planner.Levels = []planner.LevelConfig{{MaxBlocks: 8, MaxAge: time.Nanosecond, MaxSpan: 3 * time.Hour}}
	cfg.Planner.FinalLevel = 1
	cfg.Planner.TombstonesPerJob = 0
	cfg.Scheduler.LeaseDuration = lease
	cfg.Scheduler.MaxFailures = 1
	return cfg
}

// newLeader returns a leader with leaderConfig(lease), changed by tune.
func newLeader(t *testing.T, lease time.Duration, tune ...func(*raftfsm.Config)) *fsmLeader {
	t.Helper()
	cfg := leaderConfig(lease)
	for _, f := range tune {
		f(&cfg)
	}
	return newLeaderWith(t, cfg)
}

func newLeaderWith(t *testing.T, cfg raftfsm.Config, opts ...raftfsm.Option) *fsmLeader {
	t.Helper()
	f, err := raftfsm.New(cfg, opts...)
	require.NoError(t, err)
	return &fsmLeader{
		f:         f,
		injected:  map[string]int{},
		firstSeen: map[pollKey]time.Time{},
		first:     map[pollKey]*ck.PollRequest{},
		lastSeq:   map[string]uint64{},
		plans:     map[string]ck.JobPlan{},
		grants:    map[attempt][]grant{},
		completed: map[string]completion{},
	}
}

func (l *fsmLeader) fault(kind string, p float64) bool {
	if p > 0 && l.rnd.Float64() < p {
		l.injected[kind]++
		return true
	}
	return false
}

func (l *fsmLeader) violate(format string, args ...any) {
	l.violations = append(l.violations, fmt.Sprintf(format, args...))
}

// applyLocked applies cmd as the next entry. Call with mu held.
func (l *fsmLeader) applyLocked(cmd *raftfsm.Command) (*raftfsm.Result, error) {
	now := time.Now().Add(l.skew).UnixNano()
	data, err := l.f.Encode(cmd, now)
	if err != nil {
		return nil, err
	}
	l.index++
	res, err := l.f.Apply(ck.Entry{Index: l.index, Term: 1, Time: now}, data)
	if err != nil {
		l.index-- // refused: the entry changed nothing
		return nil, err
	}
	l.applied++
	return res, nil
}

// addBlocks registers blocks written to the store.
func (l *fsmLeader) addBlocks(t *testing.T, bs []ck.BlockMeta) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	res, err := l.applyLocked(&raftfsm.Command{AddBlocks: &raftfsm.AddBlocks{Blocks: bs}})
	require.NoError(t, err)
	for _, b := range res.Blocks {
		require.NoError(t, b.Err)
	}
}

// add registers the blocks, then lets a millisecond pass: with
// leaderConfig, the planner makes each tenant's blocks one job at the
// next poll. Call it in a synctest bubble.
func (l *fsmLeader) add(t *testing.T, bs ...ck.BlockMeta) {
	t.Helper()
	l.addBlocks(t, bs)
	time.Sleep(time.Millisecond)
}

// drop drops the tenant's blocks (retention): they become tombstones.
func (l *fsmLeader) drop(t *testing.T, tenant string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	res, err := l.applyLocked(&raftfsm.Command{Retention: &raftfsm.Retention{Tenant: tenant, Before: math.MaxInt64}})
	require.NoError(t, err)
	require.NotEmpty(t, res.Dropped)
}

// revoke takes the job labelled label from its worker, as an operator
// does: the job is cancelled and its tenant paused, so that its sources
// are not planned again. The holder's token is stale from now on.
func (l *fsmLeader) revoke(t *testing.T, label string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	require.NoError(t, l.revokeLocked(label))
}

func (l *fsmLeader) revokeLocked(label string) error {
	name := l.nameLocked(label)
	if js, _, ok := l.f.Job(name); !ok || js.Status != ck.StatusInProgress {
		return fmt.Errorf("revoke: job %s (%s) not in progress", label, name)
	}
	if _, err := l.applyLocked(&raftfsm.Command{Operator: &raftfsm.Operator{Action: raftfsm.OpCancel, Job: name}}); err != nil {
		return err
	}
	_, err := l.applyLocked(&raftfsm.Command{Operator: &raftfsm.Operator{Action: raftfsm.OpPause, Tenant: label}})
	return err
}

// abandoned returns the prefix of an attempt another worker abandoned:
// the job of n sources labelled label is assigned to "another-worker",
// then revoked. Once released (Index.CleanupDelay), the prefix is a
// tombstone for a cleanup-only job. Call it in a synctest bubble.
func (l *fsmLeader) abandoned(t *testing.T, store blockmerge.Store, label string, n int) string {
	t.Helper()
	l.add(t, mergeSources(t, store, label, n)...)
	resp, err := l.Poll(context.Background(), &ck.PollRequest{WorkerID: "another-worker", Seq: 1, FreeSlots: 1})
	require.NoError(t, err)
	require.Len(t, resp.Jobs, 1)
	l.revoke(t, label)
	return ck.AttemptPrefix(resp.Jobs[0].Job, resp.Jobs[0].Token)
}

// cleanupJob returns the name of a cleanup-only job assigned ("" if
// none).
func (l *fsmLeader) cleanupJob() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for name, p := range l.plans {
		if p.CleanupOnly() {
			return name
		}
	}
	return ""
}

func (l *fsmLeader) setDown(down bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.down = down
}

// Poll implements worker.Client.
func (l *fsmLeader) Poll(ctx context.Context, req *ck.PollRequest) (*ck.PollResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l.mu.Lock()
	cp := cloneRequest(req)
	key := pollKey{req.WorkerID, req.Seq}
	rec := receivedReq{req: cp, at: time.Now()}
	if _, ok := l.firstSeen[key]; !ok {
		l.firstSeen[key] = rec.at
	}
	if l.down || (l.lose != nil && l.lose(cp)) || l.fault("lost", l.faults.lost) {
		l.received = append(l.received, rec)
		l.mu.Unlock()
		return nil, errLost
	}
	if l.fault("refuse", l.faults.refuse) {
		l.received = append(l.received, rec)
		l.mu.Unlock()
		return nil, errRefused
	}
	if _, seen := l.first[key]; !seen && l.reject != nil {
		if err := l.reject(cp); err != nil {
			l.received = append(l.received, rec)
			l.sequence(cp)
			l.mu.Unlock()
			return nil, fmt.Errorf("fsm leader: %w: %w", ck.ErrRejected, err)
		}
	}
	if l.before != nil {
		l.before(cp)
	}
	resp, applied, err := l.poll(cp)
	rec.applied = applied
	l.received = append(l.received, rec)
	if err == nil && l.fault("duplicate", l.faults.duplicate) {
		// The request arrives again (a retry by the transport): the poll
		// log answers it, and the worker gets the second answer.
		resp, _, err = l.poll(cp)
	}
	if err == nil && l.rewrite != nil {
		l.rewrite(cp, resp)
	}
	drop := err == nil && l.dropReply != nil && l.dropReply(cp, resp)
	drop = l.fault("dropReply", l.faults.dropReply) || drop
	delay := l.fault("delay", l.faults.delay)
	l.mu.Unlock()
	if delay {
		time.Sleep(2 * time.Second)
	}
	if err != nil {
		return nil, err
	}
	if drop {
		return nil, errDropped
	}
	return resp, nil
}

// poll prepares and applies one request, and records what it did. It
// reports whether the request was applied as a new entry. Call with mu
// held.
func (l *fsmLeader) poll(req *ck.PollRequest) (*ck.PollResponse, bool, error) {
	cmd, err := l.f.Prepare(req, time.Now().Add(l.skew).UnixNano())
	var res *raftfsm.Result
	if err == nil {
		res, err = l.applyLocked(cmd)
	}
	if errors.Is(err, raftfsm.ErrInvalidRequest) || errors.Is(err, raftfsm.ErrStaleRequest) {
		l.violate("request %d of %s refused: %v", req.Seq, req.WorkerID, err)
		l.sequence(req)
		return nil, false, fmt.Errorf("fsm leader: %w: %w", ck.ErrRejected, err)
	}
	if err != nil {
		return nil, false, err
	}
	l.sequence(req)
	if !res.Replayed {
		l.record(req, res)
	}
	return cloneResponse(res.Poll), !res.Replayed, nil
}

// sequence checks a request against the worker's earlier ones: a retry
// repeats the first send, a new request takes the next number. Call with
// mu held.
func (l *fsmLeader) sequence(req *ck.PollRequest) {
	key := pollKey{req.WorkerID, req.Seq}
	if prev, ok := l.first[key]; ok {
		if !reflect.DeepEqual(prev, req) {
			l.violate("request %d retried with other content:\nfirst: %+v\nretry: %+v", req.Seq, prev, req)
		}
		return
	}
	l.first[key] = req
	if last := l.lastSeq[req.WorkerID]; req.Seq != last+1 {
		l.violate("worker %s: request %d after %d", req.WorkerID, req.Seq, last)
	}
	l.lastSeq[req.WorkerID] = req.Seq
}

// record records what an applied request got: the answer to each of its
// reports, the assignments and renewals of its reply, the completions it
// committed. Call with mu held.
func (l *fsmLeader) record(req *ck.PollRequest, res *raftfsm.Result) {
	now := time.Now()
	for i, u := range req.Updates {
		l.reports = append(l.reports, report{seq: req.Seq, update: u, answer: res.Poll.Jobs[i].Outcome, at: now})
	}
	for _, j := range res.Poll.Jobs {
		switch j.Outcome {
		case ck.OutcomeAssigned:
			l.plans[j.Job] = j.Plan.Clone()
		case ck.OutcomeRenewed:
		default:
			continue
		}
		a := attempt{j.Job, j.Token}
		l.grants[a] = append(l.grants[a], grant{seq: req.Seq, sent: l.firstSeen[pollKey{req.WorkerID, req.Seq}], lease: j.Lease, at: now})
	}
	for _, c := range res.Changes {
		if c.Kind != ck.ChangeComplete || !c.Applied {
			continue
		}
		for _, u := range req.Updates {
			if u.Job == c.Job && u.Status == ck.ReportSuccess {
				l.completed[c.Job] = completion{name: c.Job, token: u.Token, worker: req.WorkerID, outputs: u.Outputs}
			}
		}
	}
}

// labelOf returns the label of a job: the label of its first source or,
// for a cleanup-only job, "cleanup:" and the label of the block its first
// tombstone deletes; else its name.
func labelOf(name string, plan ck.JobPlan) string {
	switch {
	case len(plan.Sources) > 0:
		return jobOf(plan.Sources[0])
	case len(plan.Tombstones) > 0 && plan.Tombstones[0].Kind == ck.TombstoneBlock:
		return "cleanup:" + jobOf(plan.Tombstones[0].Target)
	}
	return name
}

// is reports whether the job named name is labelled label (or is named
// label).
func (l *fsmLeader) is(name, label string) bool {
	return name == label || labelOf(name, l.plans[name]) == label
}

// nameLocked returns the name of the latest job labelled label ("" if
// none was assigned). Call with mu held.
func (l *fsmLeader) nameLocked(label string) string {
	name, last := "", fencing.Token(0)
	for a := range l.grants {
		if l.is(a.job, label) && a.token > last {
			name, last = a.job, a.token
		}
	}
	return name
}

// --- accessors, all under the lock ---

// jobView is what the leader knows of the latest job labelled label.
type jobView struct {
	name       string
	state      ck.JobState // at the state machine
	inProgress bool        // held, at the state machine
	failures   int         // failure reports accepted
	releases   int         // release reports accepted
	tokens     []fencing.Token
	renewals   []time.Time // the assignment, then each renewal, of the current token
}

func (l *fsmLeader) job(label string) jobView {
	l.mu.Lock()
	defer l.mu.Unlock()
	v := jobView{name: l.nameLocked(label)}
	if v.name == "" {
		return v
	}
	v.state, _, _ = l.f.Job(v.name)
	v.inProgress = v.state.Status == ck.StatusInProgress
	for _, r := range l.reports {
		if r.update.Job != v.name || r.answer != ck.OutcomeAccepted {
			continue
		}
		switch r.update.Status {
		case ck.ReportFailure:
			v.failures++
		case ck.ReportReleased:
			v.releases++
		}
	}
	for a, gs := range l.grants {
		if a.job == v.name {
			v.tokens = append(v.tokens, a.token)
		}
		if a.job == v.name && a.token == v.state.Token {
			for _, g := range gs {
				v.renewals = append(v.renewals, g.at)
			}
		}
	}
	slices.Sort(v.tokens)
	return v
}

func (l *fsmLeader) requests() []receivedReq {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.received)
}

// reportsOf lists the status updates applied about the jobs labelled
// label, with their answers.
func (l *fsmLeader) reportsOf(label string) []report {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []report
	for _, r := range l.reports {
		if l.is(r.update.Job, label) {
			out = append(out, r)
		}
	}
	return out
}

// completion returns the completion of the job labelled label.
func (l *fsmLeader) completion(label string) (completion, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for name, c := range l.completed {
		if l.is(name, label) {
			return c, true
		}
	}
	return completion{}, false
}

func (l *fsmLeader) numCompleted() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.completed)
}

// successesOf lists every request (retries included) that reported a job
// labelled label successful.
func (l *fsmLeader) successesOf(label string) []*ck.PollRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []*ck.PollRequest
	for _, r := range l.received {
		for _, u := range r.req.Updates {
			if l.is(u.Job, label) && u.Status == ck.ReportSuccess {
				out = append(out, r.req)
			}
		}
	}
	return out
}

// check fails the test if the leader saw a protocol violation, or the
// state machine a broken invariant.
func (l *fsmLeader) check(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	require.Empty(t, l.violations, "protocol violations")
	st := l.f.Stats()
	require.Zero(t, st.BrokenInvariants)
	require.NoError(t, st.Failed)
}

// compacted reports whether every level-0 block was replaced and no job
// is left.
func (l *fsmLeader) compacted() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.f.Stats()
	view := l.f.Index()
	defer view.Close()
	for _, b := range view.Blocks("", 0) {
		if b.Level == 0 {
			return false
		}
	}
	return st.Scheduler.Jobs == 0 && st.Planner.Claimed == 0
}

// writeSources writes n blocks of two records each to the store, each
// sharing a key with the next.
func writeSources(t *testing.T, store blockmerge.Store, prefix string, n int) []ck.BlockMeta {
	t.Helper()
	var out []ck.BlockMeta
	for i := range n {
		out = append(out, writeSource(t, store, fmt.Sprintf("%s-%03d", prefix, i), fmt.Sprintf("%s-k%03d", prefix, i), fmt.Sprintf("%s-k%03d", prefix, i+1)))
	}
	return out
}

// checkOutputs reads every live block back and requires the records of
// the sources, each once.
func checkOutputs(t *testing.T, l *fsmLeader, store blockmerge.Store, prefixes []string, n int) {
	t.Helper()
	l.mu.Lock()
	view := l.f.Index()
	blocks := view.Blocks("", 0)
	view.Close()
	st := l.f.Stats()
	l.mu.Unlock()
	require.Zero(t, st.BrokenInvariants)
	require.NoError(t, st.Failed)
	keys := map[string]int{}
	for _, b := range blocks {
		require.Equal(t, uint32(1), b.Level, "block %s", b.ID)
		r, err := blockmerge.Open(context.Background(), store, b.ID)
		require.NoError(t, err, "output %s readable", b.ID)
		for _, d := range r.Meta().Datasets {
			it, err := r.Dataset(context.Background(), d.Tenant, d.Name)
			require.NoError(t, err)
			for it.Next() {
				keys[string(it.Record().Key)]++
			}
			require.NoError(t, it.Err())
			require.NoError(t, it.Close())
		}
	}
	for _, p := range prefixes {
		// A job merges two adjacent sources: their shared key is one
		// record; the key a source shares with the next job's is in both
		// outputs.
		for i := 0; i <= n; i++ {
			require.NotZero(t, keys[fmt.Sprintf("%s-k%03d", p, i)], "key %s-k%03d lost", p, i)
		}
	}
}

// TestWorkersAgainstStateMachine runs workers against the real state
// machine through a faulty network: every block is compacted once, every
// output is readable and holds the sources' records, and the state
// machine found no broken invariant — whatever the faults.
func TestWorkersAgainstStateMachine(t *testing.T) {
	for name, fs := range map[string]faults{
		"no faults":       {},
		"lost requests":   {lost: 0.3},
		"lost replies":    {dropReply: 0.3},
		"duplicates":      {duplicate: 0.5},
		"delayed replies": {delay: 0.3},
		"refused":         {refuse: 0.2},
		"everything":      {lost: 0.1, dropReply: 0.1, duplicate: 0.2, delay: 0.1, refuse: 0.1},
	} {
		t.Run(name, func(t *testing.T) {
			injected := 0
			for seed := range uint64(3) {
				synctest.Test(t, func(t *testing.T) {
					store := blockmerge.NewMemStore()
					l := newFSMLeader(t, seed, fs)
					const n = 24
					prefixes := []string{"a", "b"}
					for _, p := range prefixes {
						l.addBlocks(t, writeSources(t, store, p, n))
					}
					var ws []running
					for i := range 2 {
						ws = append(ws, start(t, l, store, worker.Config{ID: fmt.Sprintf("w%d", i), Concurrency: 1 + i}))
					}
					eventually(t, "compacted", l.compacted)
					for _, r := range ws {
						require.NoError(t, r.stop())
					}
					checkOutputs(t, l, store, prefixes, n)
					var completed uint64
					for _, r := range ws {
						completed += r.w.Stats().JobsCompleted
					}
					require.Equal(t, uint64(len(prefixes)*n/2), l.f.Stats().Scheduler.Counters.Completed)
					require.LessOrEqual(t, completed, l.f.Stats().Scheduler.Counters.Completed, "a worker counts a completion the state machine did not make")
					for _, k := range l.injected {
						injected += k
					}
				})
			}
			if fs != (faults{}) {
				require.NotZero(t, injected, "faults were injected")
			}
		})
	}
}
