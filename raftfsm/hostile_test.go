package raftfsm_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/compactkittest"
	"github.com/compactkit/compactkit/internal/ident"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/scheduler"
)

// Commands over the replicated limits are refused before any work, by
// Prepare, by Encode and by Apply, and change nothing.
func TestLimits(t *testing.T) {
	cfg := testConfig()
	cfg.Limits = raftfsm.Limits{MaxReports: 2, MaxBlocks: 3, MaxDatasets: 2, MaxOutputs: 1}
	n := newNode(t, cfg)
	n.mustApply(addBlocks(blocks("a", "t1", 1, 3, t0)))
	before := n.snapshot()

	var updates []ck.StatusUpdate
	for i := range 3 {
		updates = append(updates, ck.StatusUpdate{Job: fmt.Sprintf("j%d", i), Token: 1, Status: ck.ReportInProgress})
	}
	_, err := n.f.Prepare(&ck.PollRequest{WorkerID: "w", Seq: 1, Updates: updates}, n.now)
	require.ErrorIs(t, err, raftfsm.ErrLimit)
	require.ErrorIs(t, err, raftfsm.ErrInvalidRequest)
	require.Contains(t, err.Error(), "split them across polls")

	_, err = n.f.Encode(addBlocks(blocks("b", "t1", 1, 4, t0)), n.now)
	require.ErrorIs(t, err, raftfsm.ErrLimit)
	wide := block("wide", "t1", 1, 0, t0)
	wide.Datasets = append(wide.Datasets, wide.Datasets[0], wide.Datasets[0])
	wide.Datasets[1].Name, wide.Datasets[2].Name = "ds2", "ds3"
	_, err = n.f.Encode(addBlocks([]ck.BlockMeta{wide}), n.now)
	require.ErrorIs(t, err, raftfsm.ErrLimit)

	// A command that bypassed the leader's checks is refused by Apply.
	reports := make([]raftfsm.Report, 3)
	for i := range reports {
		reports[i] = raftfsm.Report{Job: fmt.Sprintf("j%d", i), Token: 1, Status: ck.ReportInProgress}
	}
	for _, cmd := range []*raftfsm.Command{
		addBlocks(blocks("b", "t1", 1, 4, t0)),
		addBlocks([]ck.BlockMeta{wide}),
		{Poll: &raftfsm.Poll{WorkerID: "w", Seq: 1, Reports: reports}},
	} {
		_, err := n.apply(cmd)
		require.ErrorIs(t, err, raftfsm.ErrLimit)
		n.index--
		n.log = n.log[:len(n.log)-1]
	}
	require.Equal(t, before, n.snapshot(), "nothing changed")

	// The limits are replicated: a restored replica keeps them.
	f, err := raftfsm.Restore(bytes.NewReader(n.snapshot()))
	require.NoError(t, err)
	require.Equal(t, cfg.Limits, f.Config().Limits)
}

// Hostile requests against any state a history reaches: a forged report
// is answered "no lease" and changes no job, an oversized poll and a block
// with a malformed ID are refused, and nothing refused changes the state.
func TestHostileAfterHistories(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := testConfig()
		n := newNode(t, cfg)
		for _, e := range compactkittest.History(cfg, 0, 40).Draw(t, "history") {
			_, err := n.f.Apply(e.Entry, e.Data)
			require.NoError(t, err)
			n.index, n.now = e.Index, e.Time
		}
		before := n.snapshot()
		jobs, _ := n.f.Jobs(scheduler.Filter{}, "", 0)

		_, err := n.f.Prepare(compactkittest.OversizedPoll(cfg.Limits).Draw(t, "oversized"), n.now)
		require.ErrorIs(t, err, raftfsm.ErrLimit)
		bad := compactkittest.Block(compactkittest.Space{}).Draw(t, "block")
		bad.ID = compactkittest.MalformedID().Draw(t, "id")
		_, err = n.f.Encode(addBlocks([]ck.BlockMeta{bad}), n.now)
		require.True(t, errors.Is(err, ident.ErrInvalidID) || errors.Is(err, ident.ErrEmptyID), "block %q added: %v", bad.ID, err)
		require.Equal(t, before, n.snapshot(), "a refused request changed the state")

		cmd, err := n.f.Prepare(compactkittest.ForgedPoll(n.f).Draw(t, "forged"), n.now)
		require.NoError(t, err)
		for _, j := range n.mustApply(cmd).Poll.Jobs {
			require.Equal(t, ck.OutcomeNoLease, j.Outcome, "forged report on %s", j.Job)
		}
		after, _ := n.f.Jobs(scheduler.Filter{}, "", 0)
		require.Equal(t, len(jobs), len(after))
		for i := range jobs {
			require.Equal(t, jobs[i].Token, after[i].Token, "job %s", jobs[i].Name)
			require.Equal(t, jobs[i].Status, after[i].Status, "job %s", jobs[i].Name)
			require.Equal(t, jobs[i].Worker, after[i].Worker, "job %s", jobs[i].Name)
		}
	})
}
