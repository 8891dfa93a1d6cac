package hraftnode_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/raftfsm/hraft"
	"github.com/compactkit/compactkit/raftfsm/hraft/internal/hrafttest"
	"github.com/compactkit/compactkit/scheduler"
)

// fakeClock is a leader clock shared by every node of a test cluster.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// TestService checks the service's contract on a quiet cluster, in both
// modes: followers refuse with the leader's address, tokens are the right
// entry's index, a retried poll proposes nothing, bad and stale requests
// are refused, a new leader extends leases before serving.
func TestService(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) { testService(t, mode) })
	}
}

func testService(t *testing.T, mode mode) {
	clk := &fakeClock{}
	clk.ns.Store(hrafttest.T0)
	// Long timeouts: the exact index checks below need a leader that does
	// not step down when the machine is loaded.
	c := newCluster(t, 3, mode, time.Second, hraft.WithLeader(leader.WithClock(clk.now)))
	ctx := context.Background()
	l := c.leader()
	lead := c.nodes[l]
	follower := c.nodes[(l+1)%3]

	// Followers refuse every call, naming the leader (once they know it).
	_, id, err := follower.WaitLeader(ctx)
	require.NoError(t, err)
	require.Equal(t, lead.ID, id)
	checkNotLeader := func(err error) {
		t.Helper()
		require.ErrorIs(t, err, leader.ErrNotLeader)
		var nle *leader.NotLeaderError
		require.ErrorAs(t, err, &nle)
		require.Equal(t, string(lead.ID), nle.LeaderID)
		require.Equal(t, string(lead.Addr), nle.LeaderAddr)
		require.Contains(t, nle.Error(), string(lead.Addr))
	}
	_, err = follower.Service.Poll(ctx, &ck.PollRequest{WorkerID: "w1", Seq: 1, FreeSlots: 1})
	checkNotLeader(err)
	_, err = follower.Service.AddBlocks(ctx, hrafttest.NewWorkload(t, 0).NewBlocks(1))
	checkNotLeader(err)
	_, err = follower.Service.Read(ctx)
	checkNotLeader(err)
	_, err = follower.Service.Propose(ctx, &raftfsm.Command{Operator: &raftfsm.Operator{Action: raftfsm.OpRetry}})
	checkNotLeader(err)
	_, err = follower.Service.Propose(ctx, &raftfsm.Command{Watermark: &raftfsm.Watermark{OldestReader: hrafttest.T0}})
	checkNotLeader(err)
	require.False(t, follower.Service.IsLeader())
	require.True(t, lead.Service.IsLeader())

	// Blocks in, a job out; its token is the index of the poll entry (the
	// prepare entry in two-commit mode).
	w := hrafttest.NewWorkload(t, 1)
	res, err := lead.Service.AddBlocks(ctx, w.NewBlocks(8))
	require.NoError(t, err)
	require.Len(t, res, 8)
	for _, r := range res {
		require.NoError(t, r.Err)
		require.True(t, r.Queued)
	}
	k := w.Workers[0]
	req := w.Request(k, 1)
	before := lead.Raft.LastIndex()
	resp, err := lead.Service.Poll(ctx, req)
	require.NoError(t, err)
	after := lead.Raft.LastIndex()
	require.Len(t, resp.Jobs, 1)
	job := resp.Jobs[0]
	require.Equal(t, ck.OutcomeAssigned, job.Outcome)
	require.Equal(t, hrafttest.T0+int64(15*time.Second), job.Deadline, "stamped with the leader's clock")
	if mode == singleCommit {
		require.Equal(t, before+1, after, "one entry per poll")
		require.Equal(t, fencing.Token(after), job.Token)
	} else {
		require.Equal(t, before+2, after, "two entries per poll")
		require.Equal(t, fencing.Token(after-1), job.Token)
	}
	w.Handle(k, resp)

	// A retried request gets the recorded response and proposes nothing.
	again, err := lead.Service.Poll(ctx, req)
	require.NoError(t, err)
	require.Equal(t, resp, again)
	require.Equal(t, after, lead.Raft.LastIndex())

	// Malformed, stale and cancelled requests.
	_, err = lead.Service.Poll(ctx, &ck.PollRequest{WorkerID: "w0", Seq: 0})
	require.ErrorIs(t, err, raftfsm.ErrInvalidRequest)
	_, err = lead.Service.Poll(ctx, nil)
	require.ErrorIs(t, err, raftfsm.ErrInvalidRequest)
	req2 := w.Request(k, 0)
	resp2, err := lead.Service.Poll(ctx, req2)
	require.NoError(t, err)
	require.Equal(t, ck.OutcomeRenewed, resp2.Jobs[0].Outcome)
	_, err = lead.Service.Poll(ctx, req)
	require.ErrorIs(t, err, raftfsm.ErrStaleRequest)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = lead.Service.Poll(cctx, w.Request(k, 0))
	require.ErrorIs(t, err, context.Canceled)
	k.Seq-- // that request never reached the log

	// Operator commands and queries.
	_, err = lead.Service.Propose(ctx, &raftfsm.Command{Operator: &raftfsm.Operator{Action: raftfsm.OpCancel, Job: "no-such-job"}})
	require.ErrorIs(t, err, raftfsm.ErrOperator)
	_, err = lead.Service.Propose(ctx, &raftfsm.Command{})
	require.ErrorIs(t, err, raftfsm.ErrInvalidCommand)
	for _, cmd := range []*raftfsm.Command{
		{Watermark: &raftfsm.Watermark{OldestReader: hrafttest.T0}},
		{ClusterVersion: &raftfsm.SetClusterVersion{Version: raftfsm.CommandVersion}},
		{Config: &c.cfg},
	} {
		_, err = lead.Service.Propose(ctx, cmd)
		require.NoError(t, err)
	}
	rr, err := lead.Service.Propose(ctx, &raftfsm.Command{Retention: &raftfsm.Retention{Tenant: "t2", Before: hrafttest.T0}})
	require.NoError(t, err)
	require.Empty(t, rr.Dropped)
	f, err := lead.Service.Read(ctx)
	require.NoError(t, err)
	require.Same(t, lead.Service.FSM(), f)
	require.Equal(t, 1, f.Stats().Scheduler.Jobs)
	jobs, _ := f.Jobs(scheduler.Filter{Status: ck.StatusInProgress}, "", 10)
	require.Len(t, jobs, 1)
	js, plan, ok := f.Job(job.Job)
	require.True(t, ok)
	require.Equal(t, job.Plan.Sources, plan.Sources)
	require.Equal(t, job.Token, js.Token)
	q, _ := f.Quarantined("", 10)
	require.Empty(t, q)
	view := f.Index()
	defer view.Close()
	require.Equal(t, 8, view.Len())

	// Ten seconds later the leader dies; the new one extends the lease to
	// a full lease from its first command before serving anything.
	clk.advance(10 * time.Second)
	c.stop(l)
	nl := c.leader()
	f, err = c.nodes[nl].Service.Read(ctx)
	require.NoError(t, err)
	js, _, ok = f.Job(job.Job)
	require.True(t, ok)
	require.Equal(t, hrafttest.T0+int64(25*time.Second), js.Deadline)
	require.Equal(t, job.Token, js.Token)

	// The worker completes the job at the new leader.
	resp3, err := c.nodes[nl].Service.Poll(ctx, w.Request(k, 0))
	require.NoError(t, err)
	require.Equal(t, ck.OutcomeCompleted, resp3.Jobs[0].Outcome)

	// A closed service refuses.
	require.NoError(t, c.nodes[nl].Service.Close())
	require.NoError(t, c.nodes[nl].Service.Close())
	_, err = c.nodes[nl].Service.Poll(ctx, w.Request(k, 0))
	require.ErrorIs(t, err, leader.ErrNotLeader)
	require.True(t, errors.Is(err, leader.ErrClosed) || errors.Is(err, leader.ErrNotLeader))
}
