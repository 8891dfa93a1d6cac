package etcdraft_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3"

	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/raftfsm/etcdraft"
	"github.com/compactkit/compactkit/raftfsm/etcdraft/etcdrafttest"
)

// The reference node: etcdrafttest's node over a MemoryStorage and a
// write-ahead file (a stopped node restarts from its file: the storage is
// rebuilt by replaying it), on an in-process network, taking a snapshot
// every 100 entries. Test code, not production storage.

type refNode struct {
	id      uint64
	storage *raft.MemoryStorage
	wal     *wal
	node    raft.Node
	ad      *etcdraft.Adapter
	fsm     *raftfsm.FSM
	svc     *leader.Service
	n       *etcdrafttest.Node
	// installed counts the snapshots installed from the leader.
	mu        sync.Mutex
	installed int
}

// startNode starts (or, with a write-ahead file that holds state,
// restarts) node id of the given peers.
func startNode(t testing.TB, nw *etcdrafttest.Network, id uint64, peers []raft.Peer, walPath string, cfg raftfsm.Config, opts ...leader.Option) *refNode {
	t.Helper()
	fsm, err := raftfsm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	storage, err := loadWAL(walPath)
	if err != nil {
		t.Fatal(err)
	}
	w, err := openWAL(walPath)
	if err != nil {
		t.Fatal(err)
	}
	rn := &refNode{id: id, storage: storage, wal: w, fsm: fsm}
	rn.n, err = etcdrafttest.Start(fsm, etcdrafttest.Config{ID: id, Peers: peers, Storage: storage, Network: nw, SnapshotEvery: 100,
		Persist: func(rd raft.Ready) error {
			if !raft.IsEmptySnap(rd.Snapshot) {
				rn.mu.Lock()
				rn.installed++
				rn.mu.Unlock()
			}
			return w.save(rd)
		}})
	if err != nil {
		t.Fatal(err)
	}
	rn.node, rn.ad = rn.n.Raft, rn.n.Adapter
	rn.svc = leader.New(rn.ad, fsm, append([]leader.Option{leader.WithProposeTimeout(2 * time.Second)}, opts...)...)
	return rn
}

// installedCount returns how many snapshots the node installed, once its
// loop is idle (it reads what the loop wrote).
func (n *refNode) installedCount() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.installed
}

// shutdown stops the node; its storage survives.
func (n *refNode) shutdown(t testing.TB) {
	if err := n.n.Stop(); err != nil {
		t.Error(err)
	}
	_ = n.svc.Close()
	_ = n.wal.close()
}

// cluster is a reference cluster of n nodes.
type cluster struct {
	t     testing.TB
	nw    *etcdrafttest.Network
	cfg   raftfsm.Config
	peers []raft.Peer
	wals  map[uint64]string // each node's write-ahead file
	mu    sync.Mutex
	nodes map[uint64]*refNode
	opts  []leader.Option // for every node's service
	// restart makes ChangeLeader stop the leader and restart it from its
	// storage, instead of transferring leadership.
	restart  bool
	restarts int
}

func newCluster(t testing.TB, size int, opts ...leader.Option) *cluster {
	cfg := raftfsm.DefaultConfig()
	for i := range cfg.Planner.Levels {
		cfg.Planner.Levels[i].MaxBlocks = 4
	}
	c := &cluster{opts: opts, t: t, nw: etcdrafttest.NewNetwork(), cfg: cfg,
		wals: map[uint64]string{}, nodes: map[uint64]*refNode{}}
	for i := range size {
		c.peers = append(c.peers, raft.Peer{ID: uint64(i + 1)})
	}
	dir := t.TempDir()
	for _, p := range c.peers {
		c.wals[p.ID] = filepath.Join(dir, fmt.Sprintf("node-%d.wal", p.ID))
		c.nodes[p.ID] = startNode(t, c.nw, p.ID, c.peers, c.wals[p.ID], cfg, opts...)
	}
	t.Cleanup(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, n := range c.nodes {
			n.shutdown(c.t)
		}
	})
	c.waitLeader()
	return c
}

// waitLeader returns the node that leads, waiting for an election.
func (c *cluster) waitLeader() *refNode {
	for {
		c.mu.Lock()
		for _, n := range c.nodes {
			if n.ad.Leader().Leads {
				c.mu.Unlock()
				return n
			}
		}
		c.mu.Unlock()
		time.Sleep(10 * time.Millisecond) // an election takes ~10 ticks
	}
}

// Services implements leadertest.Cluster.
func (c *cluster) Services() []*leader.Service {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*leader.Service
	for _, p := range c.peers {
		out = append(out, c.nodes[p.ID].svc)
	}
	return out
}

// ChangeLeader implements leadertest.Cluster: leadership moves to another
// node, or the leader is stopped and restarted from its storage.
func (c *cluster) ChangeLeader(t testing.TB) {
	lead := c.waitLeader()
	if !c.restart {
		for _, p := range c.peers {
			if p.ID != lead.id {
				lead.node.TransferLeadership(context.Background(), lead.id, p.ID)
				return
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	lead.shutdown(t)
	c.nodes[lead.id] = startNode(t, c.nw, lead.id, c.peers, c.wals[lead.id], c.cfg, c.opts...)
	c.restarts++
}

// Settle implements leadertest.Cluster: every node has applied what was
// committed.
func (c *cluster) Settle(t testing.TB) {
	c.waitLeader()
	for _, svc := range c.Services() {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			err := svcBarrier(ctx, c, svc)
			cancel()
			if err == nil {
				break
			}
		}
	}
}

// svcBarrier runs the barrier of the node whose service svc is.
func svcBarrier(ctx context.Context, c *cluster, svc *leader.Service) error {
	c.mu.Lock()
	var ad *etcdraft.Adapter
	for _, n := range c.nodes {
		if n.svc == svc {
			ad = n.ad
		}
	}
	c.mu.Unlock()
	return ad.Barrier(ctx)
}
