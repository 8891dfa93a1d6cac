package leader_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/internal/ident"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/planner"
	"github.com/compactkit/compactkit/policy"
	"github.com/compactkit/compactkit/raftfsm"
)

// The scenario over a log that learns indexes only when it applies and
// drops some proposals, or loses replies.
func TestServiceDroppingLog(t *testing.T) {
	for _, mode := range []struct {
		name string
		opts []leader.Option
	}{{"single-commit", nil}, {"two-commit", []leader.Option{leader.WithTwoCommit()}}} {
		t.Run(mode.name, func(t *testing.T) {
			c := newFakeCluster(t, 3, 1, mode.opts...)
			c.drop, c.lostReply = 0.05, 0.05
			rep := leadertest.Run(t, c, leadertest.Options{})
			require.Positive(t, rep.Retried, "the faults were exercised")
			require.Equal(t, 5, rep.LeaderChanges)
		})
	}
}

// The scenario over a log that refuses appends prepared on a stale index.
func TestServiceConflictingLog(t *testing.T) {
	c := newFakeCluster(t, 3, 2)
	c.conflict = 0.3
	leadertest.Run(t, c, leadertest.Options{})
}

// A conflict on every append exhausts the retries: the poll fails with
// ErrConflict, and nothing waits forever.
func TestServiceConflictRetriesBounded(t *testing.T) {
	c := newFakeCluster(t, 1, 3, leader.WithRetries(2, nil))
	c.conflict = 1
	_, err := c.svcs[0].Poll(context.Background(), &ck.PollRequest{WorkerID: "w", Seq: 1, FreeSlots: 1})
	require.ErrorIs(t, err, leader.ErrConflict)
}

// A lost reply is resolved from the poll log: the worker gets the response
// its poll was applied with, and the retry acts on nothing.
func TestServiceResolvesLostReply(t *testing.T) {
	c := newFakeCluster(t, 1, 4)
	svc := c.svcs[0]
	ctx := context.Background()
	_, err := svc.AddBlocks(ctx, []ck.BlockMeta{
		leadertest.Block("a", "t", 0, 0), leadertest.Block("b", "t", 0, 1e9),
		leadertest.Block("c", "t", 0, 2e9), leadertest.Block("d", "t", 0, 3e9),
	})
	require.NoError(t, err)
	c.lostReply = 1 // the poll's reply is lost; the retry's is not
	c.mu.Lock()
	before := len(c.entries)
	c.mu.Unlock()
	resp, err := func() (*ck.PollResponse, error) {
		defer func() { c.lostReply = 0 }()
		return svc.Poll(ctx, &ck.PollRequest{WorkerID: "w", Seq: 1, FreeSlots: 1})
	}()
	// The first attempt's reply was lost; the barrier and the poll log
	// answered the retry without a second entry.
	if err != nil {
		t.Fatal(err)
	}
	require.Len(t, resp.Jobs, 1)
	require.Equal(t, ck.OutcomeAssigned, resp.Jobs[0].Outcome)
	c.mu.Lock()
	require.Equal(t, before+1, len(c.entries), "one entry for the poll")
	c.mu.Unlock()
	again, err := svc.Poll(ctx, &ck.PollRequest{WorkerID: "w", Seq: 1, FreeSlots: 1})
	require.NoError(t, err)
	require.Equal(t, resp, again)
}

func TestServiceErrors(t *testing.T) {
	c := newFakeCluster(t, 2, 5)
	ctx := context.Background()
	follower := c.svcs[1]
	_, err := follower.Poll(ctx, &ck.PollRequest{WorkerID: "w", Seq: 1})
	var nl *leader.NotLeaderError
	require.ErrorAs(t, err, &nl)
	require.Equal(t, "0", nl.LeaderID, "the follower names the leader")
	require.ErrorIs(t, err, leader.ErrNotLeader)

	svc := c.svcs[0]
	_, err = svc.Poll(ctx, &ck.PollRequest{WorkerID: "", Seq: 1})
	require.ErrorIs(t, err, ck.ErrRejected)
	require.ErrorIs(t, err, raftfsm.ErrInvalidRequest)
	_, err = svc.Poll(ctx, &ck.PollRequest{WorkerID: "w", Seq: 2})
	require.NoError(t, err)
	_, err = svc.Poll(ctx, &ck.PollRequest{WorkerID: "w", Seq: 1})
	require.ErrorIs(t, err, ck.ErrRejected, "an old request is rejected")
	require.ErrorIs(t, err, raftfsm.ErrStaleRequest)

	_, err = svc.Propose(ctx, &raftfsm.Command{Operator: &raftfsm.Operator{Action: raftfsm.OpCancel, Job: "nope"}})
	require.ErrorIs(t, err, raftfsm.ErrOperator)
	_, err = svc.Propose(ctx, &raftfsm.Command{PreparePoll: &raftfsm.PreparePoll{WorkerID: "w", Seq: 9}})
	require.ErrorIs(t, err, raftfsm.ErrInvalidCommand)

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = svc.Poll(cctx, &ck.PollRequest{WorkerID: "w", Seq: 3})
	require.ErrorIs(t, err, context.Canceled)

	require.NoError(t, svc.Close())
	_, err = svc.Read(ctx)
	require.ErrorIs(t, err, leader.ErrClosed)
}

// Every term starts with the took-office command: leases in progress are
// extended, and the first leader of a new log seeds the configuration.
func TestServiceTakesOfficeEveryTerm(t *testing.T) {
	c := newFakeCluster(t, 2, 6)
	ctx := context.Background()
	_, err := c.svcs[0].Read(ctx)
	require.NoError(t, err)
	require.True(t, c.svcs[0].IsLeader())
	require.False(t, c.svcs[1].IsLeader())
	took := func() (n int) {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, e := range c.entries {
			cmd, err := raftfsm.DecodeCommand(e.cmd)
			require.NoError(t, err)
			if cmd.TookOffice != nil {
				n++
			}
		}
		return n
	}
	require.Equal(t, 1, took())
	c.ChangeLeader(t)
	require.False(t, c.svcs[0].IsLeader())
	_, err = c.svcs[1].Read(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, took())
	require.True(t, c.svcs[1].IsLeader())
	c.mu.Lock()
	first, err := raftfsm.DecodeCommand(c.entries[0].cmd)
	c.mu.Unlock()
	require.NoError(t, err)
	require.NotNil(t, first.Config, "the first leader seeds the configuration")
	require.False(t, errors.Is(err, leader.ErrNotLeader))
}

// noon is a Wednesday, 12:00 UTC: outside an off-peak window.
var noon = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

var offPeak = policy.RunPolicy{Mode: policy.OnlyIn, Windows: []policy.Window{{Days: policy.EveryDay, Start: 22 * 60, End: 6 * 60}}}

// Policies set through one leader are replicated state: the next leader
// reads them, every replica holds them, a follower names the leader, and a
// policy under which work could never start is refused before anything is
// proposed.
func TestServicePolicy(t *testing.T) {
	clock := func() time.Time { return noon }
	c := newFakeCluster(t, 3, 7, leader.WithClock(clock))
	ctx := context.Background()
	svc := c.svcs[0]
	_, err := svc.AddBlocks(ctx, []ck.BlockMeta{leadertest.Block("a-1", "acme", 0, 0), leadertest.Block("g-1", "globex", 0, 0)})
	require.NoError(t, err)

	acme := policy.Tenant{Class: policy.Low, MaxInProgress: 2, Run: offPeak, StaleAfter: time.Hour}
	res, err := svc.Propose(ctx, &raftfsm.Command{Policy: &raftfsm.PolicyCommand{Action: raftfsm.PolicySet, Tenant: "acme", Policy: &acme, By: "alice"}})
	require.NoError(t, err)
	require.Equal(t, 1, res.Count)
	_, err = svc.Propose(ctx, &raftfsm.Command{Policy: &raftfsm.PolicyCommand{Action: raftfsm.PolicySet, All: true, Policy: &policy.Tenant{Class: policy.High}}})
	require.NoError(t, err)
	level := uint32(0)
	_, err = svc.Propose(ctx, &raftfsm.Command{Policy: &raftfsm.PolicyCommand{Action: raftfsm.PolicyCompactNow, Tenant: "globex", Level: &level}})
	require.NoError(t, err)

	ps, err := readPolicies(ctx, svc)
	require.NoError(t, err)
	require.Equal(t, policy.High, ps.Default.Class)
	require.Len(t, ps.Tenants, 1)
	require.Equal(t, "acme", ps.Tenants[0].Tenant)
	require.True(t, acme.Equal(ps.Tenants[0].Policy), "%+v", ps.Tenants[0].Policy)
	require.False(t, ps.Tenants[0].Open, "at noon the off-peak window is closed")
	require.Equal(t, []planner.Force{{Tenant: "globex", Level: 0, Before: noon.UnixNano()}}, ps.CompactNow)

	// Refused before anything is proposed: a freeze that never lifts, a
	// set without a policy, a level on a set.
	c.mu.Lock()
	before := len(c.entries)
	c.mu.Unlock()
	always := policy.RunPolicy{Mode: policy.NeverIn, Windows: []policy.Window{{Days: policy.EveryDay, Start: 0, End: 24 * 60}}}
	_, err = svc.Propose(ctx, &raftfsm.Command{Policy: &raftfsm.PolicyCommand{Action: raftfsm.PolicySet, Tenant: "acme", Policy: &policy.Tenant{Run: always}}})
	require.ErrorIs(t, err, raftfsm.ErrInvalidCommand)
	require.ErrorIs(t, err, policy.ErrNeverOpens)
	_, err = svc.Propose(ctx, &raftfsm.Command{Policy: &raftfsm.PolicyCommand{Action: raftfsm.PolicySet, Tenant: "acme"}})
	require.ErrorIs(t, err, raftfsm.ErrInvalidCommand)
	_, err = svc.Propose(ctx, &raftfsm.Command{Policy: &raftfsm.PolicyCommand{Action: raftfsm.PolicySet, Tenant: "acme", Level: &level, Policy: &acme}})
	require.ErrorIs(t, err, raftfsm.ErrInvalidCommand)
	c.mu.Lock()
	require.Equal(t, before, len(c.entries), "refused commands propose nothing")
	c.mu.Unlock()

	// A follower names the leader.
	_, err = readPolicies(ctx, c.svcs[1])
	var nl *leader.NotLeaderError
	require.ErrorAs(t, err, &nl)
	require.Equal(t, "0", nl.LeaderID)
	_, err = c.svcs[1].Propose(ctx, &raftfsm.Command{Policy: &raftfsm.PolicyCommand{Action: raftfsm.PolicyClear, Tenant: "acme"}})
	require.ErrorAs(t, err, &nl)

	// The next leader reads the same policies; every replica holds them.
	c.ChangeLeader(t)
	var next *leader.Service
	for _, s := range c.svcs {
		if _, err := s.Read(ctx); err == nil {
			next = s
		}
	}
	require.NotNil(t, next)
	again, err := readPolicies(ctx, next)
	require.NoError(t, err)
	require.Equal(t, ps, again)
	c.Settle(t)
	for i, s := range c.svcs {
		require.Equal(t, ps, s.FSM().Policies(), "replica %d", i)
	}

	// Clearing is idempotent: the second clear changes nothing.
	res, err = next.Propose(ctx, &raftfsm.Command{Policy: &raftfsm.PolicyCommand{Action: raftfsm.PolicyClear, Tenant: "acme"}})
	require.NoError(t, err)
	require.Equal(t, 1, res.Count)
	res, err = next.Propose(ctx, &raftfsm.Command{Policy: &raftfsm.PolicyCommand{Action: raftfsm.PolicyClear, Tenant: "acme"}})
	require.NoError(t, err)
	require.Equal(t, 0, res.Count)
	ps, err = readPolicies(ctx, next)
	require.NoError(t, err)
	require.Empty(t, ps.Tenants)
}

// readPolicies reads the policies in force through the service's
// linearizable read.
func readPolicies(ctx context.Context, svc *leader.Service) (raftfsm.Policies, error) {
	f, err := svc.Read(ctx)
	if err != nil {
		return raftfsm.Policies{}, err
	}
	return f.Policies(), nil
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want leader.Class
	}{
		{errors.New("disk on fire"), leader.Internal},
		{fmt.Errorf("raftfsm: operator cancel: job name %q: %w", "<script>", ident.ErrInvalidID), leader.Invalid},
		{fmt.Errorf("decode: %w", ck.ErrTruncated), leader.Invalid},
		{fmt.Errorf("poll: %w", raftfsm.ErrLimit), leader.Invalid},
		{fmt.Errorf("set: %w", policy.ErrInvalid), leader.Invalid},
		{fmt.Errorf("cancel: %w", raftfsm.ErrOperator), leader.Conflict},
		{fmt.Errorf("window: %w", policy.ErrNeverOpens), leader.Conflict},
		{fmt.Errorf("v6 only: %w", raftfsm.ErrClusterVersion), leader.Conflict},
		// The state machine reports these refusals as invalid commands too.
		{fmt.Errorf("policy set: %w: policy: %w", raftfsm.ErrInvalidCommand, policy.ErrNeverOpens), leader.Conflict},
		{fmt.Errorf("policy set: %w: %w", raftfsm.ErrInvalidCommand, raftfsm.ErrClusterVersion), leader.Conflict},
		{&leader.NotLeaderError{LeaderID: "n2", LeaderAddr: "127.0.0.1:1"}, leader.NotLeader},
		{&leader.NotLeaderError{Cause: errors.New("raft: shutdown")}, leader.NotLeader},
		{fmt.Errorf("apply: %w", leader.ErrOutcomeUnknown), leader.Unavailable},
		{fmt.Errorf("poll: %w", context.DeadlineExceeded), leader.Unavailable},
		{leader.ErrClosed, leader.Unavailable},
	} {
		if got := leader.Classify(tc.err); got != tc.want {
			t.Errorf("Classify(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func ExampleClassify() {
	err := fmt.Errorf("raftfsm: operator cancel: job name %q: %w", "<script>", ident.ErrInvalidID)
	fmt.Println(leader.Classify(err))
	// Output: invalid
}

// The service measures poll latency, job duration (assignment to
// completion) and the last completion per level, by its clock.
func TestServiceMetrics(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { // a second per reading
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Second)
		return now
	}
	svc, _, _ := newMemService(t, nil, acmePair(), leader.WithClock(clock))
	ctx := context.Background()
	resp, err := svc.Poll(ctx, &ck.PollRequest{WorkerID: "w1", Seq: 1, FreeSlots: 1})
	require.NoError(t, err)
	j := resp.Jobs[0]
	out := leadertest.Block(ck.OutputID(j.Job, j.Token, 0), "acme", 0, 0)
	out.Level, out.MaxTime, out.Size = 1, 2e9, 200
	out.Datasets[0].MaxTime, out.Datasets[0].Size = 2e9, 200
	resp, err = svc.Poll(ctx, &ck.PollRequest{WorkerID: "w1", Seq: 2, Updates: []ck.StatusUpdate{{Job: j.Job, Token: j.Token, Status: ck.ReportSuccess, Outputs: []ck.BlockMeta{out}}}})
	require.NoError(t, err)
	require.Equal(t, ck.OutcomeCompleted, resp.Jobs[0].Outcome)

	m := svc.Metrics()
	require.Equal(t, uint64(2), m.PollSeconds.Count)
	require.Equal(t, uint64(1), m.JobSeconds.Count)
	require.Positive(t, m.JobSeconds.Sum)
	require.Contains(t, m.LastCompletion, uint32(0))
	require.Equal(t, m.PollSeconds.Count, m.PollSeconds.Counts[len(m.PollSeconds.Counts)-1], "every poll under the largest bound")
}

// TestServiceLogsOutcomes: the leader logs a failure, an exclusion and a
// refusal once each, with structured attributes; a retried poll logs
// nothing more.
func TestServiceLogsOutcomes(t *testing.T) {
	var buf bytes.Buffer
	maxFailures := func(cfg *raftfsm.Config) { cfg.Scheduler.MaxFailures = 2 }
	svc, _, _ := newMemService(t, maxFailures, acmePair(), leader.WithLogger(slog.New(slog.NewJSONHandler(&buf, nil))))
	ctx := context.Background()

	seq := uint64(0)
	fail := func() {
		seq++
		resp, err := svc.Poll(ctx, &ck.PollRequest{WorkerID: "w1", Seq: seq, FreeSlots: 1})
		require.NoError(t, err)
		require.Len(t, resp.Jobs, 1)
		j := resp.Jobs[0]
		seq++
		req := &ck.PollRequest{WorkerID: "w1", Seq: seq, Updates: []ck.StatusUpdate{{Job: j.Job, Token: j.Token, Status: ck.ReportFailure, Reason: "disk full"}}}
		_, err = svc.Poll(ctx, req)
		require.NoError(t, err)
		_, err = svc.Poll(ctx, req) // a retry: answered from the poll log
		require.NoError(t, err)
	}
	fail()
	fail()
	_, err := svc.Poll(ctx, &ck.PollRequest{WorkerID: "w1", Seq: seq + 1, Updates: []ck.StatusUpdate{{Job: "a-job", Token: 0, Status: ck.ReportSuccess}}})
	require.Error(t, err)

	var msgs []string
	for _, line := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		var rec map[string]any
		require.NoError(t, json.Unmarshal(line, &rec))
		msg := rec["msg"].(string)
		switch msg {
		case "leader: took office":
			continue
		case "leader: poll refused":
			require.Equal(t, "WARN", rec["level"])
		default:
			require.Equal(t, "disk full", rec["reason"], msg)
			require.Equal(t, ck.PublicWorkerName("w1"), rec["worker"], "workers are logged by public name")
			require.NotEmpty(t, rec["job"])
		}
		msgs = append(msgs, msg)
	}
	require.Equal(t, []string{
		"leader: job failed; it will be retried",
		"leader: job excluded at its failure limit; it runs again only when an operator retries it",
		"leader: poll refused",
	}, msgs)
}

// newMemService returns a service with opts over a single-node log
// (leadertest.MemLog) of a state machine whose level 0 batches two blocks
// (edit, if not nil, changes the configuration further), the state machine
// and the log, once blocks are added through the service.
func newMemService(t *testing.T, edit func(*raftfsm.Config), blocks []ck.BlockMeta, opts ...leader.Option) (*leader.Service, *raftfsm.FSM, *leadertest.MemLog) {
	t.Helper()
	cfg := raftfsm.DefaultConfig()
	cfg.Planner.Levels[0].MaxBlocks = 2
	if edit != nil {
		edit(&cfg)
	}
	f, err := raftfsm.New(cfg)
	require.NoError(t, err)
	log := leadertest.NewMemLog(f)
	svc := leader.New(log, f, opts...)
	_, err = svc.AddBlocks(t.Context(), blocks)
	require.NoError(t, err)
	return svc, f, log
}

// acmePair is two level-0 blocks of tenant acme on shard 0: one batch.
func acmePair() []ck.BlockMeta {
	return []ck.BlockMeta{leadertest.Block("seg-1", "acme", 0, 0), leadertest.Block("seg-2", "acme", 0, 1e9)}
}

// fakeCluster is an in-memory log shared by a few nodes, for the service's
// tests. Appends commit at once; each node applies the committed entries
// when it proposes, at a barrier, and when it settles. Its faults:
//
//   - drop: a proposal is lost without a word (the proposer learns nothing
//     and its wait times out), as etcd-io/raft may do;
//   - lostReply: the entry is appended and applied, but the proposer is
//     told the outcome is unknown;
//   - conflict: a foreign entry lands between a poll's preparation and its
//     append, and an append prepared on a stale index is refused with
//     ErrConflict, as the bucket log does.
//
// Proposals are matched to applied entries by a request ID in the entry's
// envelope (leader.Requests), so the log learns indexes only when applying.
type fakeCluster struct {
	mu      sync.Mutex
	rng     *rand.Rand
	entries []fakeEntry
	term    uint64
	leader  int
	nodes   []*fakeNode
	svcs    []*leader.Service

	drop, lostReply, conflict float64
}

type fakeEntry struct {
	term     uint64
	proposer int
	req      uint64
	cmd      []byte
}

type fakeNode struct {
	c       *fakeCluster
	id      int
	fsm     *raftfsm.FSM
	reqs    *leader.Requests
	applied int
}

func newFakeCluster(t *testing.T, n int, seed uint64, opts ...leader.Option) *fakeCluster {
	c := &fakeCluster{rng: rand.New(rand.NewPCG(seed, 1)), term: 1}
	cfg := raftfsm.DefaultConfig()
	cfg.Planner.Levels[0].MaxBlocks = 4
	for i := range n {
		f, err := raftfsm.New(cfg)
		require.NoError(t, err)
		node := &fakeNode{c: c, id: i, fsm: f, reqs: leader.NewRequests(uint64(i+1) << 48)}
		c.nodes = append(c.nodes, node)
		c.svcs = append(c.svcs, leader.New(node, f, append([]leader.Option{leader.WithProposeTimeout(200 * time.Millisecond)}, opts...)...))
	}
	return c
}

func (c *fakeCluster) Services() []*leader.Service { return c.svcs }

func (c *fakeCluster) ChangeLeader(testing.TB) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.leader = (c.leader + 1 + c.rng.IntN(len(c.nodes)-1)) % len(c.nodes)
	c.term++
}

func (c *fakeCluster) Settle(testing.TB) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.nodes {
		n.applyLocked()
	}
}

func (c *fakeCluster) chance(p float64) bool { return p > 0 && c.rng.Float64() < p }

// applyLocked applies the committed entries this node has not applied,
// handing its own proposals' results to their waiters.
func (n *fakeNode) applyLocked() {
	for ; n.applied < len(n.c.entries); n.applied++ {
		e := n.c.entries[n.applied]
		idx := uint64(n.applied + 1)
		res, err := n.fsm.Apply(ck.Entry{Index: idx, Term: e.term}, e.cmd)
		if e.proposer == n.id {
			n.reqs.Deliver(e.req, leader.Applied{Index: idx, Term: e.term, Result: res, Err: err})
		}
	}
}

// envelope is what the host's entries carry: the request ID, then
// compactkit's command (the fake keeps them apart; a real host encodes
// both).
func envelope(req uint64, cmd []byte) []byte {
	return append(binary.BigEndian.AppendUint64(nil, req), cmd...)
}

func (n *fakeNode) Propose(ctx context.Context, cmd []byte, preparedAt uint64) (leader.Applied, error) {
	c := n.c
	c.mu.Lock()
	if c.leader != n.id {
		l := n.leadershipLocked()
		c.mu.Unlock()
		return leader.Applied{}, &leader.NotLeaderError{LeaderID: l.LeaderID}
	}
	if preparedAt != 0 && c.chance(c.conflict) {
		// Another writer's entry lands first.
		foreign, _ := (&raftfsm.Command{Time: 1, Watermark: &raftfsm.Watermark{OldestReader: 0}}).MarshalVersion(raftfsm.CommandVersion)
		c.entries = append(c.entries, fakeEntry{term: c.term, proposer: -1, cmd: foreign})
	}
	if tip := uint64(len(c.entries)); c.conflict > 0 && preparedAt != 0 && preparedAt != tip {
		n.applyLocked()
		c.mu.Unlock()
		return leader.Applied{}, fmt.Errorf("fake: prepared at %d, tip %d: %w", preparedAt, tip, leader.ErrConflict)
	}
	id := n.reqs.Register()
	env := envelope(id, cmd)
	if !c.chance(c.drop) {
		c.entries = append(c.entries, fakeEntry{term: c.term, proposer: n.id, req: binary.BigEndian.Uint64(env), cmd: env[8:]})
	}
	n.applyLocked()
	lost := c.chance(c.lostReply)
	c.mu.Unlock()
	if lost {
		n.reqs.Forget(id)
		return leader.Applied{}, fmt.Errorf("fake: reply lost: %w", leader.ErrOutcomeUnknown)
	}
	return n.reqs.Wait(ctx, id)
}

func (n *fakeNode) leadershipLocked() leader.Leadership {
	return leader.Leadership{Leads: n.c.leader == n.id, Term: n.c.term, LeaderID: fmt.Sprint(n.c.leader)}
}

func (n *fakeNode) Leader() leader.Leadership {
	n.c.mu.Lock()
	defer n.c.mu.Unlock()
	return n.leadershipLocked()
}

func (n *fakeNode) Barrier(ctx context.Context) error {
	n.c.mu.Lock()
	defer n.c.mu.Unlock()
	n.applyLocked()
	return ctx.Err()
}
