package leadertest_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"sync"
	"testing"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/raftfsm"
)

// pairLog is a log of two nodes in memory: node 0 leads, node 1 follows;
// every entry is applied on both as it is appended. It is sound unless a
// flaw is set.
type pairLog struct {
	mu      sync.Mutex
	fsms    [2]*raftfsm.FSM
	entries int
	flaw    string
	held    *leader.Applied // the last poll's result ("MixedUp")
}

// node is one node's view of the log.
type node struct {
	l  *pairLog
	id int
}

func (n node) Propose(ctx context.Context, cmd []byte, _ uint64) (leader.Applied, error) {
	l := n.l
	l.mu.Lock()
	if l.flaw == "WaitsForever" && l.entries == 30 {
		l.mu.Unlock()
		select {} // a lost proposal whose waiter nobody wakes, context or not
	}
	defer l.mu.Unlock()
	l.entries++
	idx := uint64(l.entries)
	a := leader.Applied{Index: idx, Term: 1}
	for i, f := range l.fsms {
		term := uint64(1)
		if l.flaw == "Replicas" && i == 1 {
			term = 2 // the follower applies at a term of its own
		}
		res, err := f.Apply(ck.Entry{Index: idx, Term: term}, cmd)
		if i == 0 {
			a.Result, a.Err = res, err
		}
	}
	if l.flaw == "MixedUp" && a.Result != nil && a.Result.Poll != nil {
		// Each poll's waiter gets the previous poll's result.
		prev := l.held
		l.held = &a
		if prev != nil {
			return *prev, nil
		}
	}
	return a, nil
}

func (n node) Leader() leader.Leadership {
	return leader.Leadership{Leads: n.id == 0, Term: 1, LeaderID: "n0"}
}

func (n node) Barrier(ctx context.Context) error { return ctx.Err() }

type pairCluster struct{ svcs []*leader.Service }

func (c pairCluster) Services() []*leader.Service { return c.svcs }
func (c pairCluster) ChangeLeader(testing.TB)     {}
func (c pairCluster) Settle(testing.TB)           {}

func newPair(t *testing.T, flaw string) pairCluster {
	cfg := raftfsm.DefaultConfig()
	cfg.Planner.Levels[0].MaxBlocks = 4
	l := &pairLog{flaw: flaw}
	var c pairCluster
	for i := range l.fsms {
		f, err := raftfsm.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		l.fsms[i] = f
		c.svcs = append(c.svcs, leader.New(node{l: l, id: i}, f))
	}
	return c
}

// flawEnv names the flaw of the log a child process runs the scenario on.
const flawEnv = "LEADERTEST_FLAW"

// The scenario passes the sound log of two nodes.
func TestSoundPair(t *testing.T) {
	rep := leadertest.Run(t, newPair(t, ""), leadertest.Options{Polls: 30})
	if rep.Completed == 0 {
		t.Fatal("no job completed")
	}
}

// Each promise of the scenario fails on the log with the flaw named after
// it. The scenario fails its *testing.T, so each flawed log runs in a
// child process.
func TestFlawsCaught(t *testing.T) {
	if fl := os.Getenv(flawEnv); fl != "" {
		leadertest.Run(t, newPair(t, fl), leadertest.Options{Polls: 30})
		return
	}
	// A worker handed another poll's result works on jobs leased to
	// another worker and never hears of its own: the scenario meets either
	// a job in progress for a worker that was never told ("assignment
	// lost") or, when two workers completed the same jobs first, their
	// sources compacted twice. Which comes first depends on how the
	// workers' goroutines interleave.
	for flaw, says := range map[string][]string{
		"Replicas":     {"snapshot differs"},                   // every replica byte-identical
		"MixedUp":      {"assignment lost", "compacted twice"}, // no assignment lost
		"WaitsForever": {"test timed out after"},               // nothing waits forever
	} {
		t.Run(flaw, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestFlawsCaught$", "-test.timeout=5s")
			cmd.Env = append(os.Environ(), flawEnv+"="+flaw)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("the scenario passed the log with the flaw %s (%v):\n%s", flaw, err, out)
			}
			if !slices.ContainsFunc(says, func(s string) bool { return bytes.Contains(out, []byte(s)) }) {
				t.Fatalf("the scenario failed, but not with any of %q:\n%s", says, out)
			}
		})
	}
}
