package hraft_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/raftfsm/hraft"
)

func TestNodeJoin(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	state := testState()
	// b starts from another local configuration: the first leader seeds
	// the replicated one, so the replicas still agree byte for byte.
	other := testState()
	other.Scheduler.MaxFailures = 7
	other.Index.CleanupDelay = time.Hour
	newNode := func(id string) *hraft.Node {
		st := &state
		if id == "b" {
			st = &other
		}
		nd, err := hraft.NewNode(hraft.NodeConfig{ID: id, State: st, Raft: testRaftConfig(id, 250*time.Millisecond)})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, nd.Shutdown()) })
		return nd
	}
	a := newNode("a")
	require.NoError(t, a.Bootstrap())
	require.NoError(t, a.WaitServing(ctx))
	_, id, err := a.WaitLeader(ctx)
	require.NoError(t, err)
	require.Equal(t, a.ID, id)

	w := newWorkload(t, 0)
	_, err = a.Service.AddBlocks(ctx, w.newBlocks(5))
	require.NoError(t, err)

	b := newNode("b")
	require.NoError(t, a.Join(ctx, b.ID, b.Addr))
	_, id, err = b.WaitLeader(ctx)
	require.NoError(t, err)
	require.Equal(t, a.ID, id)
	want, _, _ := a.State.LastApplied()
	for {
		got, _, _ := b.State.LastApplied()
		if got == want {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("b applied %d, a %d", got, want)
		case <-time.After(5 * time.Millisecond):
		}
	}
	require.Equal(t, snapshotBytes(t, a.State), snapshotBytes(t, b.State))

	// A follower's Join is refused with the leader's address.
	err = b.Join(ctx, "c", "127.0.0.1:1")
	var nle *hraft.NotLeaderError
	require.ErrorAs(t, err, &nle)
	require.Equal(t, string(a.Addr), nle.LeaderAddr)
}

func TestNewNodeErrors(t *testing.T) {
	_, err := hraft.NewNode(hraft.NodeConfig{})
	require.Error(t, err)
	bad := raftfsm.DefaultConfig()
	bad.Planner.FinalLevel = 0
	_, err = hraft.NewNode(hraft.NodeConfig{ID: "x", State: &bad})
	require.Error(t, err)
	_, err = hraft.NewNode(hraft.NodeConfig{ID: "x", BindAddr: "not an address"})
	require.Error(t, err)
	_, err = hraft.NewNode(hraft.NodeConfig{ID: "x", Dir: t.TempDir(), BindAddr: "not an address"})
	require.Error(t, err, "stores opened before the failure are closed")
}
