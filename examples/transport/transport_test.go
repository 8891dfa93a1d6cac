package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/index"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/raftfsm/hraft"
)

// fakeBackend serves from a real raftfsm.FSM (for stats, index and
// queries) with injectable behaviour.
type fakeBackend struct {
	mu     sync.Mutex
	fsm    *raftfsm.FSM
	calls  atomic.Int64
	poll   func(*ck.PollRequest) (*ck.PollResponse, error)
	err    func() error // returned by every call when non-nil and it returns non-nil
	panics bool
}

func newFake(t testing.TB) *fakeBackend {
	f, err := raftfsm.New(raftfsm.DefaultConfig())
	require.NoError(t, err)
	return &fakeBackend{fsm: f}
}

func (b *fakeBackend) check() error {
	b.calls.Add(1)
	if b.panics {
		panic("boom")
	}
	if b.err != nil {
		return b.err()
	}
	return nil
}

func (b *fakeBackend) Poll(_ context.Context, req *ck.PollRequest) (*ck.PollResponse, error) {
	if err := b.check(); err != nil {
		return nil, err
	}
	if b.poll != nil {
		return b.poll(req)
	}
	return &ck.PollResponse{}, nil
}

func (b *fakeBackend) AddBlocks(_ context.Context, blocks []ck.BlockMeta) ([]raftfsm.BlockResult, error) {
	if err := b.check(); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	idx, _, _ := b.fsm.LastApplied()
	res, err := b.fsm.ApplyCommand(ck.Entry{Index: idx + 1, Term: 1, Time: 1_700_000_000_000_000_000}, &raftfsm.Command{AddBlocks: &raftfsm.AddBlocks{Blocks: blocks}})
	if err != nil {
		return nil, err
	}
	return res.Blocks, nil
}

func (b *fakeBackend) Operator(_ context.Context, op raftfsm.Operator) (*raftfsm.Result, error) {
	if err := b.check(); err != nil {
		return nil, err
	}
	if op.Action == raftfsm.OpCancel {
		return nil, fmt.Errorf("job %s: %w", op.Job, raftfsm.ErrOperator)
	}
	return &raftfsm.Result{Index: 7, Count: 1}, nil
}

func (b *fakeBackend) Stats(context.Context) (raftfsm.Stats, error) {
	if err := b.check(); err != nil {
		return raftfsm.Stats{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fsm.Stats(), nil
}

func (b *fakeBackend) Index(context.Context) (*raftfsm.IndexView, error) {
	if err := b.check(); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fsm.Index(), nil
}

func block(id, tenant string, t int64) ck.BlockMeta {
	return ck.BlockMeta{ID: id, Tenant: tenant, MinTime: t, MaxTime: t + 10, Size: 100,
		Datasets: []ck.DatasetMeta{{Name: "cpu", Size: 100, Records: 3, MinTime: t, MaxTime: t + 10}}}
}

func serve(t testing.TB, b Backend, opts ...ServerOption) string {
	srv := httptest.NewServer(NewHandler(b, opts...))
	t.Cleanup(srv.Close)
	return srv.URL
}

func client(t testing.TB, peers ...string) *Client {
	c, err := NewClient(peers, WithRetryFor(2*time.Second), WithBackoff(time.Millisecond))
	require.NoError(t, err)
	return c
}

func TestPollRoundTrip(t *testing.T) {
	b := newFake(t)
	want := &ck.PollResponse{Jobs: []ck.JobReply{{Job: "j1", Outcome: ck.OutcomeAssigned, Token: 12, Lease: 15 * time.Second,
		Plan: &ck.JobPlan{Name: "j1", Tenant: "acme", Sources: []string{"a", "b"}}}}}
	var got *ck.PollRequest
	b.poll = func(r *ck.PollRequest) (*ck.PollResponse, error) { got = r; return want, nil }
	c := client(t, serve(t, b))
	req := &ck.PollRequest{WorkerID: "w1", Seq: 3, FreeSlots: 2, Updates: []ck.StatusUpdate{
		{Job: "j0", Token: 5, Status: ck.ReportFailure, Reason: "disk full"}}}
	resp, err := c.Poll(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, req.WorkerID, got.WorkerID)
	assert.Equal(t, req.Updates[0].Reason, got.Updates[0].Reason)
	assert.Equal(t, want.Jobs[0].Plan.Sources, resp.Jobs[0].Plan.Sources)
	assert.Equal(t, want.Jobs[0].Lease, resp.Jobs[0].Lease)
	require.NoError(t, resp.Validate())
}

func TestAddBlocksQueryIndexStats(t *testing.T) {
	b := newFake(t)
	c := client(t, serve(t, b))
	ctx := context.Background()
	res, err := c.AddBlocks(ctx, []ck.BlockMeta{block("b1", "acme", 100), block("b2", "acme", 200), block("b3", "umbrella", 100)})
	require.NoError(t, err)
	require.Len(t, res, 3)
	for _, r := range res {
		assert.NoError(t, r.Err())
		assert.True(t, r.Queued)
	}
	// A retried add reports duplicates.
	res, err = c.AddBlocks(ctx, []ck.BlockMeta{block("b1", "acme", 100)})
	require.NoError(t, err)
	assert.True(t, res[0].Duplicate)
	assert.ErrorIs(t, res[0].Err(), index.ErrDuplicate)

	q, err := c.Query(ctx, "acme", 0, 150, nil)
	require.NoError(t, err)
	assert.Equal(t, 1, q.ReadAmplification)
	assert.Equal(t, "b1", q.Blocks[0].ID)
	q, err = c.Query(ctx, "acme", 0, 1000, nil)
	require.NoError(t, err)
	assert.Equal(t, 2, q.ReadAmplification)

	page, next, err := c.Index(ctx, "", 2)
	require.NoError(t, err)
	assert.Equal(t, []string{"b1", "b2"}, ids(page))
	assert.Equal(t, "b2", next)
	page, next, err = c.Index(ctx, next, 2)
	require.NoError(t, err)
	assert.Equal(t, []string{"b3"}, ids(page))
	assert.Empty(t, next)
	all, err := c.AllBlocks(ctx)
	require.NoError(t, err)
	assert.Len(t, all, 3)

	st, err := c.Stats(ctx)
	require.NoError(t, err)
	assert.EqualValues(t, 3, st.Index.Blocks)
	assert.Equal(t, 3, st.Planner.Queued)
}

func ids(bs []ck.BlockMeta) []string {
	var out []string
	for _, b := range bs {
		out = append(out, b.ID)
	}
	return out
}

func TestOperator(t *testing.T) {
	c := client(t, serve(t, newFake(t)))
	res, err := c.Operator(context.Background(), raftfsm.Operator{Action: raftfsm.OpRetry})
	require.NoError(t, err)
	assert.Equal(t, OperatorResult{Index: 7, Count: 1}, *res)
	_, err = c.Operator(context.Background(), raftfsm.Operator{Action: raftfsm.OpCancel, Job: "nope"})
	assert.ErrorIs(t, err, raftfsm.ErrOperator)
	var te *Error
	require.ErrorAs(t, err, &te)
	assert.Equal(t, http.StatusUnprocessableEntity, te.Status)
}

func TestFollowerRedirectsToLeader(t *testing.T) {
	leader := newFake(t)
	leaderURL := serve(t, leader)
	follower := newFake(t)
	follower.err = func() error {
		return &hraft.NotLeaderError{LeaderID: "n2", LeaderAddr: "127.0.0.1:7002", Cause: raft.ErrNotLeader}
	}
	var asked string
	followerURL := serve(t, follower, WithLeaderURL(func(id, _ string) string {
		asked = id
		return leaderURL
	}))

	// Raw answer: 421 with the leader's URL.
	resp, err := http.Post(followerURL+PathPoll, "application/json", strings.NewReader(`{"WorkerID":"w","Seq":1}`))
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusMisdirectedRequest, resp.StatusCode)
	assert.Contains(t, string(body), leaderURL)
	assert.Equal(t, "n2", asked)

	c := client(t, followerURL, leaderURL)
	_, err = c.Poll(context.Background(), &ck.PollRequest{WorkerID: "w", Seq: 1})
	require.NoError(t, err)
	assert.Equal(t, leaderURL, c.Leader())
	assert.EqualValues(t, 1, c.Redirects())
	assert.EqualValues(t, 1, leader.calls.Load())
}

func TestRetriesAcrossLeaderChange(t *testing.T) {
	// Two nodes; leadership moves between them while the client works.
	var leaderIdx atomic.Int32
	var urls [2]string
	nodes := [2]*fakeBackend{newFake(t), newFake(t)}
	electing := atomic.Bool{}
	for i := range nodes {
		nodes[i].err = func() error {
			if electing.Load() {
				return &hraft.NotLeaderError{} // no leader known
			}
			if int(leaderIdx.Load()) != i {
				l := leaderIdx.Load()
				return &hraft.NotLeaderError{LeaderID: fmt.Sprint(l)}
			}
			return nil
		}
		urls[i] = serve(t, nodes[i], WithLeaderURL(func(id, _ string) string {
			var n int
			_, _ = fmt.Sscan(id, &n)
			return urls[n]
		}))
	}
	c := client(t, urls[0], urls[1])
	ctx := context.Background()
	for seq := uint64(1); seq <= 6; seq++ {
		switch seq {
		case 2:
			leaderIdx.Store(1)
		case 4:
			// An election: nobody leads for a moment, then node 0 does.
			electing.Store(true)
			go func() {
				time.Sleep(20 * time.Millisecond)
				leaderIdx.Store(0)
				electing.Store(false)
			}()
		}
		_, err := c.Poll(ctx, &ck.PollRequest{WorkerID: "w", Seq: seq})
		require.NoError(t, err, "seq %d", seq)
	}
	assert.Equal(t, urls[0], c.Leader())
}

func TestGivesUpWithoutLeader(t *testing.T) {
	b := newFake(t)
	b.err = func() error { return &hraft.NotLeaderError{} }
	u := serve(t, b)
	c, err := NewClient([]string{u}, WithRetryFor(30*time.Millisecond), WithBackoff(time.Millisecond))
	require.NoError(t, err)
	_, err = c.Poll(context.Background(), &ck.PollRequest{WorkerID: "w", Seq: 1})
	assert.ErrorIs(t, err, ErrUnavailable)
	assert.NotErrorIs(t, err, ck.ErrRejected)

	// A dead peer: connection refused, retried, then given up.
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	c, err = NewClient([]string{deadURL}, WithRetryFor(20*time.Millisecond), WithBackoff(time.Millisecond))
	require.NoError(t, err)
	_, err = c.Stats(context.Background())
	assert.ErrorIs(t, err, ErrUnavailable)

	// The context ends the retries.
	c, err = NewClient([]string{u}, WithRetryFor(time.Hour), WithBackoff(time.Millisecond))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	_, err = c.Poll(ctx, &ck.PollRequest{WorkerID: "w", Seq: 1})
	assert.ErrorIs(t, err, context.Canceled)
}

func TestErrorMapping(t *testing.T) {
	cases := []struct {
		name     string
		err      error
		status   int
		is       []error
		isNot    []error
		attempts int64
	}{
		{"invalid poll", fmt.Errorf("success without outputs: %w", raftfsm.ErrInvalidRequest), 400,
			[]error{ck.ErrRejected, raftfsm.ErrInvalidRequest, ErrBadRequest}, nil, 1},
		{"stale poll", fmt.Errorf("seq 3 < 5: %w", raftfsm.ErrStaleRequest), 409,
			[]error{raftfsm.ErrStaleRequest}, []error{ck.ErrRejected}, 1},
		{"internal", errors.New("disk on fire"), 500, []error{ErrServer}, []error{ck.ErrRejected}, 1},
		{"closed", &hraft.NotLeaderError{Cause: hraft.ErrClosed}, 503, []error{ErrUnavailable}, []error{ck.ErrRejected}, 0},
		{"timeout", context.DeadlineExceeded, 504, []error{ErrUnavailable}, []error{ck.ErrRejected}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newFake(t)
			b.err = func() error { return tc.err }
			u := serve(t, b)
			c, err := NewClient([]string{u}, WithRetryFor(0), WithBackoff(time.Millisecond))
			require.NoError(t, err)
			_, err = c.Poll(context.Background(), &ck.PollRequest{WorkerID: "w", Seq: 1})
			require.Error(t, err)
			var te *Error
			require.ErrorAs(t, err, &te)
			assert.Equal(t, tc.status, te.Status)
			assert.NotEmpty(t, te.ErrorBody.Error)
			for _, want := range tc.is {
				assert.ErrorIs(t, err, want)
			}
			for _, not := range tc.isNot {
				assert.NotErrorIs(t, err, not)
			}
			if tc.attempts > 0 {
				assert.Equal(t, tc.attempts, b.calls.Load(), "a definitive answer is not retried")
			}
		})
	}
}

func TestMalformedRequests(t *testing.T) {
	b := newFake(t)
	u := serve(t, b)
	long := strings.Repeat("x", 300)
	cases := []struct {
		method, path, body string
		status             int
	}{
		{"POST", PathPoll, ``, 400},
		{"POST", PathPoll, `{`, 400},
		{"POST", PathPoll, `[]`, 400},
		{"POST", PathPoll, `null`, 400},
		{"POST", PathPoll, `{"WorkerID":"w","Seq":1} {}`, 400},
		{"POST", PathPoll, `{"WorkerID":"w","Seq":1,"Bogus":1}`, 400},
		{"POST", PathPoll, `{"WorkerID":"","Seq":1}`, 400},
		{"POST", PathPoll, `{"WorkerID":"w","Seq":0}`, 400},
		{"POST", PathPoll, `{"WorkerID":"w","Seq":-1}`, 400},
		{"POST", PathPoll, `{"WorkerID":"w","Seq":1,"FreeSlots":-3}`, 400},
		{"POST", PathPoll, `{"WorkerID":"w","Seq":1,"Updates":[{"Job":"j","Token":1,"Status":9}]}`, 400},
		{"POST", PathPoll, `{"WorkerID":"w","Seq":1,"Updates":[{"Job":"j","Token":1,"Status":1},{"Job":"j","Token":1,"Status":1}]}`, 400},
		{"POST", PathPoll, `{"WorkerID":"` + long + `","Seq":1}`, 400},
		{"POST", PathPoll, `{"WorkerID":"w","Seq":18446744073709551616}`, 400},
		{"GET", PathPoll, ``, 405},
		{"POST", PathBlocks, `{"blocks":[]}`, 400},
		{"POST", PathBlocks, `{"blocks":[{"ID":"../x","MinTime":1,"MaxTime":2,"Datasets":[{"Name":"a","Tenant":"t"}]}]}`, 400},
		{"POST", PathBlocks, `{"blocks":[{"ID":"x","MinTime":5,"MaxTime":2,"Tenant":"t"}]}`, 400},
		{"POST", PathBlocks, `{"blocks":[{"ID":"x","MinTime":1,"MaxTime":2}]}`, 400},
		{"POST", PathBlocks, `{"blocks":{}}`, 400},
		{"POST", PathOperator, `{"Action":0}`, 400},
		{"POST", PathOperator, `{"Action":99}`, 400},
		{"POST", PathOperator, `{"Action":5}`, 400},
		{"POST", PathOperator, `{"Action":1,"Tenant":"a\u0000"}`, 400},
		{"POST", PathOperator, `"pause"`, 400},
		{"GET", PathQuery, ``, 400},
		{"GET", PathQuery + "?tenant=a&from=5&to=1", ``, 400},
		{"GET", PathQuery + "?tenant=a&from=x&to=1", ``, 400},
		{"GET", PathQuery + "?tenant=a&from=1&to=2&shard=-1", ``, 400},
		{"GET", PathQuery + "?tenant=%00&from=1&to=2", ``, 400},
		{"GET", PathIndex + "?limit=0", ``, 400},
		{"GET", PathIndex + "?limit=1000000", ``, 400},
		{"POST", PathStats, `{}`, 405},
		{"GET", "/v2/nothing", ``, 404},
	}
	for _, tc := range cases {
		req, err := http.NewRequest(tc.method, u+tc.path, strings.NewReader(tc.body))
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, tc.status, resp.StatusCode, "%s %s %s: %s", tc.method, tc.path, tc.body, data)
		assert.Contains(t, string(data), `"error":"`, "%s %s: the answer says what is wrong", tc.method, tc.path)
	}
	assert.Zero(t, b.calls.Load(), "no malformed request reached the backend")

	// An oversized body.
	small := serve(t, b, WithMaxBody(64))
	resp, err := http.Post(small+PathPoll, "application/json", strings.NewReader(`{"WorkerID":"`+long+`","Seq":1}`))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)

	// A 400 on a poll is a rejection for the worker.
	c := client(t, u)
	_, err = c.Poll(context.Background(), &ck.PollRequest{WorkerID: "w", Seq: 0})
	assert.ErrorIs(t, err, ck.ErrRejected)
	assert.ErrorIs(t, err, ErrBadRequest)
}

func TestBackendPanicIsAnswered(t *testing.T) {
	b := newFake(t)
	b.panics = true
	u := serve(t, b)
	c, err := NewClient([]string{u}, WithRetryFor(0))
	require.NoError(t, err)
	_, err = c.Stats(context.Background())
	var te *Error
	require.ErrorAs(t, err, &te)
	assert.Equal(t, http.StatusInternalServerError, te.Status)
	b.panics = false
	_, err = c.Stats(context.Background())
	assert.NoError(t, err, "the server still serves")
}

func TestNewClientValidates(t *testing.T) {
	for _, peers := range [][]string{nil, {"localhost:80"}, {"ftp://x"}, {"http://"}} {
		_, err := NewClient(peers)
		assert.ErrorIs(t, err, ErrBadRequest, "%q", peers)
	}
}
