// Package rpctest holds what the tests of package rpc and of its
// end-to-end module share: an in-process leader, a node that does not
// lead, and a loopback server.
package rpctest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/raftfsm"
)

// Leader is a single-node leader over the in-memory log.
type Leader struct {
	Svc *leader.Service
	FSM *raftfsm.FSM
	Log *leadertest.MemLog
}

// NewLeader returns a leader whose planner makes a job of every two
// level-0 blocks; it is closed when the test ends.
func NewLeader(t testing.TB, opts ...leader.Option) *Leader {
	t.Helper()
	cfg := raftfsm.DefaultConfig()
	cfg.Planner.Levels[0].MaxBlocks = 2
	fsm, err := raftfsm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	log := leadertest.NewMemLog(fsm)
	svc := leader.New(log, fsm, opts...)
	t.Cleanup(func() { _ = svc.Close() })
	return &Leader{Svc: svc, FSM: fsm, Log: log}
}

// NewFollower returns the service of a node that does not lead and knows
// the leader by its consensus ID and address. Its replica (fsm) is never
// read.
func NewFollower(t testing.TB, fsm *raftfsm.FSM, id, addr string) *leader.Service {
	t.Helper()
	svc := leader.New(followerLog{id: id, addr: addr}, fsm)
	t.Cleanup(func() { _ = svc.Close() })
	return svc
}

// followerLog is the log of a node that does not lead: it names the
// leader, and appends nothing.
type followerLog struct{ id, addr string }

func (l followerLog) Propose(context.Context, []byte, uint64) (leader.Applied, error) {
	return leader.Applied{}, &leader.NotLeaderError{LeaderID: l.id, LeaderAddr: l.addr}
}

func (l followerLog) Leader() leader.Leadership {
	return leader.Leadership{Term: 1, LeaderID: l.id, LeaderAddr: l.addr}
}

func (followerLog) Barrier(context.Context) error { return nil }

// Serve starts srv (whose Handler is set) on a loopback listener; it is
// closed when the test ends.
func Serve(t testing.TB, srv *http.Server) *httptest.Server {
	t.Helper()
	ts := httptest.NewUnstartedServer(srv.Handler)
	ts.Config = srv
	ts.Start()
	t.Cleanup(ts.Close)
	return ts
}

// Entries returns how many entries the leader's log holds: its state
// machine applies each as it is appended.
func (l *Leader) Entries() int {
	i, _, _ := l.FSM.LastApplied()
	return int(i)
}
