package raftfsm_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/raftfsm"
)

func fencingToken(t uint64) fencing.Token { return fencing.Token(t) }

func TestCompactionCycle(t *testing.T) {
	cfg := testConfig()
	cfg.Planner.Levels[1].MaxAge = 0 // the output waits for a full batch
	n := newNode(t, cfg)
	res := n.mustApply(&raftfsm.Command{AddBlocks: &raftfsm.AddBlocks{Blocks: blocks("a", "t1", 1, 4, t0)}})
	for _, b := range res.Blocks {
		require.NoError(t, b.Err)
		require.True(t, b.Queued)
	}
	resp := n.poll(&ck.PollRequest{WorkerID: "w1", Seq: 1, FreeSlots: 2})
	require.Len(t, resp.Jobs, 1)
	job := resp.Jobs[0]
	require.Equal(t, ck.OutcomeAssigned, job.Outcome)
	require.Len(t, job.Plan.Sources, 4)
	require.Equal(t, fencing.Token(n.index), job.Token)

	// Renew, then complete.
	n.advance(5 * time.Second)
	resp = n.poll(&ck.PollRequest{WorkerID: "w1", Seq: 2, Updates: []ck.StatusUpdate{{Job: job.Job, Token: job.Token, Status: ck.ReportInProgress}}})
	require.Equal(t, ck.OutcomeRenewed, resp.Jobs[0].Outcome)
	outs := n.outputs(job.Plan, uint64(job.Token))
	resp = n.poll(&ck.PollRequest{WorkerID: "w1", Seq: 3, Updates: []ck.StatusUpdate{{Job: job.Job, Token: job.Token, Status: ck.ReportSuccess, Outputs: outs}}})
	require.Equal(t, ck.OutcomeCompleted, resp.Jobs[0].Outcome)

	view := n.f.Index()
	require.Equal(t, 1, view.Len())
	require.True(t, view.Live(outs[0].ID))
	st := n.f.Stats()
	require.Equal(t, 1, st.Planner.Levels[1].Queued, "output queued one level up")
	require.Equal(t, 0, st.Planner.Levels[0].Queued)
	require.Equal(t, 4, len(view.Tombstones(ck.Tombstone{}, 0)), "sources tombstoned")
	tenants := n.f.Tenants()
	require.Len(t, tenants, 1)
	require.Equal(t, "t1", tenants[0].Tenant)
	require.Equal(t, uint32(1), tenants[0].Level)
	require.Equal(t, 1, tenants[0].Queued)

	// A retried success report with a new sequence is answered "completed".
	resp = n.poll(&ck.PollRequest{WorkerID: "w1", Seq: 4, Updates: []ck.StatusUpdate{{Job: job.Job, Token: job.Token, Status: ck.ReportSuccess, Outputs: outs}}})
	require.Equal(t, ck.OutcomeCompleted, resp.Jobs[0].Outcome)

	// After the cleanup delay, an idle worker gets a cleanup-only job.
	n.advance(raftfsm.DefaultConfig().Index.CleanupDelay + 2*time.Minute)
	resp = n.poll(&ck.PollRequest{WorkerID: "w2", Seq: 1, FreeSlots: 1})
	require.Len(t, resp.Jobs, 1)
	cl := resp.Jobs[0]
	require.True(t, cl.Plan.CleanupOnly())
	require.Len(t, cl.Plan.Tombstones, 4)
	resp = n.poll(&ck.PollRequest{WorkerID: "w2", Seq: 2, Updates: []ck.StatusUpdate{{Job: cl.Job, Token: cl.Token, Status: ck.ReportSuccess}}})
	require.Equal(t, ck.OutcomeCompleted, resp.Jobs[0].Outcome)
	require.Empty(t, n.f.Index().Tombstones(ck.Tombstone{}, 0), "tombstones confirmed")
}

func TestRetriedPollActsOnce(t *testing.T) {
	n := newNode(t, testConfig())
	n.mustApply(&raftfsm.Command{AddBlocks: &raftfsm.AddBlocks{Blocks: blocks("a", "t1", 1, 8, t0)}})
	req := &ck.PollRequest{WorkerID: "w1", Seq: 1, FreeSlots: 1}
	first := n.poll(req)
	require.Len(t, first.Jobs, 1)
	before := n.snapshot()
	// The reply was lost: the worker retries with the same sequence.
	again := n.poll(req)
	require.Equal(t, first, again)
	after := n.snapshot()
	// Only the applied index and clock moved.
	require.Equal(t, n.f.Stats().Scheduler.Jobs, 1)
	_ = before
	_ = after
	// An older sequence is refused and changes nothing.
	n.mustApply(&raftfsm.Command{AddBlocks: &raftfsm.AddBlocks{Blocks: blocks("b", "t1", 1, 1, t0)}})
	_, err := n.f.Prepare(&ck.PollRequest{WorkerID: "w1", Seq: 0 + 1 - 1 + 1, FreeSlots: 1}, n.now)
	require.NoError(t, err) // seq 1 is the latest: a replay command
	n.poll(&ck.PollRequest{WorkerID: "w1", Seq: 2, FreeSlots: 0})
	_, err = n.f.Prepare(&ck.PollRequest{WorkerID: "w1", Seq: 1, FreeSlots: 1}, n.now)
	require.ErrorIs(t, err, raftfsm.ErrStaleRequest)
}
