package etcdraft

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/raftfsm"
)

// defaultTag is the first byte of compactkit's entries in the envelope,
// by default.
const defaultTag byte = 'c'

// defaultReadRetry is how long a barrier waits for the answer to its
// read-index request before asking again (a request the leader dropped,
// during an election say, is never answered).
const defaultReadRetry = 200 * time.Millisecond

// envelope returns the entry data of a compactkit command proposed by the
// node with raft ID node as its request id: the tag, node and id as
// uvarints, then the command. [Adapter.Apply] reads it back and hands the
// result to the proposer's waiting request, on the proposer only.
func envelope(tag byte, node, id uint64, cmd []byte) []byte {
	b := make([]byte, 0, 1+2*binary.MaxVarintLen64+len(cmd))
	b = append(b, tag)
	b = binary.AppendUvarint(b, node)
	b = binary.AppendUvarint(b, id)
	return append(b, cmd...)
}

// openEnvelope returns the proposer, request ID and command of a
// compactkit entry, or ok=false for any other data.
func openEnvelope(tag byte, data []byte) (node, id uint64, cmd []byte, ok bool) {
	if len(data) < 3 || data[0] != tag {
		return 0, 0, nil, false
	}
	node, n := binary.Uvarint(data[1:])
	if n <= 0 {
		return 0, 0, nil, false
	}
	id, m := binary.Uvarint(data[1+n:])
	if m <= 0 {
		return 0, 0, nil, false
	}
	return node, id, data[1+n+m:], true
}

// Option configures an [Adapter].
type Option func(*Adapter)

// WithTag sets the first byte of compactkit's entries (default 'c'), for
// a host whose own entries start with a tag byte too.
func WithTag(tag byte) Option { return func(a *Adapter) { a.tag = tag } }

// WithPeerAddr tells the adapter how to name a node's address (for
// [leader.NotLeaderError.LeaderAddr], so a worker can find the leader).
func WithPeerAddr(addr func(id uint64) string) Option {
	return func(a *Adapter) {
		if addr != nil {
			a.addr = addr
		}
	}
}

// WithReadRetry sets how long a barrier waits for a read-index answer
// before asking again (default 200 milliseconds): a request the leader
// dropped, during an election say, is never answered.
func WithReadRetry(d time.Duration) Option {
	return func(a *Adapter) {
		if d > 0 {
			a.readRetry = d
		}
	}
}

// WithRequestBase sets the first request ID (default: the current time in
// nanoseconds), which must differ from every earlier incarnation's IDs on
// this node (see [leader.Requests]).
func WithRequestBase(base uint64) Option {
	return func(a *Adapter) { a.reqs = leader.NewRequests(base) }
}

// Adapter connects a [raftfsm.FSM] to an etcd-io/raft node: the host's
// Ready loop feeds it ([Adapter.Observe], [Adapter.Apply]) and it
// implements [leader.Log] for a [leader.Service]. It is safe for
// concurrent use; Observe and Apply are called from the Ready loop only.
type Adapter struct {
	fsm       *raftfsm.FSM
	node      raft.Node
	tag       byte
	addr      func(id uint64) string
	readRetry time.Duration
	reqs      *leader.Requests

	mu      sync.Mutex
	lead    uint64 // the leader's ID as far as this node knows (0: none)
	leads   bool
	term    uint64
	applied uint64        // the last entry applied, compactkit's or not
	advance chan struct{} // closed and replaced when applied moves
	reads   map[string]chan uint64
	readSeq uint64
	id      uint64
}

var _ leader.Log = (*Adapter)(nil)

// New returns an adapter for the node with the given raft ID, applying
// compactkit's entries to fsm. applied is the index the node restarts
// from (the snapshot's, or 0), as given to raft.Config.Applied.
func New(fsm *raftfsm.FSM, node raft.Node, id, applied uint64, opts ...Option) *Adapter {
	a := &Adapter{
		fsm: fsm, node: node, id: id, tag: defaultTag, readRetry: defaultReadRetry,
		addr:    func(uint64) string { return "" },
		applied: applied, advance: make(chan struct{}), reads: map[string]chan uint64{},
	}
	for _, o := range opts {
		o(a)
	}
	if a.reqs == nil {
		a.reqs = leader.NewRequests(uint64(time.Now().UnixNano()))
	}
	return a
}

// FSM returns the adapter's state machine.
func (a *Adapter) FSM() *raftfsm.FSM { return a.fsm }

// Observe takes what compactkit needs from a Ready: leadership and term,
// and the answers to read-index requests. Call it first for every Ready.
func (a *Adapter) Observe(rd raft.Ready) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if rd.SoftState != nil {
		a.lead = rd.SoftState.Lead
		a.leads = rd.SoftState.RaftState == raft.StateLeader
	}
	if rd.HardState != nil {
		a.term = rd.HardState.GetTerm()
	}
	for _, rs := range rd.ReadStates {
		if ch, ok := a.reads[string(rs.RequestCtx)]; ok {
			delete(a.reads, string(rs.RequestCtx))
			ch <- rs.Index
		}
	}
}

// Apply applies one committed entry, in log order, after the host has
// applied it if it is the host's own. A compactkit entry goes to the state
// machine and its result to the proposal waiting for it; every entry
// advances the applied index. It reports whether the entry was
// compactkit's. The error is the state machine's refusal of a compactkit
// entry (it changed nothing, on every replica) or, wrapping
// raftfsm.ErrCorrupt, a replica that stopped (restore a snapshot).
func (a *Adapter) Apply(e *raftpb.Entry) (bool, error) {
	var (
		isCK bool
		err  error
	)
	if e.GetType() == raftpb.EntryType_EntryNormal {
		if node, id, cmd, ok := openEnvelope(a.tag, e.GetData()); ok {
			isCK = true
			var res *raftfsm.Result
			if len(cmd) > 0 { // an empty command is a barrier: nothing to apply
				res, err = a.fsm.Apply(ck.Entry{Index: e.GetIndex(), Term: e.GetTerm()}, cmd)
			}
			if node == a.id {
				a.reqs.Deliver(id, leader.Applied{Index: e.GetIndex(), Term: e.GetTerm(), Result: res, Err: err})
			}
		}
	}
	a.setApplied(e.GetIndex())
	return isCK, err
}

func (a *Adapter) setApplied(i uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if i > a.applied {
		a.applied = i
		close(a.advance)
		a.advance = make(chan struct{})
	}
}

// Applied returns the index of the last entry applied.
func (a *Adapter) Applied() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.applied
}

// Snapshot writes compactkit's section of a snapshot of the applied state
// (raftpb.Snapshot.Data, or a part of it) and returns the index it covers,
// for raft.MemoryStorage.CreateSnapshot.
func (a *Adapter) Snapshot(w io.Writer) (uint64, error) {
	c, err := a.fsm.Capture()
	if err != nil {
		return 0, fmt.Errorf("etcdraft: snapshot: %w", err)
	}
	defer c.Close()
	// Everything up to the adapter's index is applied: the state
	// machine's own index may be lower (the last entries were the host's).
	index := a.Applied()
	if i := c.Index; i > index {
		index = i
	}
	if err := c.Snapshot(w); err != nil {
		return 0, fmt.Errorf("etcdraft: snapshot: %w", err)
	}
	return index, nil
}

// Restore replaces the state with compactkit's section of an installed
// snapshot that covers the log up to index.
func (a *Adapter) Restore(r io.Reader, index uint64) error {
	if err := a.fsm.Restore(r); err != nil {
		return fmt.Errorf("etcdraft: restore: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.applied = index
	close(a.advance)
	a.advance = make(chan struct{})
	return nil
}

// Leader reports what the node knows of who leads.
func (a *Adapter) Leader() leader.Leadership {
	a.mu.Lock()
	defer a.mu.Unlock()
	l := leader.Leadership{Leads: a.leads, Term: a.term}
	if a.lead != 0 {
		l.LeaderID, l.LeaderAddr = strconv.FormatUint(a.lead, 10), a.addr(a.lead)
	}
	return l
}

// Propose proposes cmd in compactkit's envelope and waits until this node
// applies it. A node that does not lead refuses at once (nothing is
// appended); a proposal raft drops, or one whose entry is not applied
// before ctx ends, has an unknown outcome.
func (a *Adapter) Propose(ctx context.Context, cmd []byte, _ uint64) (leader.Applied, error) {
	if l := a.Leader(); !l.Leads {
		return leader.Applied{}, &leader.NotLeaderError{LeaderID: l.LeaderID, LeaderAddr: l.LeaderAddr}
	}
	id := a.reqs.Register()
	if err := a.node.Propose(ctx, envelope(a.tag, a.id, id, cmd)); err != nil {
		a.reqs.Forget(id)
		if errors.Is(err, raft.ErrProposalDropped) {
			l := a.Leader()
			return leader.Applied{}, &leader.NotLeaderError{LeaderID: l.LeaderID, LeaderAddr: l.LeaderAddr, Cause: err}
		}
		return leader.Applied{}, fmt.Errorf("etcdraft: propose: %w: %w", leader.ErrOutcomeUnknown, err)
	}
	return a.reqs.Wait(ctx, id)
}

// Barrier returns once everything committed before the call is applied
// here. On the leader it commits a barrier entry (compactkit's envelope
// with no command) and waits until it is applied, as hashicorp/raft's
// Barrier does — so the two hosts number their entries alike. On a
// follower it asks raft for a read index (ReadIndex, linearizable with
// CheckQuorum), asking again if no answer comes within the read retry,
// then waits until the node has applied up to it.
func (a *Adapter) Barrier(ctx context.Context) error {
	if a.Leader().Leads {
		if _, err := a.Propose(ctx, nil, 0); err == nil || !errors.Is(err, leader.ErrNotLeader) {
			return err
		}
		// Leadership lost meanwhile: a follower's barrier.
	}
	index, err := a.readIndex(ctx)
	if err != nil {
		return err
	}
	for {
		a.mu.Lock()
		applied, advance := a.applied, a.advance
		a.mu.Unlock()
		if applied >= index {
			return nil
		}
		select {
		case <-advance:
		case <-ctx.Done():
			return fmt.Errorf("etcdraft: barrier: applied %d of %d: %w", applied, index, ctx.Err())
		}
	}
}

func (a *Adapter) readIndex(ctx context.Context) (uint64, error) {
	for {
		a.mu.Lock()
		a.readSeq++
		rctx := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, a.id), a.readSeq)
		ch := make(chan uint64, 1)
		a.reads[string(rctx)] = ch
		a.mu.Unlock()
		forget := func() {
			a.mu.Lock()
			delete(a.reads, string(rctx))
			a.mu.Unlock()
		}
		if err := a.node.ReadIndex(ctx, rctx); err != nil {
			forget()
			return 0, fmt.Errorf("etcdraft: read index: %w", err)
		}
		t := time.NewTimer(a.readRetry)
		select {
		case i := <-ch:
			t.Stop()
			return i, nil
		case <-t.C:
			forget() // dropped (no leader, say): ask again
		case <-ctx.Done():
			t.Stop()
			forget()
			return 0, fmt.Errorf("etcdraft: read index: %w", ctx.Err())
		}
	}
}
