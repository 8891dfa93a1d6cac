package etcdraft_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/raftfsm/etcdraft"
)

// The reference node: etcd-io/raft driven by a Ready loop over a
// MemoryStorage and a write-ahead file (a stopped node restarts from its
// file: the storage is rebuilt by replaying it), an in-process network,
// CheckQuorum, PreVote and no proposal forwarding. Test code, not
// production storage.

// network delivers messages between the running nodes; a message to a
// stopped node is lost.
type network struct {
	mu    sync.Mutex
	nodes map[uint64]*refNode
}

func (nw *network) send(from *refNode, msgs []*raftpb.Message) {
	for _, m := range msgs {
		nw.mu.Lock()
		to := nw.nodes[m.GetTo()]
		nw.mu.Unlock()
		if to == nil {
			from.node.ReportUnreachable(m.GetTo())
			continue
		}
		select {
		case to.inbox <- m:
		default: // a full inbox drops, as a congested network would
		}
		if m.GetType() == raftpb.MessageType_MsgSnap {
			from.node.ReportSnapshot(m.GetTo(), raft.SnapshotFinish)
		}
	}
}

type refNode struct {
	id      uint64
	storage *raft.MemoryStorage
	wal     *wal
	node    raft.Node
	ad      *etcdraft.Adapter
	fsm     *raftfsm.FSM
	svc     *leader.Service
	inbox   chan *raftpb.Message
	stop    chan struct{}
	done    chan struct{}
	conf    *raftpb.ConfState
	// snapEvery is how many applied entries between snapshots.
	snapEvery uint64
	// installed counts the snapshots installed from the leader.
	mu        sync.Mutex
	installed int
}

var quiet = &raft.DefaultLogger{Logger: log.New(io.Discard, "", 0)}

// startNode starts (or, with a write-ahead file that holds state,
// restarts) node id of the given peers.
func startNode(t testing.TB, nw *network, id uint64, peers []raft.Peer, walPath string, cfg raftfsm.Config, opts ...leader.Option) *refNode {
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
	n := &refNode{id: id, storage: storage, wal: w, fsm: fsm, inbox: make(chan *raftpb.Message, 4096),
		stop: make(chan struct{}), done: make(chan struct{}), snapEvery: 100}
	var applied uint64
	snap, err := storage.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if !raft.IsEmptySnap(snap) {
		if err := fsm.Restore(bytes.NewReader(snap.GetData())); err != nil {
			t.Fatal(err)
		}
		applied = snap.GetMetadata().GetIndex()
		n.conf = snap.GetMetadata().GetConfState()
	}
	c := &raft.Config{
		ID: id, ElectionTick: 10, HeartbeatTick: 1, Storage: storage, Applied: applied,
		MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 256, CheckQuorum: true, PreVote: true,
		DisableProposalForwarding: true, Logger: quiet,
	}
	last, _ := storage.LastIndex()
	if last > 0 {
		n.node = raft.RestartNode(c)
	} else {
		n.node = raft.StartNode(c, peers)
	}
	n.ad = etcdraft.New(fsm, n.node, id, applied)
	n.svc = leader.New(n.ad, fsm, append([]leader.Option{leader.WithProposeTimeout(2 * time.Second)}, opts...)...)
	nw.mu.Lock()
	nw.nodes[id] = n
	nw.mu.Unlock()
	go n.run(t, nw)
	return n
}

func (n *refNode) run(t testing.TB, nw *network) {
	defer close(n.done)
	ticker := time.NewTicker(10 * time.Millisecond)
	defer ticker.Stop()
	ctx := context.Background()
	lastSnap := n.ad.Applied()
	for {
		select {
		case <-n.stop:
			n.node.Stop()
			return
		case <-ticker.C:
			n.node.Tick()
		case m := <-n.inbox:
			_ = n.node.Step(ctx, m) // a message of a stale term is refused: fine
		case rd := <-n.node.Ready():
			n.ad.Observe(rd)
			if err := n.wal.save(rd); err != nil {
				t.Error(err)
			}
			if !raft.IsEmptySnap(rd.Snapshot) {
				if err := n.storage.ApplySnapshot(rd.Snapshot); err != nil {
					t.Error(err)
				}
				if err := n.ad.Restore(bytes.NewReader(rd.Snapshot.GetData()), rd.Snapshot.GetMetadata().GetIndex()); err != nil {
					t.Error(err)
				}
				n.conf = rd.Snapshot.GetMetadata().GetConfState()
				lastSnap = n.ad.Applied()
				n.mu.Lock()
				n.installed++
				n.mu.Unlock()
			}
			if rd.HardState != nil {
				_ = n.storage.SetHardState(rd.HardState)
			}
			if err := n.storage.Append(rd.Entries); err != nil {
				t.Error(err)
			}
			nw.send(n, rd.Messages)
			for _, e := range rd.CommittedEntries {
				if e.GetType() == raftpb.EntryType_EntryConfChange {
					var cc raftpb.ConfChange
					if err := proto.Unmarshal(e.GetData(), &cc); err != nil {
						t.Error(err)
					}
					n.conf = n.node.ApplyConfChange(&cc)
				}
				// A refusal is the state machine's answer to the proposer;
				// a corrupt replica would fail the final comparison.
				_, _ = n.ad.Apply(e)
			}
			if applied := n.ad.Applied(); applied-lastSnap >= n.snapEvery && n.conf != nil {
				var b bytes.Buffer
				i, err := n.ad.Snapshot(&b)
				if err != nil {
					t.Error(err)
				} else if _, err := n.storage.CreateSnapshot(i, n.conf, b.Bytes()); err == nil {
					if first, _ := n.storage.FirstIndex(); i > first+20 {
						_ = n.storage.Compact(i - 20)
					}
				}
				lastSnap = applied
			}
			n.node.Advance()
		}
	}
}

// installedCount returns how many snapshots the node installed, once its
// loop is idle (it reads what the loop wrote).
func (n *refNode) installedCount() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.installed
}

// shutdown stops the node; its storage survives.
func (n *refNode) shutdown(nw *network) {
	nw.mu.Lock()
	delete(nw.nodes, n.id)
	nw.mu.Unlock()
	close(n.stop)
	<-n.done
	_ = n.svc.Close()
	_ = n.wal.close()
}

// cluster is a reference cluster of n nodes.
type cluster struct {
	t     testing.TB
	nw    *network
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
	c := &cluster{opts: opts, t: t, nw: &network{nodes: map[uint64]*refNode{}}, cfg: cfg,
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
			n.shutdown(c.nw)
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
	lead.shutdown(c.nw)
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
