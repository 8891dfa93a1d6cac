package worker_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/worker"
)

// fsmLeader is a worker.Client over the real state machine, in process:
// each request is prepared (raftfsm.FSM.Prepare) and applied as the next
// log entry, as a host does, with the bubble's clock as the log's time.
// Around it, faults a network and a leader produce: a request lost before
// the leader sees it, a reply lost after the request was applied, a
// request delivered twice (the second is answered from the poll log), a
// reply delayed, a request refused with an error. The scheduling rules
// are the state machine's own; the test checks the worker against them.
type fsmLeader struct {
	mu     sync.Mutex
	f      *raftfsm.FSM
	index  uint64
	rnd    *rand.Rand
	faults faults
	// applied counts the entries applied; answered the requests answered
	// (duplicates included); injected the faults injected, by kind.
	applied  int
	injected map[string]int
}

// faults are the probabilities of each fault, per request.
type faults struct {
	lost, dropReply, duplicate, delay, refuse float64
}

var (
	errLost    = errors.New("fsm leader: request lost")
	errDropped = errors.New("fsm leader: reply lost")
	errRefused = errors.New("fsm leader: not the leader")
)

func newFSMLeader(t *testing.T, seed uint64, fs faults) *fsmLeader {
	t.Helper()
	cfg := raftfsm.DefaultConfig()
	cfg.Planner.Levels[0].MaxBlocks = 2
	cfg.Planner.Levels[1].MaxBlocks = 1000 // outputs wait: the test ends at level 1
	cfg.Planner.Levels[1].MaxAge = 0
	f, err := raftfsm.New(cfg)
	require.NoError(t, err)
	return &fsmLeader{f: f, rnd: rand.New(rand.NewPCG(seed, seed)), faults: fs, injected: map[string]int{}}
}

func (l *fsmLeader) fault(kind string, p float64) bool {
	if p > 0 && l.rnd.Float64() < p {
		l.injected[kind]++
		return true
	}
	return false
}

// apply applies cmd as the next entry. Call with mu held.
func (l *fsmLeader) apply(cmd *raftfsm.Command) (*raftfsm.Result, error) {
	data, err := l.f.Encode(cmd, time.Now().UnixNano())
	if err != nil {
		return nil, err
	}
	l.index++
	res, err := l.f.Apply(ck.Entry{Index: l.index, Term: 1, Time: time.Now().UnixNano()}, data)
	if err != nil {
		l.index-- // refused: the entry changed nothing
		return nil, err
	}
	l.applied++
	return res, nil
}

// addBlocks registers blocks written to the store.
func (l *fsmLeader) addBlocks(t *testing.T, bs []ck.BlockMeta) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	res, err := l.apply(&raftfsm.Command{AddBlocks: &raftfsm.AddBlocks{Blocks: bs}})
	require.NoError(t, err)
	for _, b := range res.Blocks {
		require.NoError(t, b.Err)
	}
}

// Poll implements worker.Client.
func (l *fsmLeader) Poll(ctx context.Context, req *ck.PollRequest) (*ck.PollResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l.mu.Lock()
	if l.fault("lost", l.faults.lost) {
		l.mu.Unlock()
		return nil, errLost
	}
	if l.fault("refuse", l.faults.refuse) {
		l.mu.Unlock()
		return nil, errRefused
	}
	resp, err := l.poll(req)
	if err == nil && l.fault("duplicate", l.faults.duplicate) {
		// The request arrives again (a retry by the transport): the poll
		// log answers it, and the worker gets the second answer.
		resp, err = l.poll(req)
	}
	drop := l.fault("dropReply", l.faults.dropReply)
	delay := l.fault("delay", l.faults.delay)
	l.mu.Unlock()
	if delay {
		time.Sleep(2 * time.Second)
	}
	if err != nil {
		return nil, err
	}
	if drop {
		return nil, errDropped
	}
	return resp, nil
}

// poll prepares and applies one request. Call with mu held.
func (l *fsmLeader) poll(req *ck.PollRequest) (*ck.PollResponse, error) {
	cmd, err := l.f.Prepare(req, time.Now().UnixNano())
	if err != nil {
		return nil, err
	}
	res, err := l.apply(cmd)
	if err != nil {
		return nil, err
	}
	return res.Poll, nil
}

// compacted reports whether every level-0 block was replaced and no job
// is left.
func (l *fsmLeader) compacted() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.f.Stats()
	view := l.f.Index()
	defer view.Close()
	for _, b := range view.Blocks("", 0) {
		if b.Level == 0 {
			return false
		}
	}
	return st.Scheduler.Jobs == 0 && st.Planner.Claimed == 0
}

// writeSources writes n blocks of two records each to the store, each
// sharing a key with the next.
func writeSources(t *testing.T, store blockmerge.Store, prefix string, n int) []ck.BlockMeta {
	t.Helper()
	var out []ck.BlockMeta
	for i := range n {
		out = append(out, writeSource(t, store, fmt.Sprintf("%s-%03d", prefix, i), fmt.Sprintf("%s-k%03d", prefix, i), fmt.Sprintf("%s-k%03d", prefix, i+1)))
	}
	return out
}

// checkOutputs reads every live block back and requires the records of
// the sources, each once.
func checkOutputs(t *testing.T, l *fsmLeader, store blockmerge.Store, prefixes []string, n int) {
	t.Helper()
	l.mu.Lock()
	view := l.f.Index()
	blocks := view.Blocks("", 0)
	view.Close()
	st := l.f.Stats()
	l.mu.Unlock()
	require.Zero(t, st.BrokenInvariants)
	require.NoError(t, st.Failed)
	keys := map[string]int{}
	for _, b := range blocks {
		require.Equal(t, uint32(1), b.Level, "block %s", b.ID)
		r, err := blockmerge.Open(context.Background(), store, b.ID)
		require.NoError(t, err, "output %s readable", b.ID)
		for i := range r.Datasets() {
			it, err := r.DatasetAt(context.Background(), i)
			require.NoError(t, err)
			for it.Next() {
				keys[string(it.Record().Key)]++
			}
			require.NoError(t, it.Err())
			require.NoError(t, it.Close())
		}
	}
	for _, p := range prefixes {
		// A job merges two adjacent sources: their shared key is one
		// record; the key a source shares with the next job's is in both
		// outputs.
		for i := 0; i <= n; i++ {
			require.NotZero(t, keys[fmt.Sprintf("%s-k%03d", p, i)], "key %s-k%03d lost", p, i)
		}
	}
}

// TestWorkersAgainstStateMachine runs workers against the real state
// machine through a faulty network: every block is compacted once, every
// output is readable and holds the sources' records, and the state
// machine found no broken invariant — whatever the faults.
func TestWorkersAgainstStateMachine(t *testing.T) {
	for name, fs := range map[string]faults{
		"no faults":       {},
		"lost requests":   {lost: 0.3},
		"lost replies":    {dropReply: 0.3},
		"duplicates":      {duplicate: 0.5},
		"delayed replies": {delay: 0.3},
		"refused":         {refuse: 0.2},
		"everything":      {lost: 0.1, dropReply: 0.1, duplicate: 0.2, delay: 0.1, refuse: 0.1},
	} {
		t.Run(name, func(t *testing.T) {
			injected := 0
			for seed := range uint64(3) {
				synctest.Test(t, func(t *testing.T) {
					store := blockmerge.NewMemStore()
					l := newFSMLeader(t, seed, fs)
					const n = 24
					prefixes := []string{"a", "b"}
					for _, p := range prefixes {
						l.addBlocks(t, writeSources(t, store, p, n))
					}
					var ws []running
					for i := range 2 {
						ws = append(ws, start(t, l, store, worker.Config{ID: fmt.Sprintf("w%d", i), Concurrency: 1 + i}))
					}
					eventually(t, "compacted", l.compacted)
					for _, r := range ws {
						require.NoError(t, r.stop())
					}
					checkOutputs(t, l, store, prefixes, n)
					var completed uint64
					for _, r := range ws {
						completed += r.w.Stats().JobsCompleted
					}
					require.Equal(t, uint64(len(prefixes)*n/2), l.f.Stats().Scheduler.Counters.Completed)
					require.LessOrEqual(t, completed, l.f.Stats().Scheduler.Counters.Completed, "a worker counts a completion the state machine did not make")
					for _, k := range l.injected {
						injected += k
					}
				})
			}
			if fs != (faults{}) {
				require.NotZero(t, injected, "faults were injected")
			}
		})
	}
}
