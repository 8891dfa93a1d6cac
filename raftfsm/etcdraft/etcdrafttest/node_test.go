package etcdrafttest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/raftfsm/etcdraft/etcdrafttest"
)

// start starts a single node on storage and waits until it leads.
func start(t *testing.T, storage *raft.MemoryStorage, every uint64) (*etcdrafttest.Node, *leader.Service) {
	t.Helper()
	fsm, err := raftfsm.New(raftfsm.DefaultConfig())
	require.NoError(t, err)
	n, err := etcdrafttest.Start(fsm, etcdrafttest.Config{ID: 1, Peers: []raft.Peer{{ID: 1}}, Storage: storage, SnapshotEvery: every})
	require.NoError(t, err)
	svc := leader.New(n.Adapter, fsm)
	for deadline := time.Now().Add(10 * time.Second); !n.Adapter.Leader().Leads; {
		require.True(t, time.Now().Before(deadline), "no leader")
		time.Sleep(10 * time.Millisecond)
	}
	return n, svc
}

// A node restarted on its storage rebuilds the same state: from the
// entries alone, and from a snapshot and the entries after it.
func TestRestartFromStorage(t *testing.T) {
	for _, every := range []uint64{0, 5} {
		t.Run(fmt.Sprint("snapshot every ", every), func(t *testing.T) {
			storage := raft.NewMemoryStorage()
			n, svc := start(t, storage, every)
			for i := range 20 {
				_, err := svc.AddBlocks(context.Background(), []ck.BlockMeta{leadertest.Block(fmt.Sprintf("seg-%02d", i), "acme", 0, int64(i))})
				require.NoError(t, err)
			}
			require.NoError(t, svc.Close())
			require.NoError(t, n.Stop())
			snap, err := storage.Snapshot()
			require.NoError(t, err)
			require.Equal(t, every > 0, !raft.IsEmptySnap(snap), "a snapshot in the storage")

			n, svc = start(t, storage, every)
			defer func() { require.NoError(t, n.Stop()) }()
			defer svc.Close()
			require.NoError(t, n.Adapter.Barrier(context.Background()))
			fsm, err := svc.Read(context.Background())
			require.NoError(t, err)
			view := fsm.Index()
			defer view.Close()
			require.Equal(t, 20, view.Len())
			require.True(t, view.Live("seg-19"))
		})
	}
}

func TestStartRefusesBadInput(t *testing.T) {
	fsm, err := raftfsm.New(raftfsm.DefaultConfig())
	require.NoError(t, err)
	_, err = etcdrafttest.Start(fsm, etcdrafttest.Config{Peers: []raft.Peer{{ID: 1}}})
	require.ErrorContains(t, err, "node ID 0")
	_, err = etcdrafttest.Start(nil, etcdrafttest.Config{ID: 1, Peers: []raft.Peer{{ID: 1}}})
	require.ErrorContains(t, err, "no state machine")
}
