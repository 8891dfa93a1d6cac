package raftfsm_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/raftfsm"
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
