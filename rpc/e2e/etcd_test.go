package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3"

	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/raftfsm/etcdraft/etcdrafttest"
)

// newEtcdCluster is three etcd-io/raft nodes (etcdrafttest's reference
// host) on one in-process network. Each member's MemoryStorage outlives
// it: a restarted member replays its committed entries into a new state
// machine. A leader's ID in the log is its raft ID, n for member "node-n".
func newEtcdCluster(t *testing.T) *cluster {
	nw := etcdrafttest.NewNetwork()
	storages := map[string]*raft.MemoryStorage{} // each member's, across its restarts
	peers := []raft.Peer{{ID: 1}, {ID: 2}, {ID: 3}}
	c := newCluster(t, func(c *cluster, m *member) {
		var id uint64
		_, err := fmt.Sscanf(m.id, "node-%d", &id)
		require.NoError(t, err)
		fsm, err := raftfsm.New(c.state)
		require.NoError(t, err)
		if storages[m.id] == nil {
			storages[m.id] = raft.NewMemoryStorage()
		}
		n, err := etcdrafttest.Start(fsm, etcdrafttest.Config{ID: id, Peers: peers, Storage: storages[m.id], Network: nw})
		require.NoError(t, err)
		svc := leader.New(n.Adapter, fsm, leader.WithProposeTimeout(2*time.Second))
		m.svc = svc
		m.close = func() {
			assert.NoError(t, n.Stop())
			_ = svc.Close()
		}
	})
	c.serving()
	return c
}
