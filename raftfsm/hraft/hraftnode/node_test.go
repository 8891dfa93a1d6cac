package hraftnode_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/planner"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/raftfsm/hraft/hraftnode"
	"github.com/compactkit/compactkit/raftfsm/hraft/internal/hrafttest"
)

func TestNodeJoin(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	state := hrafttest.State()
	// b starts from another local configuration: the first leader seeds
	// the replicated one, so the replicas still agree byte for byte.
	other := hrafttest.State()
	other.Scheduler.MaxFailures = 7
	other.Index.CleanupDelay = time.Hour
	newNode := func(id string) *hraftnode.Node {
		st := &state
		if id == "b" {
			st = &other
		}
		nd, err := hraftnode.New(hraftnode.Config{ID: id, State: st, Raft: hrafttest.RaftConfig(id, 250*time.Millisecond)})
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

	var blocks []ck.BlockMeta
	for i := range 5 {
		blocks = append(blocks, leadertest.Block(fmt.Sprintf("b%d", i), "t1", uint32(i%2), int64(i)*int64(time.Second)))
	}
	_, err = a.Service.AddBlocks(ctx, blocks)
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
	require.Equal(t, hrafttest.SnapshotBytes(t, a.State), hrafttest.SnapshotBytes(t, b.State))

	// A follower's Join is refused with the leader's address.
	err = b.Join(ctx, "c", "127.0.0.1:1")
	var nle *leader.NotLeaderError
	require.ErrorAs(t, err, &nle)
	require.Equal(t, string(a.Addr), nle.LeaderAddr)
}

func TestNewErrors(t *testing.T) {
	_, err := hraftnode.New(hraftnode.Config{})
	require.ErrorContains(t, err, "empty ID")
	bad := raftfsm.DefaultConfig()
	bad.Planner.FinalLevel = 0
	_, err = hraftnode.New(hraftnode.Config{ID: "x", State: &bad})
	require.ErrorIs(t, err, planner.ErrInvalidConfig)
	_, err = hraftnode.New(hraftnode.Config{ID: "x", BindAddr: "not an address"})
	require.Error(t, err)
	_, err = hraftnode.New(hraftnode.Config{ID: "x", Dir: t.TempDir(), BindAddr: "not an address"})
	require.Error(t, err, "stores opened before the failure are closed")
}
