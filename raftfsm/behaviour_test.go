package raftfsm_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/internal/snaptest"
	"github.com/compactkit/compactkit/raftfsm"
)

func addBlocks(bs []ck.BlockMeta) *raftfsm.Command {
	return &raftfsm.Command{AddBlocks: &raftfsm.AddBlocks{Blocks: bs}}
}

// Corrupt or truncated snapshots are refused and leave the state intact.
// (The scenarios of snapshots and restored replicas are the transcript
// snapshot.txt.)
func TestRestoreRejectsDamage(t *testing.T) {
	n := newNode(t, testConfig())
	n.mustApply(addBlocks(blocks("a", "t1", 1, 6, t0)))
	n.poll(&ck.PollRequest{WorkerID: "w1", Seq: 1, FreeSlots: 1})
	snap := n.snapshot()
	n.mustApply(addBlocks(blocks("b", "t1", 1, 3, t0)))
	cur := n.snapshot()
	snaptest.RejectsDamage(t, snap, 7, n.f.Restore)
	require.Equal(t, cur, n.snapshot())
}
