package e2e

import (
	"context"
	"fmt"
	"io"
	"log"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/raftfsm/etcdraft"
)

// An etcd-io/raft host as raftfsm/etcdraft's tests drive one: each node a
// Ready loop over a MemoryStorage that outlives the node (a stopped node
// restarts from it and replays its committed entries into a new state
// machine), CheckQuorum, PreVote, no proposal forwarding, and an
// in-process network between the loops.

var quiet = &raft.DefaultLogger{Logger: log.New(io.Discard, "", 0)}

// etcdNetwork delivers messages between the running nodes; a message to
// a stopped node is lost.
type etcdNetwork struct {
	mu    sync.Mutex
	nodes map[uint64]*etcdNode
}

func (nw *etcdNetwork) set(id uint64, n *etcdNode) {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	if n == nil {
		delete(nw.nodes, id)
		return
	}
	nw.nodes[id] = n
}

func (nw *etcdNetwork) send(from *etcdNode, msgs []*raftpb.Message) {
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
	}
}

// etcdNode is one node's raft state and Ready loop.
type etcdNode struct {
	node    raft.Node
	ad      *etcdraft.Adapter
	storage *raft.MemoryStorage
	inbox   chan *raftpb.Message
	stop    chan struct{}
	done    chan struct{}
}

// run is the host's Ready loop: it feeds the adapter, persists entries
// and hard state before sending messages, and applies committed entries.
func (n *etcdNode) run(t *testing.T, nw *etcdNetwork) {
	defer close(n.done)
	ticker := time.NewTicker(10 * time.Millisecond)
	defer ticker.Stop()
	ctx := context.Background()
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
					n.node.ApplyConfChange(&cc)
				}
				_, _ = n.ad.Apply(e) // a refusal is the state machine's answer to the proposer
			}
			n.node.Advance()
		}
	}
}

// newEtcdCluster is three etcd-io/raft nodes; a leader's ID in the log is
// its raft ID, n for member "node-n".
func newEtcdCluster(t *testing.T) *cluster {
	nw := &etcdNetwork{nodes: map[uint64]*etcdNode{}}
	storages := map[string]*raft.MemoryStorage{}
	peers := []raft.Peer{{ID: 1}, {ID: 2}, {ID: 3}}
	c := newCluster(t, func(c *cluster, m *member) {
		var id uint64
		_, err := fmt.Sscanf(m.id, "node-%d", &id)
		require.NoError(t, err)
		fsm, err := raftfsm.New(c.state)
		require.NoError(t, err)
		storage, restart := storages[m.id]
		if !restart {
			storage = raft.NewMemoryStorage()
			storages[m.id] = storage
		}
		cfg := &raft.Config{
			ID: id, ElectionTick: 10, HeartbeatTick: 1, Storage: storage,
			MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 256, CheckQuorum: true, PreVote: true,
			DisableProposalForwarding: true, Logger: quiet,
		}
		n := &etcdNode{storage: storage, inbox: make(chan *raftpb.Message, 4096), stop: make(chan struct{}), done: make(chan struct{})}
		if restart {
			n.node = raft.RestartNode(cfg)
		} else {
			n.node = raft.StartNode(cfg, peers)
		}
		n.ad = etcdraft.New(fsm, n.node, id, 0)
		svc := leader.New(n.ad, fsm, leader.WithProposeTimeout(2*time.Second))
		nw.set(id, n)
		go n.run(t, nw)
		m.svc = svc
		m.close = func() {
			nw.set(id, nil)
			close(n.stop)
			<-n.done
			_ = svc.Close()
		}
	})
	c.serving()
	return c
}
