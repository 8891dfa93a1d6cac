package leadertest

import (
	"context"
	"encoding/binary"
	"sync"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/raftfsm"
)

// MemLog is the smallest [leader.Log]: one node, whose log is a slice in
// memory, for tests and examples — not a replicated log. Its entries carry
// an envelope (a request ID, then compactkit's command) and its apply loop
// hands results back through [leader.Requests], as a log that learns an
// entry's index only when applying it would; read its source as a model of
// a Log.
type MemLog struct {
	mu      sync.Mutex
	fsm     *raftfsm.FSM
	entries [][]byte
	applied int
	reqs    *leader.Requests
}

// NewMemLog returns a log whose entries are applied to fsm.
func NewMemLog(fsm *raftfsm.FSM) *MemLog {
	return &MemLog{fsm: fsm, reqs: leader.NewRequests(uint64(time.Now().UnixNano()))}
}

// Propose appends the entry, applies it and returns its result.
func (l *MemLog) Propose(ctx context.Context, cmd []byte, _ uint64) (leader.Applied, error) {
	id := l.reqs.Register()
	l.mu.Lock()
	l.entries = append(l.entries, append(binary.BigEndian.AppendUint64(nil, id), cmd...))
	l.applyLocked()
	l.mu.Unlock()
	return l.reqs.Wait(ctx, id)
}

// applyLocked is the host's apply loop: compactkit's entries go to the
// state machine, and each result to the proposal that awaits it.
func (l *MemLog) applyLocked() {
	for ; l.applied < len(l.entries); l.applied++ {
		e := l.entries[l.applied]
		idx := uint64(l.applied + 1)
		res, err := l.fsm.Apply(ck.Entry{Index: idx, Term: 1}, e[8:])
		l.reqs.Deliver(binary.BigEndian.Uint64(e), leader.Applied{Index: idx, Term: 1, Result: res, Err: err})
	}
}

// Leader says that this node leads, in term 1.
func (l *MemLog) Leader() leader.Leadership {
	return leader.Leadership{Leads: true, Term: 1, LeaderID: "mem"}
}

// Barrier applies everything appended.
func (l *MemLog) Barrier(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.applyLocked()
	return ctx.Err()
}
