package leader_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/raftfsm"
)

// memLog is the smallest leader.Log: a single node whose log is a slice.
// Its entries carry an envelope — a request ID, then compactkit's command
// — and its apply loop hands results back through leader.Requests, as a
// log that learns indexes only when applying (etcd-io/raft) would.
type memLog struct {
	mu      sync.Mutex
	fsm     *raftfsm.FSM
	entries [][]byte
	applied int
	reqs    *leader.Requests
}

func (l *memLog) Propose(ctx context.Context, cmd []byte, _ uint64) (leader.Applied, error) {
	id := l.reqs.Register()
	l.mu.Lock()
	l.entries = append(l.entries, append(binary.BigEndian.AppendUint64(nil, id), cmd...))
	l.applyLocked()
	l.mu.Unlock()
	return l.reqs.Wait(ctx, id)
}

// applyLocked is the host's apply loop: compactkit's entries go to the
// state machine, and each result to the proposal that awaits it.
func (l *memLog) applyLocked() {
	for ; l.applied < len(l.entries); l.applied++ {
		e := l.entries[l.applied]
		idx := uint64(l.applied + 1)
		res, err := l.fsm.Apply(ck.Entry{Index: idx, Term: 1}, e[8:])
		l.reqs.Deliver(binary.BigEndian.Uint64(e), leader.Applied{Index: idx, Term: 1, Result: res, Err: err})
	}
}

func (l *memLog) Leader() leader.Leadership {
	return leader.Leadership{Leads: true, Term: 1, LeaderID: "solo"}
}

func (l *memLog) Barrier(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.applyLocked()
	return ctx.Err()
}

// Example serves a worker through the leader service over a log of the
// host's own.
func Example() {
	cfg := raftfsm.DefaultConfig()
	cfg.Planner.Levels[0].MaxBlocks = 2
	fsm, err := raftfsm.New(cfg)
	if err != nil {
		panic(err)
	}
	log := &memLog{fsm: fsm, reqs: leader.NewRequests(uint64(time.Now().UnixNano()))}
	svc := leader.New(log, fsm)
	ctx := context.Background()

	if _, err := svc.AddBlocks(ctx, []ck.BlockMeta{
		leadertest.Block("seg-1", "acme", 0, 0), leadertest.Block("seg-2", "acme", 0, 1e9),
	}); err != nil {
		panic(err)
	}
	resp, err := svc.Poll(ctx, &ck.PollRequest{WorkerID: "worker-1", Seq: 1, FreeSlots: 1})
	if err != nil {
		panic(err)
	}
	job := resp.Jobs[0]
	fmt.Println(job.Outcome, job.Plan.Sources)
	// The entries: the configuration and TookOffice of the first term,
	// the blocks, the poll.
	fmt.Println("entries:", len(log.entries))
	// Output:
	// assigned [seg-1 seg-2]
	// entries: 4
}
