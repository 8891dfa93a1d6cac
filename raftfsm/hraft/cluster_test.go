package hraft_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/raftfsm/hraft"
	"github.com/compactkit/compactkit/scheduler"
)

// cluster is a 3-node raft cluster over loopback TCP with durable (BoltDB,
// no fsync) stores, whose nodes can be shut down and restarted.
type cluster struct {
	t     testing.TB
	cfg   raftfsm.Config
	mode  hraft.Mode
	nodes []*hraft.Node // nil while down
	dirs  []string
	addrs []raft.ServerAddress
	opts  []hraft.Option
	// restores counts the snapshots restored by stopped nodes; retries the
	// calls that met a leader change.
	restores, retries int
	// timeout is the raft heartbeat, election and lease timeout.
	timeout time.Duration
}

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
	c.SnapshotThreshold = 32 // exercise snapshots and their installation
	c.TrailingLogs = 4
	c.SnapshotInterval = 300 * time.Millisecond
	c.Logger = hclog.NewNullLogger()
	return c
}

func newCluster(t testing.TB, n int, mode hraft.Mode, timeout time.Duration, opts ...hraft.Option) *cluster {
	t.Helper()
	c := &cluster{t: t, cfg: testState(), mode: mode, nodes: make([]*hraft.Node, n), dirs: make([]string, n), addrs: make([]raft.ServerAddress, n), opts: opts, timeout: timeout}
	for i := range n {
		c.dirs[i] = t.TempDir()
		c.start(i)
	}
	var peers []raft.Server
	for _, nd := range c.nodes[1:] {
		peers = append(peers, nd.Server())
	}
	require.NoError(t, c.nodes[0].Bootstrap(peers...))
	t.Cleanup(func() {
		for i := range c.nodes {
			c.stop(i)
		}
	})
	return c
}

func (c *cluster) start(i int) {
	c.t.Helper()
	nd, err := hraft.NewNode(hraft.NodeConfig{
		ID: fmt.Sprintf("n%d", i), Dir: c.dirs[i], NoSync: true, BindAddr: string(c.addrs[i]),
		State: &c.cfg, Raft: testRaftConfig(fmt.Sprintf("n%d", i), c.timeout),
		Service: append([]hraft.Option{hraft.WithMode(c.mode)}, c.opts...),
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
			if err == nil || !errors.Is(err, hraft.ErrNotLeader) {
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
		want, _, _ := c.nodes[l].State.LastApplied()
		same := true
		for _, nd := range c.nodes {
			if got, _, _ := nd.State.LastApplied(); got != want {
				same = false
			}
		}
		if same {
			return l
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.t.Fatal("the replicas did not converge")
	return -1
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
			out = append(out, snapshotBytes(c.t, nd.State))
		}
		same := true
		for _, nd := range c.nodes {
			if got, _, _ := nd.State.LastApplied(); got != want {
				same = false
			}
		}
		if same {
			return out
		}
	}
	c.t.Fatal("entries kept being applied")
	return nil
}

func snapshotBytes(t testing.TB, f *raftfsm.FSM) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, f.Snapshot(&b))
	return b.Bytes()
}

// workload is a model of the blocks, the workers and their jobs.
type workload struct {
	t        testing.TB
	meta     map[string]ck.BlockMeta // every block added or written
	added    []string
	next     int
	workers  []*tworker
	compSrc  map[string]string // source -> completed job
	complete map[string]ck.JobReply
	noLease  int
}

type tworker struct {
	id   string
	seq  uint64
	held map[string]ck.JobReply
	age  map[string]int
}

func newWorkload(t testing.TB, workers int) *workload {
	w := &workload{t: t, meta: map[string]ck.BlockMeta{}, compSrc: map[string]string{}, complete: map[string]ck.JobReply{}}
	for i := range workers {
		w.workers = append(w.workers, &tworker{id: fmt.Sprintf("w%d", i), held: map[string]ck.JobReply{}, age: map[string]int{}})
	}
	return w
}

const t0 = int64(1_700_000_000_000_000_000)

func (w *workload) newBlocks(n int) []ck.BlockMeta {
	out := make([]ck.BlockMeta, n)
	for i := range out {
		id := fmt.Sprintf("b%05d", w.next)
		minT := t0 + int64(w.next)*int64(time.Second)
		b := ck.BlockMeta{
			ID: id, Tenant: "t1", Shard: uint32(w.next % 2), MinTime: minT, MaxTime: minT + int64(time.Second), Size: 100,
			Datasets: []ck.DatasetMeta{{Name: "ds", Size: 100, Records: 10, MinTime: minT, MaxTime: minT + int64(time.Second)}},
		}
		w.next++
		w.meta[id] = b
		w.added = append(w.added, id)
		out[i] = b
	}
	return out
}

// request builds the worker's next request: jobs held for two rounds are
// reported done, others renewed.
func (w *workload) request(k *tworker, free int32) *ck.PollRequest {
	k.seq++
	req := &ck.PollRequest{WorkerID: k.id, Seq: k.seq, FreeSlots: free}
	for _, name := range sortedKeys(k.held) {
		j := k.held[name]
		k.age[name]++
		u := ck.StatusUpdate{Job: name, Token: j.Token, Status: ck.ReportInProgress}
		if k.age[name] >= 2 {
			u.Status = ck.ReportSuccess
			u.Outputs = w.outputs(j)
		}
		req.Updates = append(req.Updates, u)
	}
	return req
}

func (w *workload) outputs(j ck.JobReply) []ck.BlockMeta {
	if j.Plan.CleanupOnly() {
		return nil
	}
	var minT, maxT int64 = 1<<63 - 1, 0
	var size int64
	for _, id := range j.Plan.Sources {
		b, ok := w.meta[id]
		require.True(w.t, ok, "unknown source %s", id)
		minT, maxT, size = min(minT, b.MinTime), max(maxT, b.MaxTime), size+b.Size
	}
	return []ck.BlockMeta{{
		ID: ck.OutputID(j.Plan.Name, j.Token, 0), Tenant: j.Plan.Tenant, Shard: j.Plan.Shard, Level: j.Plan.Level + 1,
		MinTime: minT, MaxTime: maxT, Size: size,
		Datasets: []ck.DatasetMeta{{Name: "ds", Size: size, Records: 10, MinTime: minT, MaxTime: maxT}},
	}}
}

// handle applies the response to the model.
func (w *workload) handle(k *tworker, resp *ck.PollResponse) {
	for _, r := range resp.Jobs {
		switch r.Outcome {
		case ck.OutcomeAssigned:
			require.NotNil(w.t, r.Plan)
			k.held[r.Job] = r
			k.age[r.Job] = 0
		case ck.OutcomeRenewed:
		case ck.OutcomeCompleted:
			j, ok := k.held[r.Job]
			require.True(w.t, ok, "completed job %s not held", r.Job)
			if _, seen := w.complete[r.Job]; !seen {
				w.complete[r.Job] = j
				for _, src := range j.Plan.Sources {
					prev, dup := w.compSrc[src]
					require.False(w.t, dup, "block %s compacted by %s and %s", src, prev, r.Job)
					w.compSrc[src] = r.Job
				}
				for _, out := range w.outputs(j) {
					w.meta[out.ID] = out
				}
			}
			delete(k.held, r.Job)
			delete(k.age, r.Job)
		case ck.OutcomeNoLease:
			w.noLease++
			delete(k.held, r.Job)
			delete(k.age, r.Job)
		default:
			w.t.Fatalf("unexpected outcome %s for %s", r.Outcome, r.Job)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
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
	for _, mode := range []hraft.Mode{hraft.SingleCommit, hraft.TwoCommit} {
		t.Run(mode.String(), func(t *testing.T) {
			testLeaderChanges(t, mode)
		})
	}
}

func testLeaderChanges(t *testing.T, mode hraft.Mode) {
	c := newCluster(t, 3, mode, 250*time.Millisecond)
	w := newWorkload(t, 3)
	const rounds = 30
	down := -1
	kills := 0
	for round := range rounds {
		c.add(w.newBlocks(8))

		switch {
		case round%6 == 3:
			// A worker's reply is lost, the leader dies, the worker retries
			// the same request at the new leader: the recorded response.
			k := w.workers[round%len(w.workers)]
			req := w.request(k, 2)
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
			w.handle(k, again)
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
			c.add(w.newBlocks(8)) // in flight when the leader dies, or after
			for _, k := range w.workers {
				req := w.request(k, 2)
				var resp *ck.PollResponse
				for resp == nil {
					resp = c.pollOnce(req)
				}
				w.handle(k, resp)
			}
			<-done
			c.restores += int(c.nodes[l].FSM.Restores())
			c.nodes[l] = nil
			kills++
			c.start(l)
			continue
		}
		for _, k := range w.workers {
			req := w.request(k, 2)
			w.handle(k, c.poll(req))
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
	for id := range w.meta {
		if _, replaced := w.compSrc[id]; !replaced {
			live[id] = true
		}
	}
	for _, id := range sortedKeys(w.meta) {
		require.Equal(t, live[id], view.Live(id), "block %s", id)
	}
	require.Equal(t, len(live), view.Len())
	require.NotEmpty(t, w.complete, "jobs were completed")
	require.Equal(t, uint64(len(w.complete)), st.Scheduler.Counters.Completed)
	// Every source of a completed job is tombstoned.
	for src := range w.compSrc {
		_, ok := view.Tombstone(ck.Tombstone{Kind: ck.TombstoneBlock, Target: src})
		require.True(t, ok, "source %s not tombstoned", src)
	}
	// No block is in two jobs; every source of a job is live.
	claimed := map[string]string{}
	jobs, _ := c.nodes[l].State.Jobs(raftfsm.JobFilter{}, "", scheduler.MaxListLimit)
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
	require.Zero(t, w.noLease)
	for _, nd := range c.nodes {
		c.restores += int(nd.FSM.Restores())
	}
	require.Positive(t, c.restores, "snapshots were restored")
	t.Logf("%s: %d kills, %d calls retried at a new leader, %d snapshots restored, %d blocks added, %d jobs completed, last index %d",
		mode, kills, c.retries, c.restores, len(w.added), len(w.complete), st.LastApplied)
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
		require.ErrorIs(c.t, err, hraft.ErrNotLeader)
		c.retries++
	}
	time.Sleep(5 * time.Millisecond)
	return nil
}
