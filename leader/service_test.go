package leader_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
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
