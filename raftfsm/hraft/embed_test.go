package hraft_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/raftfsm/hraft"
	"github.com/compactkit/compactkit/raftfsm/hraft/internal/hrafttest"
)

// embedNode is one replica of a host whose own raft FSM (kvFSM) holds
// compactkit's state beside its key/value store. Its stores outlive a
// shutdown, as a disk's would.
type embedNode struct {
	id    raft.ServerID
	addr  raft.ServerAddress
	store *raft.InmemStore
	snaps *raft.InmemSnapshotStore

	// nil while down
	fsm *kvFSM
	r   *raft.Raft
	svc *hraft.Service
	tr  *raft.NetworkTransport
}

type embedCluster struct {
	t        *testing.T
	nodes    []*embedNode
	retries  int
	restores int
}

func newEmbedCluster(t *testing.T) *embedCluster {
	c := &embedCluster{t: t}
	for i := range 3 {
		c.nodes = append(c.nodes, &embedNode{id: raft.ServerID(fmt.Sprintf("n%d", i)), store: raft.NewInmemStore(), snaps: raft.NewInmemSnapshotStore()})
		c.start(i)
		t.Cleanup(func() { c.stop(i) }) // whatever fails next
	}
	var servers []raft.Server
	for _, n := range c.nodes {
		servers = append(servers, raft.Server{ID: n.id, Address: n.addr})
	}
	require.NoError(t, c.nodes[0].r.BootstrapCluster(raft.Configuration{Servers: servers}).Error())
	return c
}

// start starts node i with a fresh FSM: raft restores it from the node's
// snapshot and log.
func (c *embedCluster) start(i int) {
	c.t.Helper()
	n := c.nodes[i]
	bind := string(n.addr)
	if bind == "" {
		bind = "127.0.0.1:0"
	}
	rc := hrafttest.RaftConfig(string(n.id), 250*time.Millisecond)
	rc.LocalID = n.id
	// Without pipelining, as the package documentation advises.
	tr, err := raft.NewTCPTransportWithConfig(bind, nil, &raft.NetworkTransportConfig{
		MaxPool: 3, Timeout: 2 * time.Second, Logger: rc.Logger, MaxRPCsInFlight: 1,
	})
	require.NoError(c.t, err)
	fsm, err := newKVFSM(hrafttest.State())
	require.NoError(c.t, err)
	r, err := raft.NewRaft(rc, fsm, n.store, n.store, n.snaps, tr)
	require.NoError(c.t, err)
	n.fsm, n.r, n.tr, n.addr = fsm, r, tr, tr.LocalAddr()
	n.svc = hraft.NewService(r, fsm.compaction, hraft.WithEnvelope(withTag))
}

func (c *embedCluster) stop(i int) {
	n := c.nodes[i]
	if n.r == nil {
		return
	}
	require.NoError(c.t, n.svc.Close())
	require.NoError(c.t, n.r.Shutdown().Error())
	require.NoError(c.t, n.tr.Close())
	n.fsm.mu.Lock()
	c.restores += n.fsm.restores
	n.fsm.mu.Unlock()
	n.fsm, n.r, n.svc, n.tr = nil, nil, nil, nil
}

func (c *embedCluster) leader() int {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for i, n := range c.nodes {
			if n.svc != nil && n.svc.IsLeader() {
				return i
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.t.Fatal("no leader")
	return -1
}

// do calls fn on the leader until it succeeds or fails with something
// other than a leader change.
func (c *embedCluster) do(fn func(n *embedNode) error) {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, n := range c.nodes {
			if n.r == nil || n.r.State() != raft.Leader {
				continue
			}
			err := fn(n)
			if err == nil {
				return
			}
			if !errors.Is(err, leader.ErrNotLeader) && !errors.Is(err, raft.ErrNotLeader) && !errors.Is(err, raft.ErrLeadershipLost) {
				require.NoError(c.t, err)
			}
			c.retries++
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.t.Fatal("no leader served the call")
}

// snapshots returns every node's combined snapshot once all applied the
// same last command (raft's own entries — the barrier's included — reach
// followers' applied index only with the next append).
func (c *embedCluster) snapshots() [][]byte {
	c.t.Helper()
	for range 1000 {
		l := c.leader()
		if err := c.nodes[l].r.Barrier(5 * time.Second).Error(); err != nil {
			continue
		}
		want := c.nodes[l].fsm.lastApplied()
		var out [][]byte
		same := true
		for _, n := range c.nodes {
			if n.fsm.lastApplied() != want {
				same = false
				break
			}
			b, err := n.fsm.snapshotBytes()
			require.NoError(c.t, err)
			out = append(out, b)
		}
		for _, n := range c.nodes {
			same = same && n.fsm.lastApplied() == want
		}
		if same {
			return out
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.t.Fatal("the replicas did not converge")
	return nil
}

// TestEmbeddedInHostFSM runs the README's embedding — one raft FSM holding
// a key/value store and compactkit's state, entries routed by tag, polls
// served by the service through the envelope — on a 3-node loopback
// cluster whose leader is shut down again and again: every acknowledged
// write is on every replica, retried polls get their recorded responses,
// and the replicas' combined snapshots agree byte for byte.
func TestEmbeddedInHostFSM(t *testing.T) {
	c := newEmbedCluster(t)
	w := hrafttest.NewWorkload(t, 2)
	ctx := context.Background()
	written := map[string]string{}
	const rounds = 12
	kills := 0
	for round := range rounds {
		bs := w.NewBlocks(8)
		c.do(func(n *embedNode) error {
			res, err := n.svc.AddBlocks(ctx, bs)
			for _, r := range res {
				if r.Err != nil {
					require.Contains(t, r.Err.Error(), "duplicate") // a retried add
				}
			}
			return err
		})
		k, v := fmt.Sprintf("key-%d", round), fmt.Sprintf("value-%d", round)
		c.do(func(n *embedNode) error { return n.r.Apply([]byte(string(rune(tagKV))+k+"="+v), 5*time.Second).Error() })
		written[k] = v

		for _, wk := range w.Workers {
			req := w.Request(wk, 2)
			var resp *ck.PollResponse
			c.do(func(n *embedNode) (err error) {
				resp, err = n.svc.Poll(ctx, req)
				return err
			})
			if round%2 == 1 && wk == w.Workers[0] {
				// The reply is lost and the leader shut down: the retry,
				// at the next leader, gets the recorded response.
				l := c.leader()
				c.stop(l)
				kills++
				var again *ck.PollResponse
				c.do(func(n *embedNode) (err error) {
					again, err = n.svc.Poll(ctx, req)
					return err
				})
				require.Equal(t, resp, again, "retried poll across a leader change")
				c.start(l)
			}
			w.Handle(wk, resp)
		}
	}
	require.GreaterOrEqual(t, kills, 5)

	snaps := c.snapshots()
	for i := range snaps {
		require.Equal(t, snaps[0], snaps[i], "node %s", c.nodes[i].id)
	}
	for _, n := range c.nodes {
		for k, v := range written {
			got, ok := n.fsm.get(k)
			require.True(t, ok, "node %s lost %s", n.id, k)
			require.Equal(t, v, got)
		}
	}
	for _, n := range c.nodes {
		n.fsm.mu.Lock()
		c.restores += n.fsm.restores
		n.fsm.mu.Unlock()
	}
	require.Positive(t, c.restores, "restarted nodes restored combined snapshots")
	l := c.leader()
	view := c.nodes[l].fsm.compaction.Index()
	for _, id := range hrafttest.SortedKeys(w.Meta) {
		_, replaced := w.CompSrc[id]
		require.Equal(t, !replaced, view.Live(id), "block %s", id)
	}
	st := c.nodes[l].fsm.compaction.Stats()
	require.NotEmpty(t, w.Complete, "jobs were completed")
	require.Equal(t, uint64(len(w.Complete)), st.Scheduler.Counters.Completed)
	require.Zero(t, st.Scheduler.Counters.Excluded, "an election cost a job its lease")
	t.Logf("%d leader shutdowns, %d snapshots restored, %d calls retried, %d blocks, %d jobs completed", kills, c.restores, c.retries, len(w.Meta), len(w.Complete))
}
