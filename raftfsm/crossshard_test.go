package raftfsm_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/raftfsm"
)

// completeCrossShard adds four level-0 blocks over four shards of tenant,
// runs the cross-shard job over them to success and returns the result of
// the completion.
func completeCrossShard(t *testing.T, n *node, tenant string, seq *uint64) raftfsm.ChangeResult {
	t.Helper()
	var bs []ck.BlockMeta
	for shard := range uint32(4) {
		bs = append(bs, blocks(fmt.Sprintf("%s-%d-%d", tenant, *seq, shard), tenant, shard, 1, t0)...)
	}
	n.mustApply(addBlocks(bs))
	n.advance(time.Second)
	*seq++
	res := n.poll(&ck.PollRequest{WorkerID: "w1", Seq: *seq, FreeSlots: 1})
	require.Len(t, res.Jobs, 1)
	job := res.Jobs[0]
	require.Equal(t, ck.AnyShard, job.Plan.Shard)
	outs := n.outputs(job.Plan, uint64(job.Token))
	require.Equal(t, ck.AnyShard, outs[0].Shard)
	n.advance(time.Second)
	*seq++
	cmd, err := n.f.Prepare(&ck.PollRequest{WorkerID: "w1", Seq: *seq, Updates: []ck.StatusUpdate{
		{Job: job.Job, Token: job.Token, Status: ck.ReportSuccess, Outputs: outs},
	}}, n.now)
	require.NoError(t, err)
	r := n.mustApply(cmd)
	return r.Changes[0]
}

// TestCrossShardOutputsQueued: the output of a cross-shard job carries
// AnyShard. Below cluster version 4 it is not queued for the next level
// (RELIABILITY.md F6: it stays where it is); from version 4 it is, under
// its tenant's cross-shard key, and compacted on.
func TestCrossShardOutputsQueued(t *testing.T) {
	cfg := testConfig()
	cfg.StartVersion = 3
	cfg.Planner.Levels[0].CrossShard = true
	n := newNode(t, cfg)
	n.version = 3
	var seq uint64

	r := completeCrossShard(t, n, "t1", &seq)
	require.True(t, r.Applied && r.Replace.Applied)
	require.Zero(t, n.f.Stats().Planner.Levels[1].Queued, "version 3 leaves the output unqueued")
	var add *raftfsm.Result
	bs := blocks("x", "t1", ck.AnyShard, 1, t0)
	bs[0].Level = 1
	add = n.mustApply(addBlocks(bs))
	require.ErrorIs(t, add.Blocks[0].Err, ck.ErrInconsistent, "version 3 refuses to queue an AnyShard block")
	require.True(t, n.f.Index().Live("x-000"))

	n.mustApply(&raftfsm.Command{ClusterVersion: &raftfsm.SetClusterVersion{Version: 4}})
	n.version = 4
	for range 4 {
		r = completeCrossShard(t, n, "t2", &seq)
		require.True(t, r.Applied && r.Replace.Applied)
	}
	st := n.f.Stats().Planner.Levels[1]
	require.Equal(t, 4, st.Queued, "version 4 queues every output")
	require.Equal(t, 1, st.Keys, "under one cross-shard key")

	// The four outputs make a level-1 batch: a cross-shard job over them.
	n.advance(time.Second)
	seq++
	res := n.poll(&ck.PollRequest{WorkerID: "w1", Seq: seq, FreeSlots: 1})
	require.Len(t, res.Jobs, 1)
	require.Equal(t, uint32(1), res.Jobs[0].Plan.Level)
	require.Equal(t, ck.AnyShard, res.Jobs[0].Plan.Shard)
	require.Len(t, res.Jobs[0].Plan.Sources, 4)
}
