package hraftnode_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/planner"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/raftfsm/hraft"
	"github.com/compactkit/compactkit/raftfsm/hraft/hraftnode"
)

func testState() raftfsm.Config {
	cfg := raftfsm.DefaultConfig()
	for i := range cfg.Planner.Levels {
		cfg.Planner.Levels[i].MaxBlocks = 4
	}
	return cfg
}

// testRaftConfig is FastConfig with timeouts of at least timeout (the
// machine running the tests may be loaded: a starved leader steps down).
func testRaftConfig(id string, timeout time.Duration) *raft.Config {
	c := hraft.FastConfig(id)
	c.HeartbeatTimeout = max(c.HeartbeatTimeout, timeout)
	c.ElectionTimeout = max(c.ElectionTimeout, timeout)
	c.LeaderLeaseTimeout = max(c.LeaderLeaseTimeout, timeout)
	return c
}

func snapshotBytes(t testing.TB, f *raftfsm.FSM) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, f.Snapshot(&b))
	return b.Bytes()
}

func TestNodeJoin(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	state := testState()
	// b starts from another local configuration: the first leader seeds
	// the replicated one, so the replicas still agree byte for byte.
	other := testState()
	other.Scheduler.MaxFailures = 7
	other.Index.CleanupDelay = time.Hour
	newNode := func(id string) *hraftnode.Node {
		st := &state
		if id == "b" {
			st = &other
		}
		nd, err := hraftnode.New(hraftnode.Config{ID: id, State: st, Raft: testRaftConfig(id, 250*time.Millisecond)})
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
	require.Equal(t, snapshotBytes(t, a.State), snapshotBytes(t, b.State))

	// A follower's Join is refused with the leader's address.
	err = b.Join(ctx, "c", "127.0.0.1:1")
	var nle *hraft.NotLeaderError
	require.ErrorAs(t, err, &nle)
	require.Equal(t, string(a.Addr), nle.LeaderAddr)
}

func TestNewNodeErrors(t *testing.T) {
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
