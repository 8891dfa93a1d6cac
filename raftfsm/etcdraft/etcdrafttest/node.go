package etcdrafttest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/raftfsm/etcdraft"
)

// tickInterval is how often a node's loop ticks its raft node; an
// election takes about ten ticks.
const tickInterval = 10 * time.Millisecond

// Network delivers messages between the running nodes of one process. A
// message to a node that is not running is lost, and a message to a full
// inbox is dropped, as a congested network would. The zero value is not
// usable: call [NewNetwork].
type Network struct {
	mu    sync.Mutex
	nodes map[uint64]*Node
}

// NewNetwork returns a network with no node.
func NewNetwork() *Network { return &Network{nodes: map[uint64]*Node{}} }

func (nw *Network) set(id uint64, n *Node) {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	if n == nil {
		delete(nw.nodes, id)
		return
	}
	nw.nodes[id] = n
}

func (nw *Network) send(from *Node, msgs []*raftpb.Message) {
	for _, m := range msgs {
		nw.mu.Lock()
		to := nw.nodes[m.GetTo()]
		nw.mu.Unlock()
		if to == nil {
			from.Raft.ReportUnreachable(m.GetTo())
			continue
		}
		select {
		case to.inbox <- m:
		default:
		}
		if m.GetType() == raftpb.MessageType_MsgSnap {
			from.Raft.ReportSnapshot(m.GetTo(), raft.SnapshotFinish)
		}
	}
}

// Config is a node's configuration.
type Config struct {
	// ID is the node's raft ID (not 0).
	ID uint64
	// Peers are the members of a new cluster; a restarted node ignores
	// them.
	Peers []raft.Peer
	// Storage is the node's storage: nil for a new one. A storage that
	// holds entries restarts the node from it.
	Storage *raft.MemoryStorage
	// Network connects the node to the others; nil for a single node.
	Network *Network
	// Persist, if set, is called with every Ready before the node stores
	// it: a host's write-ahead log. An error is the node's (see
	// [Node.Stop]).
	Persist func(raft.Ready) error
	// SnapshotEvery is how many applied entries lie between the snapshots
	// the node takes of its state machine into its storage, which then
	// keeps 20 entries before the snapshot; 0 takes none.
	SnapshotEvery uint64
}

// Node is one etcd-io/raft node and its Ready loop.
type Node struct {
	// Raft is the raft node; Adapter is compactkit's adapter on it, and
	// Storage the node's storage.
	Raft    raft.Node
	Adapter *etcdraft.Adapter
	Storage *raft.MemoryStorage

	cfg   Config
	conf  *raftpb.ConfState
	inbox chan *raftpb.Message
	stop  chan struct{}
	done  chan struct{}
	err   error // the loop's first error, read after done
}

// Start starts (or, on a storage with entries, restarts) a node hosting
// fsm, which must be new: a restarted node restores it from the storage's
// snapshot and then replays the entries after it.
func Start(fsm *raftfsm.FSM, cfg Config) (*Node, error) {
	if fsm == nil {
		return nil, errors.New("etcdrafttest: no state machine")
	}
	if cfg.ID == 0 {
		return nil, errors.New("etcdrafttest: node ID 0")
	}
	if cfg.Storage == nil {
		cfg.Storage = raft.NewMemoryStorage()
	}
	n := &Node{Storage: cfg.Storage, cfg: cfg, inbox: make(chan *raftpb.Message, 4096),
		stop: make(chan struct{}), done: make(chan struct{})}
	snap, err := cfg.Storage.Snapshot()
	if err != nil {
		return nil, err
	}
	var applied uint64
	if !raft.IsEmptySnap(snap) {
		if err := fsm.Restore(bytes.NewReader(snap.GetData())); err != nil {
			return nil, fmt.Errorf("etcdrafttest: restoring the storage's snapshot: %w", err)
		}
		applied = snap.GetMetadata().GetIndex()
		n.conf = snap.GetMetadata().GetConfState()
	}
	rc := &raft.Config{
		ID: cfg.ID, ElectionTick: 10, HeartbeatTick: 1, Storage: cfg.Storage, Applied: applied,
		MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 256, CheckQuorum: true, PreVote: true,
		DisableProposalForwarding: true, Logger: quiet,
	}
	if last, _ := cfg.Storage.LastIndex(); last > 0 {
		n.Raft = raft.RestartNode(rc)
	} else {
		n.Raft = raft.StartNode(rc, cfg.Peers)
	}
	n.Adapter = etcdraft.New(fsm, n.Raft, cfg.ID, applied)
	if cfg.Network != nil {
		cfg.Network.set(cfg.ID, n)
	}
	go n.run()
	return n, nil
}

// Stop takes the node off its network and stops it; its storage
// survives. It returns the errors the loop met storing, persisting or
// snapshotting (a refusal of the state machine is no error: it is the
// answer to the proposer).
func (n *Node) Stop() error {
	if n.cfg.Network != nil {
		n.cfg.Network.set(n.cfg.ID, nil)
	}
	close(n.stop)
	<-n.done
	return n.err
}

func (n *Node) fail(err error) {
	if err != nil {
		n.err = errors.Join(n.err, err)
	}
}

func (n *Node) run() {
	defer close(n.done)
	ticker := time.NewTicker(tickInterval)
	defer ticker.Stop()
	lastSnap := n.Adapter.Applied()
	for {
		select {
		case <-n.stop:
			n.Raft.Stop()
			return
		case <-ticker.C:
			n.Raft.Tick()
		case m := <-n.inbox:
			_ = n.Raft.Step(context.Background(), m) // a message of a stale term is refused: fine
		case rd := <-n.Raft.Ready():
			n.ready(rd)
			if !raft.IsEmptySnap(rd.Snapshot) {
				lastSnap = n.Adapter.Applied()
			}
			if applied := n.Adapter.Applied(); n.cfg.SnapshotEvery > 0 && applied-lastSnap >= n.cfg.SnapshotEvery && n.conf != nil {
				n.fail(n.snapshot())
				lastSnap = applied
			}
			n.Raft.Advance()
		}
	}
}

// ready handles one Ready, Advance aside.
func (n *Node) ready(rd raft.Ready) {
	n.Adapter.Observe(rd)
	if n.cfg.Persist != nil {
		n.fail(n.cfg.Persist(rd))
	}
	if !raft.IsEmptySnap(rd.Snapshot) {
		n.fail(n.Storage.ApplySnapshot(rd.Snapshot))
		n.fail(n.Adapter.Restore(bytes.NewReader(rd.Snapshot.GetData()), rd.Snapshot.GetMetadata().GetIndex()))
		n.conf = rd.Snapshot.GetMetadata().GetConfState()
	}
	if rd.HardState != nil {
		n.fail(n.Storage.SetHardState(rd.HardState))
	}
	n.fail(n.Storage.Append(rd.Entries))
	if n.cfg.Network != nil {
		n.cfg.Network.send(n, rd.Messages)
	}
	for _, e := range rd.CommittedEntries {
		if e.GetType() == raftpb.EntryType_EntryConfChange {
			var cc raftpb.ConfChange
			if err := proto.Unmarshal(e.GetData(), &cc); err != nil {
				n.fail(err)
			} else {
				n.conf = n.Raft.ApplyConfChange(&cc)
			}
		}
		_, _ = n.Adapter.Apply(e) // a refusal is the state machine's answer to the proposer
	}
}

// snapshot writes the state machine's snapshot into the storage and
// compacts the storage to 20 entries before it.
func (n *Node) snapshot() error {
	var b bytes.Buffer
	i, err := n.Adapter.Snapshot(&b)
	if err != nil {
		return err
	}
	if _, err := n.Storage.CreateSnapshot(i, n.conf, b.Bytes()); errors.Is(err, raft.ErrSnapOutOfDate) {
		return nil // the leader's snapshot, installed meanwhile, is newer
	} else if err != nil {
		return err
	}
	if first, _ := n.Storage.FirstIndex(); i > first+20 {
		_ = n.Storage.Compact(i - 20)
	}
	return nil
}
