package raftfsm_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/internal/snaptest"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/scheduler"
)

func addBlocks(bs []ck.BlockMeta) *raftfsm.Command {
	return &raftfsm.Command{AddBlocks: &raftfsm.AddBlocks{Blocks: bs}}
}

func TestMalformedCommandsChangeNothing(t *testing.T) {
	// At cluster version 1, undecodable bytes are refused and the replica
	// goes on, as the previous release did. (From cluster version 2 they
	// stop the replica: TestCorruptEntryStopsReplica.)
	cfg := testConfig()
	cfg.StartVersion = 1
	v1 := newNode(t, cfg)
	v1.version = 1
	v1.mustApply(addBlocks(blocks("a", "t1", 1, 3, t0)))
	before := v1.snapshot()
	for i, data := range [][]byte{nil, {0xff}, []byte("ckC\x01"), []byte("ckC\x01\x80")} {
		_, err := v1.f.Apply(ck.Entry{Index: v1.index + 1 + uint64(i), Time: v1.now}, data)
		require.Error(t, err)
		require.NotErrorIs(t, err, raftfsm.ErrCorrupt)
	}
	require.Equal(t, before, v1.snapshot())
	v1.mustApply(addBlocks(blocks("b", "t1", 1, 1, t0)))

	n := newNode(t, testConfig())
	n.mustApply(addBlocks(blocks("a", "t1", 1, 3, t0)))
	before = n.snapshot()
	// Structurally valid but ill-formed commands.
	for _, cmd := range []*raftfsm.Command{
		{},
		{AddBlocks: &raftfsm.AddBlocks{}, TookOffice: &raftfsm.TookOffice{}},
		{AddBlocks: &raftfsm.AddBlocks{Blocks: []ck.BlockMeta{{ID: "../x"}}}},
		{Retention: &raftfsm.Retention{}},
		{Operator: &raftfsm.Operator{Action: 99}},
		{Operator: &raftfsm.Operator{Action: raftfsm.OpCancel, Job: "nope"}},
		{Operator: &raftfsm.Operator{Action: raftfsm.OpRetry, Job: "nope"}},
		{Poll: &raftfsm.Poll{WorkerID: "", Seq: 1}},
		{ClusterVersion: &raftfsm.SetClusterVersion{Version: 200}},
	} {
		_, err := n.apply(cmd)
		require.Error(t, err)
		n.index-- // the entry changed nothing; reuse its index
		n.log = n.log[:len(n.log)-1]
	}
	require.Equal(t, before, n.snapshot())
	_, err := n.apply(&raftfsm.Command{Operator: &raftfsm.Operator{Action: raftfsm.OpCancel, Job: "nope"}})
	require.ErrorIs(t, err, raftfsm.ErrOperator)
	require.ErrorIs(t, err, scheduler.ErrUnknownJob)
}

func TestEntriesAppliedOnce(t *testing.T) {
	n := newNode(t, testConfig())
	cmd := addBlocks(blocks("a", "t1", 1, 3, t0))
	n.mustApply(cmd)
	before := n.snapshot()
	data, err := cmd.MarshalBinary()
	require.NoError(t, err)
	res, err := n.f.Apply(ck.Entry{Index: n.index, Time: n.now}, data)
	require.NoError(t, err)
	require.True(t, res.Skipped)
	require.Equal(t, before, n.snapshot())
	_, err = n.f.Apply(ck.Entry{Index: 0}, data)
	require.Error(t, err)
}

func TestSnapshotRestore(t *testing.T) {
	n := newNode(t, testConfig())
	n.mustApply(addBlocks(blocks("a", "t1", 1, 6, t0)))
	n.poll(&ck.PollRequest{WorkerID: "w1", Seq: 1, FreeSlots: 1})
	snap := n.snapshot()

	r, err := raftfsm.Restore(bytes.NewReader(snap))
	require.NoError(t, err)
	var again bytes.Buffer
	require.NoError(t, r.Snapshot(&again))
	require.Equal(t, snap, again.Bytes())

	capt, err := n.f.Capture()
	require.NoError(t, err)
	n.mustApply(addBlocks(blocks("b", "t1", 1, 3, t0))) // after the capture
	var cb bytes.Buffer
	require.NoError(t, capt.Snapshot(&cb))
	require.Equal(t, snap, cb.Bytes(), "a capture writes the state it was taken on")

	// A restored replica applies the rest of the log like the original.
	m := &node{t: t, f: r, index: n.index - 1, now: n.now}
	_, err = m.f.Apply(ck.Entry{Index: n.index, Term: 1, Time: n.now}, n.log[len(n.log)-1])
	require.NoError(t, err)
	require.Equal(t, n.snapshot(), m.snapshot())

	// Corrupt or truncated snapshots are refused and leave the state intact.
	cur := n.snapshot()
	snaptest.RejectsDamage(t, snap, 7, n.f.Restore)
	require.Equal(t, cur, n.snapshot())
}

// Replicas with different local options apply the same entries to the same
// bytes.
func TestVersionSkewLocalOptions(t *testing.T) {
	a := newNode(t, testConfig())
	b := newNode(t, testConfig(), raftfsm.WithCleanupAfter(time.Hour), raftfsm.WithCleanupBatch(1))
	a.mustApply(addBlocks(blocks("a", "t1", 1, 8, t0)))
	a.poll(&ck.PollRequest{WorkerID: "w1", Seq: 1, FreeSlots: 3})
	a.advance(time.Minute)
	a.mustApply(&raftfsm.Command{TookOffice: &raftfsm.TookOffice{}})
	for i, data := range a.log {
		_, err := b.f.Apply(ck.Entry{Index: uint64(i + 1), Term: 1, Time: t0}, data)
		require.NoError(t, err)
	}
	require.Equal(t, a.snapshot(), b.snapshot())
}
