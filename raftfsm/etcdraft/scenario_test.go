package etcdraft_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/leader/leadertest"
)

// The leader service's scenario over a 3-node etcd-io/raft cluster:
// polls and blocks through whichever node leads while leadership moves.
func TestLeaderServiceScenario(t *testing.T) {
	c := newCluster(t, 3)
	rep := leadertest.Run(t, c, leadertest.Options{Polls: 30})
	t.Logf("%+v", rep)
	require.Positive(t, rep.Completed)
	require.Equal(t, 5, rep.LeaderChanges)
}

// The leader is stopped and restarted from its storage 10 times while
// workers poll and blocks arrive: retried polls get their recorded
// responses (the scenario checks), and every replica ends byte-identical.
func TestLeaderRestarts(t *testing.T) {
	c := newCluster(t, 3)
	c.restart = true
	rep := leadertest.Run(t, c, leadertest.Options{Polls: 40, LeaderChanges: 10})
	t.Logf("%+v, restarts %d", rep, c.restarts)
	require.Equal(t, 10, c.restarts)
	require.Positive(t, rep.Completed)
	var snaps [][]byte
	for _, svc := range c.Services() {
		var b bytes.Buffer
		require.NoError(t, svc.FSM().Snapshot(&b))
		snaps = append(snaps, b.Bytes())
	}
	for i := 1; i < len(snaps); i++ {
		require.Equal(t, snaps[0], snaps[i], "replica %d", i)
	}
}

// A follower stopped while the log moves on past its compacted part is
// caught up by the leader's snapshot when it restarts, and ends
// byte-identical.
func TestFollowerCaughtUpBySnapshot(t *testing.T) {
	c := newCluster(t, 3)
	lead := c.waitLeader()
	var follower *refNode
	c.mu.Lock()
	for _, n := range c.nodes {
		if n != lead {
			follower = n
		}
	}
	c.mu.Unlock()
	follower.shutdown(t)

	ctx := context.Background()
	for i := range 300 { // an entry each
		_, err := lead.svc.AddBlocks(ctx, acmeBlocks(i, i+1, 4))
		require.NoError(t, err)
	}
	first, err := lead.storage.FirstIndex()
	require.NoError(t, err)
	require.Greater(t, first, follower.ad.Applied()+1, "the follower's next entry is compacted away on the leader")

	c.mu.Lock()
	restarted := startNode(t, c.nw, follower.id, c.peers, c.wals[follower.id], c.cfg)
	c.nodes[follower.id] = restarted
	c.mu.Unlock()
	c.Settle(t)
	require.Positive(t, restarted.installedCount(), "caught up by a snapshot")
	var want, got bytes.Buffer
	require.NoError(t, lead.fsm.Snapshot(&want))
	require.NoError(t, restarted.fsm.Snapshot(&got))
	require.Equal(t, want.Bytes(), got.Bytes())
}

// acmeBlocks returns tenant acme's level-0 blocks from to to-1, a second
// apart, spread over shards.
func acmeBlocks(from, to, shards int) []ck.BlockMeta {
	var blocks []ck.BlockMeta
	for i := from; i < to; i++ {
		blocks = append(blocks, leadertest.Block(fmt.Sprintf("seg-%07d", i), "acme", uint32(i%shards), int64(i)*int64(time.Second)))
	}
	return blocks
}
