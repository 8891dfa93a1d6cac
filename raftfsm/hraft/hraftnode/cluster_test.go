package hraftnode_test

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
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/raftfsm/hraft"
	"github.com/compactkit/compactkit/raftfsm/hraft/hraftnode"
	"github.com/compactkit/compactkit/raftfsm/hraft/internal/hrafttest"
	"github.com/compactkit/compactkit/scheduler"
)

// mode is how the cluster's polls go through the log: one entry each, or
// a prepare entry and the plan update (leader.WithTwoCommit).
type mode bool

const (
	singleCommit mode = false
	twoCommit    mode = true
)

// modes are the poll modes every cluster test runs in.
var modes = []mode{singleCommit, twoCommit}

func (m mode) String() string {
	if m == twoCommit {
		return "two-commit"
	}
	return "single-commit"
}

// options returns the service options of the mode.
func (m mode) options() []hraft.Option {
	if m == twoCommit {
		return []hraft.Option{hraft.WithLeader(leader.WithTwoCommit())}
	}
	return nil
}

// cluster is a 3-node raft cluster over loopback TCP with durable (BoltDB,
// no fsync) stores, whose nodes can be shut down and restarted.
type cluster struct {
	t     testing.TB
	cfg   raftfsm.Config
	mode  mode
	nodes []*hraftnode.Node // nil while down
	dirs  []string
	addrs []raft.ServerAddress
	opts  []hraft.Option
	// restores counts the snapshots restored by stopped nodes; retries the
	// calls that met a leader change.
	restores, retries int
	// timeout is the raft heartbeat, election and lease timeout.
	timeout time.Duration
}

func newCluster(t testing.TB, n int, mode mode, timeout time.Duration, opts ...hraft.Option) *cluster {
	t.Helper()
	c := &cluster{t: t, cfg: hrafttest.State(), mode: mode, nodes: make([]*hraftnode.Node, n), dirs: make([]string, n), addrs: make([]raft.ServerAddress, n), opts: opts, timeout: timeout}
	for i := range n {
		c.dirs[i] = t.TempDir()
		c.start(i)
		t.Cleanup(func() { c.stop(i) }) // whatever fails next
	}
	var peers []raft.Server
	for _, nd := range c.nodes[1:] {
		peers = append(peers, nd.Server())
	}
	require.NoError(t, c.nodes[0].Bootstrap(peers...))
	return c
}

func (c *cluster) start(i int) {
	c.t.Helper()
	nd, err := hraftnode.New(hraftnode.Config{
		ID: fmt.Sprintf("n%d", i), Dir: c.dirs[i], NoSync: true, BindAddr: string(c.addrs[i]),
		State: &c.cfg, Raft: hrafttest.RaftConfig(fmt.Sprintf("n%d", i), c.timeout),
		Service: append(c.mode.options(), c.opts...),
	})
	require.NoError(c.t, err)
	c.nodes[i] = nd
	c.addrs[i] = nd.Addr
}

func (c *cluster) stop(i int) {
	if c.nodes[i] == nil {
		return
	}
	require.NoError(c.t, c.nodes[i].Shutdown())
	c.restores += int(c.nodes[i].FSM.Restores())
	c.nodes[i] = nil
}

// leader waits for a live node that is the leader and serving.
func (c *cluster) leader() int {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for i, nd := range c.nodes {
			if nd != nil && nd.Service.IsLeader() {
				return i
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.t.Fatal("no leader")
	return -1
}

// do calls fn on the leader, following NotLeaderErrors as a client would,
// until it succeeds or returns another error.
func (c *cluster) do(fn func(s *hraft.Service) error) error {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, nd := range c.nodes {
			if nd == nil || nd.Raft.State() != raft.Leader {
				continue
			}
			err := fn(nd.Service)
			if err == nil || !errors.Is(err, leader.ErrNotLeader) {
				return err
			}
			c.retries++
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.t.Fatal("no leader served the call")
	return nil
}

// settle waits until every live node applied the same last entry (the
// leader's, after a barrier), and returns the leader. A leader change
// meanwhile starts the wait over.
func (c *cluster) settle() int {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		l := c.leader()
		if err := c.nodes[l].Raft.Barrier(5 * time.Second).Error(); err != nil {
			continue
		}
		if want, _, _ := c.nodes[l].State.LastApplied(); c.applied(want) {
			return l
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.t.Fatal("the replicas did not converge")
	return -1
}

// applied reports whether the last entry every node applied is want.
func (c *cluster) applied(want uint64) bool {
	for _, nd := range c.nodes {
		if got, _, _ := nd.State.LastApplied(); got != want {
			return false
		}
	}
	return true
}

// snapshots settles the cluster and returns every node's snapshot, taken
// while no entry was applied.
func (c *cluster) snapshots() [][]byte {
	c.t.Helper()
	for range 100 {
		l := c.settle()
		want, _, _ := c.nodes[l].State.LastApplied()
		var out [][]byte
		for _, nd := range c.nodes {
			out = append(out, hrafttest.SnapshotBytes(c.t, nd.State))
		}
		if c.applied(want) {
			return out
		}
	}
	c.t.Fatal("entries kept being applied")
	return nil
}

func (c *cluster) poll(req *ck.PollRequest) *ck.PollResponse {
	c.t.Helper()
	var resp *ck.PollResponse
	require.NoError(c.t, c.do(func(s *hraft.Service) error {
		var err error
		resp, err = s.Poll(context.Background(), req)
		return err
	}))
	return resp
}

func (c *cluster) add(bs []ck.BlockMeta) {
	c.t.Helper()
	require.NoError(c.t, c.do(func(s *hraft.Service) error {
		res, err := s.AddBlocks(context.Background(), bs)
		if err != nil {
			return err
		}
		for _, r := range res {
			// A retried add (its first attempt committed) finds duplicates.
			if r.Err != nil {
				require.Contains(c.t, r.Err.Error(), "duplicate", "block %s", r.ID)
			}
		}
		return nil
	}))
}

// TestClusterLeaderChanges runs adds and polls through a 3-node cluster
// while its leader is shut down again and again, then checks that the
// replicas agree byte for byte and that no block was lost or compacted
// twice.
func TestClusterLeaderChanges(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) {
			testLeaderChanges(t, mode)
		})
	}
}

func testLeaderChanges(t *testing.T, mode mode) {
	c := newCluster(t, 3, mode, 250*time.Millisecond)
	w := hrafttest.NewWorkload(t, 3)
	const rounds = 30
	down := -1
	kills := 0
	for round := range rounds {
		c.add(w.NewBlocks(8))

		switch {
		case round%6 == 3:
			// A worker's reply is lost, the leader dies, the worker retries
			// the same request at the new leader: the recorded response.
			k := w.Workers[round%len(w.Workers)]
			req := w.Request(k, 2)
			lost := c.poll(req)
			l := c.leader()
			c.stop(l)
			kills++
			if round%12 == 3 {
				c.start(l) // restarted at once
			} else {
				down = l // the cluster runs on two nodes for a while
			}
			again := c.poll(req)
			require.Equal(t, lost, again, "retried poll across a leader change")
			w.Handle(k, again)
		case round%6 == 5 && down >= 0:
			c.start(down)
			down = -1
		case round%6 == 1:
			// The leader dies while polls are in flight.
			l := c.leader()
			done := make(chan struct{})
			go func() {
				defer close(done)
				require.NoError(t, c.nodes[l].Shutdown())
			}()
			c.add(w.NewBlocks(8)) // in flight when the leader dies, or after
			for _, k := range w.Workers {
				req := w.Request(k, 2)
				var resp *ck.PollResponse
				for deadline := time.Now().Add(20 * time.Second); resp == nil; {
					if time.Now().After(deadline) {
						t.Fatalf("round %d: no leader answered worker %s's poll", round, k.ID)
					}
					resp = c.pollOnce(req)
				}
				w.Handle(k, resp)
			}
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatalf("round %d: node %d's shutdown did not return", round, l)
			}
			c.restores += int(c.nodes[l].FSM.Restores())
			c.nodes[l] = nil
			kills++
			c.start(l)
			continue
		}
		for _, k := range w.Workers {
			req := w.Request(k, 2)
			w.Handle(k, c.poll(req))
		}
	}
	if down >= 0 {
		c.start(down)
	}
	require.GreaterOrEqual(t, kills, 10)

	// Replicas agree byte for byte.
	snaps := c.snapshots()
	for i := range snaps {
		require.Equal(t, snaps[0], snaps[i], "node %s", c.nodes[i].ID)
	}
	l := c.leader()

	// Every added block is accounted for: live, or replaced by the output
	// of exactly one completed job (checked in handle), whose outputs are
	// live or replaced in turn.
	st := c.nodes[l].State.Stats()
	view := c.nodes[l].State.Index()
	live := map[string]bool{}
	for id := range w.Meta {
		if _, replaced := w.CompSrc[id]; !replaced {
			live[id] = true
		}
	}
	for _, id := range hrafttest.SortedKeys(w.Meta) {
		require.Equal(t, live[id], view.Live(id), "block %s", id)
	}
	require.Equal(t, len(live), view.Len())
	require.NotEmpty(t, w.Complete, "jobs were completed")
	require.Equal(t, uint64(len(w.Complete)), st.Scheduler.Counters.Completed)
	// Every source of a completed job is tombstoned.
	for src := range w.CompSrc {
		_, ok := view.Tombstone(ck.Tombstone{Kind: ck.TombstoneBlock, Target: src})
		require.True(t, ok, "source %s not tombstoned", src)
	}
	// No block is in two jobs; every source of a job is live.
	claimed := map[string]string{}
	jobs, _ := c.nodes[l].State.Jobs(scheduler.Filter{}, "", scheduler.MaxListLimit)
	for _, js := range jobs {
		_, plan, ok := c.nodes[l].State.Job(js.Name)
		require.True(t, ok)
		for _, src := range plan.Sources {
			require.True(t, view.Live(src), "job %s source %s", js.Name, src)
			prev, dup := claimed[src]
			require.False(t, dup, "block %s in jobs %s and %s", src, prev, js.Name)
			claimed[src] = js.Name
		}
	}
	// The elections cost no healthy job its lease.
	require.Zero(t, st.Scheduler.Counters.Excluded)
	require.Zero(t, st.Scheduler.Counters.Reassigned)
	require.Zero(t, w.NoLease)
	for _, nd := range c.nodes {
		c.restores += int(nd.FSM.Restores())
	}
	require.Positive(t, c.restores, "snapshots were restored")
	t.Logf("%s: %d kills, %d calls retried at a new leader, %d snapshots restored, %d blocks added, %d jobs completed, last index %d",
		mode, kills, c.retries, c.restores, len(w.Added), len(w.Complete), st.LastApplied)
}

// pollOnce polls whichever node is the leader; it returns nil when the
// call failed because leadership moved (or the node shut down), for the
// caller to retry the same request.
func (c *cluster) pollOnce(req *ck.PollRequest) *ck.PollResponse {
	c.t.Helper()
	for i := range c.nodes {
		nd := c.nodes[i]
		if nd == nil || nd.Raft.State() != raft.Leader {
			continue
		}
		resp, err := nd.Service.Poll(context.Background(), req)
		if err == nil {
			return resp
		}
		require.ErrorIs(c.t, err, leader.ErrNotLeader)
		c.retries++
	}
	time.Sleep(5 * time.Millisecond)
	return nil
}
