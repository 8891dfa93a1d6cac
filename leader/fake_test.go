package leader_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/raftfsm"
)

// fakeCluster is an in-memory log shared by a few nodes, for the service's
// tests. Appends commit at once; each node applies the committed entries
// when it proposes, at a barrier, and when it settles. Its faults:
//
//   - drop: a proposal is lost without a word (the proposer learns nothing
//     and its wait times out), as etcd-io/raft may do;
//   - lostReply: the entry is appended and applied, but the proposer is
//     told the outcome is unknown;
//   - conflict: a foreign entry lands between a poll's preparation and its
//     append, and an append prepared on a stale index is refused with
//     ErrConflict, as the bucket log does.
//
// Proposals are matched to applied entries by a request ID in the entry's
// envelope (leader.Requests), so the log learns indexes only when applying.
type fakeCluster struct {
	mu      sync.Mutex
	rng     *rand.Rand
	entries []fakeEntry
	term    uint64
	leader  int
	nodes   []*fakeNode
	svcs    []*leader.Service

	drop, lostReply, conflict float64
}

type fakeEntry struct {
	term     uint64
	proposer int
	req      uint64
	cmd      []byte
}

type fakeNode struct {
	c       *fakeCluster
	id      int
	fsm     *raftfsm.FSM
	reqs    *leader.Requests
	applied int
}

func newFakeCluster(t *testing.T, n int, seed uint64, opts ...leader.Option) *fakeCluster {
	c := &fakeCluster{rng: rand.New(rand.NewPCG(seed, 1)), term: 1}
	cfg := raftfsm.DefaultConfig()
	cfg.Planner.Levels[0].MaxBlocks = 4
	for i := range n {
		f, err := raftfsm.New(cfg)
		require.NoError(t, err)
		node := &fakeNode{c: c, id: i, fsm: f, reqs: leader.NewRequests(uint64(i+1) << 48)}
		c.nodes = append(c.nodes, node)
		c.svcs = append(c.svcs, leader.New(node, f, append([]leader.Option{leader.WithProposeTimeout(200 * time.Millisecond)}, opts...)...))
	}
	return c
}

func (c *fakeCluster) Services() []*leader.Service { return c.svcs }

func (c *fakeCluster) ChangeLeader(testing.TB) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.leader = (c.leader + 1 + c.rng.IntN(len(c.nodes)-1)) % len(c.nodes)
	c.term++
}

func (c *fakeCluster) Settle(testing.TB) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.nodes {
		n.applyLocked()
	}
}

func (c *fakeCluster) chance(p float64) bool { return p > 0 && c.rng.Float64() < p }

// applyLocked applies the committed entries this node has not applied,
// handing its own proposals' results to their waiters.
func (n *fakeNode) applyLocked() {
	for ; n.applied < len(n.c.entries); n.applied++ {
		e := n.c.entries[n.applied]
		idx := uint64(n.applied + 1)
		res, err := n.fsm.Apply(ck.Entry{Index: idx, Term: e.term}, e.cmd)
		if e.proposer == n.id {
			n.reqs.Deliver(e.req, leader.Applied{Index: idx, Term: e.term, Result: res, Err: err})
		}
	}
}

// envelope is what the host's entries carry: the request ID, then
// compactkit's command (the fake keeps them apart; a real host encodes
// both).
func envelope(req uint64, cmd []byte) []byte {
	return append(binary.BigEndian.AppendUint64(nil, req), cmd...)
}

func (n *fakeNode) Propose(ctx context.Context, cmd []byte, preparedAt uint64) (leader.Applied, error) {
	c := n.c
	c.mu.Lock()
	if c.leader != n.id {
		l := n.leadershipLocked()
		c.mu.Unlock()
		return leader.Applied{}, &leader.NotLeaderError{LeaderID: l.LeaderID}
	}
	if preparedAt != 0 && c.chance(c.conflict) {
		// Another writer's entry lands first.
		foreign, _ := (&raftfsm.Command{Time: 1, Watermark: &raftfsm.Watermark{OldestReader: 0}}).MarshalVersion(raftfsm.CommandVersion)
		c.entries = append(c.entries, fakeEntry{term: c.term, proposer: -1, cmd: foreign})
	}
	if tip := uint64(len(c.entries)); c.conflict > 0 && preparedAt != 0 && preparedAt != tip {
		n.applyLocked()
		c.mu.Unlock()
		return leader.Applied{}, fmt.Errorf("fake: prepared at %d, tip %d: %w", preparedAt, tip, leader.ErrConflict)
	}
	id := n.reqs.Register()
	env := envelope(id, cmd)
	if !c.chance(c.drop) {
		c.entries = append(c.entries, fakeEntry{term: c.term, proposer: n.id, req: binary.BigEndian.Uint64(env), cmd: env[8:]})
	}
	n.applyLocked()
	lost := c.chance(c.lostReply)
	c.mu.Unlock()
	if lost {
		n.reqs.Forget(id)
		return leader.Applied{}, fmt.Errorf("fake: reply lost: %w", leader.ErrOutcomeUnknown)
	}
	return n.reqs.Wait(ctx, id)
}

func (n *fakeNode) leadershipLocked() leader.Leadership {
	return leader.Leadership{Leads: n.c.leader == n.id, Term: n.c.term, LeaderID: fmt.Sprint(n.c.leader)}
}

func (n *fakeNode) Leader() leader.Leadership {
	n.c.mu.Lock()
	defer n.c.mu.Unlock()
	return n.leadershipLocked()
}

func (n *fakeNode) Barrier(ctx context.Context) error {
	n.c.mu.Lock()
	defer n.c.mu.Unlock()
	n.applyLocked()
	return ctx.Err()
}
