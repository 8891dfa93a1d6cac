package e2e

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/bucketlog"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/index"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/raftfsm/hraft/hraftnode"
	"github.com/compactkit/compactkit/rpc"
	"github.com/compactkit/compactkit/worker"
)

// member is one node of a cluster: its service and its RPC endpoint, whose
// address stays the same across restarts.
type member struct {
	id, dir, rpcAddr string
	raftAddr         string          // hashicorp/raft only
	node             *hraftnode.Node // hashicorp/raft only
	svc              *leader.Service // the service the handler serves
	close            func()          // closes the service and what it runs on
	srv              *http.Server
	down             bool // stopped, not yet started again
}

// cluster is three nodes that can be shut down and brought back, each
// behind the handler, which names the leader's RPC URL (not its Raft
// address) when it does not lead.
type cluster struct {
	t       *testing.T
	state   raftfsm.Config
	open    func(m *member) // opens m.svc and m.close
	mu      sync.Mutex
	members []*member
	urls    map[string]string // node ID → RPC base URL
}

func newCluster(t *testing.T, open func(c *cluster, m *member)) *cluster {
	c := &cluster{t: t, state: raftfsm.DefaultConfig(), urls: map[string]string{}}
	c.state.Planner.FinalLevel = 1
	c.state.Planner.Levels = c.state.Planner.Levels[:1]
	c.state.Planner.Levels[0].MaxBlocks = 2
	c.open = func(m *member) { open(c, m) }
	dir := t.TempDir()
	for i := range 3 {
		m := &member{id: fmt.Sprintf("node-%d", i+1), dir: filepath.Join(dir, fmt.Sprint(i+1)), raftAddr: "127.0.0.1:0", rpcAddr: "127.0.0.1:0"}
		c.start(m)
		c.members = append(c.members, m)
	}
	t.Cleanup(func() {
		for _, m := range c.members {
			if c.up(m) {
				c.stop(m)
			}
		}
	})
	return c
}

// leaderURL maps a leader's ID in the log to its RPC base URL:
// hashicorp/raft's IDs are the members' names, etcd-io/raft's are numbers,
// n for member "node-n".
func (c *cluster) leaderURL(id, _ string) string {
	if _, err := strconv.ParseUint(id, 10, 64); err == nil {
		id = "node-" + id
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.urls[id]
}

func (c *cluster) start(m *member) {
	c.t.Helper()
	c.open(m)
	ln, err := net.Listen("tcp", m.rpcAddr)
	require.NoError(c.t, err)
	m.rpcAddr = ln.Addr().String()
	m.srv = rpc.NewServer(rpc.NewHandler(m.svc, rpc.WithLeaderURL(c.leaderURL)))
	go func() { _ = m.srv.Serve(ln) }()
	c.mu.Lock()
	c.urls[m.id] = "http://" + m.rpcAddr
	m.down = false
	c.mu.Unlock()
}

func (c *cluster) stop(m *member) {
	c.mu.Lock()
	m.down = true
	c.mu.Unlock()
	_ = m.srv.Close()
	m.close()
}

// up reports whether m runs.
func (c *cluster) up(m *member) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !m.down
}

func (c *cluster) peers() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, m := range c.members {
		out = append(out, c.urls[m.id])
	}
	return out
}

// serving waits for a node that leads and returns it.
func (c *cluster) serving() *member {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, m := range c.members {
			if c.up(m) && m.svc.Leader().Leads {
				return m
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.t.Fatal("no node leads within 20 s")
	return nil
}

// newRaftCluster is three hashicorp/raft nodes on loopback TCP.
func newRaftCluster(t *testing.T) *cluster {
	c := newCluster(t, func(c *cluster, m *member) {
		node, err := hraftnode.New(hraftnode.Config{ID: m.id, Dir: m.dir, NoSync: true, BindAddr: m.raftAddr, State: &c.state})
		require.NoError(t, err)
		m.node, m.raftAddr, m.svc = node, string(node.Addr), node.Service.Service
		m.close = func() {
			_ = node.Service.Close()
			_ = node.Shutdown()
		}
	})
	var peers []raft.Server
	for _, m := range c.members[1:] {
		peers = append(peers, m.node.Server())
	}
	require.NoError(t, c.members[0].node.Bootstrap(peers...))
	c.serving()
	return c
}

// newBucketCluster is three coordinators appending to one bucket log (no
// election: every one serves).
func newBucketCluster(t *testing.T) *cluster {
	store := blockmerge.NewMemStore()
	incarnation := 0
	return newCluster(t, func(c *cluster, m *member) {
		incarnation++
		node, err := bucketlog.OpenNode(context.Background(), store, "compaction", fmt.Sprintf("%s-%d", m.id, incarnation), bucketlog.NodeConfig{State: c.state})
		require.NoError(t, err)
		m.svc = node.Service
		m.close = func() { _ = node.Close() }
	})
}

// TestMain runs the worker process when the test binary is started as
// one (see startWorker).
func TestMain(m *testing.M) {
	if peers := os.Getenv("CK_E2E_WORKER_PEERS"); peers != "" {
		os.Exit(workerProcess(os.Getenv("CK_E2E_WORKER_NAME"), strings.Split(peers, ",")))
	}
	os.Exit(m.Run())
}

// workerProcess is a compaction worker process over the protocol, until
// interrupted. Its runner merges without data: an output's records are
// the sources' (ten per level-0 block), so that the index's total says
// whether every block was compacted exactly once. It prints "start" and
// "end" lines (job, worker, wall-clock nanoseconds) for every attempt.
func workerProcess(name string, peers []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cl, err := rpc.NewClient(peers, rpc.WithRetryFor(30*time.Second), rpc.WithBackoff(5*time.Millisecond))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var mu sync.Mutex
	event := func(what, job string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Printf("%s %s %s %d\n", what, job, name, time.Now().UnixNano())
	}
	run := worker.RunnerFunc(func(ctx context.Context, _ blockmerge.Store, plan *ck.JobPlan, token fencing.Token) ([]ck.BlockMeta, error) {
		event("start", plan.Name)
		defer event("end", plan.Name)
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		recs := int64(10 * len(plan.Sources))
		return []ck.BlockMeta{{ID: ck.OutputID(plan.Name, token, 0), Tenant: plan.Tenant, Shard: plan.Shard, Level: plan.Level + 1,
			MinTime: 0, MaxTime: 1e15, Size: 1, Datasets: []ck.DatasetMeta{{Name: "ds", Records: recs, MinTime: 0, MaxTime: 1e15}}}}, nil
	})
	w, err := worker.New(cl, blockmerge.NewMemStore(), worker.Config{ID: worker.NewID(name), Concurrency: 2, PollInterval: 20 * time.Millisecond, Runner: run})
	if err == nil {
		err = w.Run(ctx)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// startWorker starts this test binary as a worker process; stop
// interrupts it and returns what it printed.
func startWorker(t *testing.T, name string, peers []string) (stop func() string) {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "CK_E2E_WORKER_NAME="+name, "CK_E2E_WORKER_PEERS="+strings.Join(peers, ","))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return func() string {
		require.NoError(t, cmd.Process.Signal(os.Interrupt))
		require.NoError(t, cmd.Wait(), "worker %s", name)
		return out.String()
	}
}

// overlaps returns the jobs that two workers ran at once, from the
// workers' start and end lines.
func overlaps(t *testing.T, logs []string) []string {
	type event struct {
		start  bool
		worker string
		at     int64
	}
	byJob := map[string][]event{}
	for _, l := range logs {
		for line := range strings.Lines(l) {
			var what, job, w string
			var at int64
			_, err := fmt.Sscanf(line, "%s %s %s %d", &what, &job, &w, &at)
			require.NoError(t, err, "line %q", line)
			byJob[job] = append(byJob[job], event{what == "start", w, at})
		}
	}
	var bad []string
	for job, evs := range byJob {
		slices.SortStableFunc(evs, func(a, b event) int { return cmp.Compare(a.at, b.at) })
		holder := ""
		for _, e := range evs {
			switch {
			case e.start && holder != "" && holder != e.worker:
				bad = append(bad, fmt.Sprintf("%s: %s started while %s held it", job, e.worker, holder))
			case e.start:
				holder = e.worker
			case holder == e.worker:
				holder = ""
			}
		}
	}
	return bad
}

// Worker processes reach a cluster through the protocol while nodes are
// shut down and brought back three times — the leader of a three-node
// hashicorp/raft or etcd-io/raft cluster, or one of three bucket-log
// coordinators: every block is compacted exactly once and no job is held
// by two workers at once.
func TestClusterNodeRestarts(t *testing.T) {
	// The leader is shut down; once another leads, it is brought back.
	changeLeader := func(c *cluster) func() {
		return func() {
			old := c.serving()
			c.stop(old)
			require.NotEqual(t, old.id, c.serving().id, "another node leads")
			c.start(old)
		}
	}
	t.Run("hraft", func(t *testing.T) {
		c := newRaftCluster(t)
		runCluster(t, c, changeLeader(c))
	})
	t.Run("etcdraft", func(t *testing.T) {
		c := newEtcdCluster(t)
		runCluster(t, c, changeLeader(c))
	})
	t.Run("bucket", func(t *testing.T) {
		c := newBucketCluster(t)
		next := 0
		runCluster(t, c, func() {
			m := c.members[next%len(c.members)]
			next++
			c.stop(m)
			time.Sleep(50 * time.Millisecond)
			c.start(m)
		})
	})
}

// runCluster runs three worker processes and an ingester against c,
// calling restart three times during the ingest, and checks the outcome.
func runCluster(t *testing.T, c *cluster, restart func()) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stops []func() string
	for i := range 3 {
		stops = append(stops, startWorker(t, fmt.Sprintf("w%d", i), c.peers()))
	}

	ingest, err := rpc.NewClient(c.peers(), rpc.WithRetryFor(30*time.Second), rpc.WithBackoff(5*time.Millisecond))
	require.NoError(t, err)
	const batches, perBatch = 8, 10
	for b := range batches {
		var bs []ck.BlockMeta
		for i := range perBatch {
			bs = append(bs, leadertest.Block(fmt.Sprintf("seg-%02d-%02d", b, i), "acme", 0, int64(b*perBatch+i)*1e9))
		}
		res, err := ingest.AddBlocks(ctx, bs)
		require.NoError(t, err)
		for _, r := range res {
			// A retried call after an unknown outcome finds its blocks.
			if r.Err != nil {
				require.ErrorIs(t, r.Err, index.ErrDuplicate)
			}
		}
		if b%3 == 1 { // three restarts
			restart()
		}
	}

	// Every level-0 block compacted: only outputs remain, and their
	// records add up to the blocks ingested.
	var live []ck.BlockMeta
	require.Eventually(t, func() bool {
		var err error
		live, err = listAll(ctx, ingest)
		if err != nil {
			return false
		}
		for _, b := range live {
			if b.Level == 0 {
				return false
			}
		}
		return true
	}, 60*time.Second, 50*time.Millisecond)
	var logs []string
	for _, stop := range stops {
		logs = append(logs, stop())
	}
	var recs int64
	for _, b := range live {
		recs += b.Records()
	}
	require.EqualValues(t, batches*perBatch*10, recs, "every block compacted exactly once")
	require.Len(t, live, batches*perBatch/2)
	require.GreaterOrEqual(t, strings.Count(strings.Join(logs, ""), "start "), batches*perBatch/2, "the workers ran every job")
	require.Empty(t, overlaps(t, logs), "no job held by two workers at once")
}

func listAll(ctx context.Context, c *rpc.Client) ([]ck.BlockMeta, error) {
	var all []ck.BlockMeta
	after := ""
	for {
		page, next, err := c.ListBlocks(ctx, after, 100)
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		if next == "" {
			return all, nil
		}
		after = next
	}
}
