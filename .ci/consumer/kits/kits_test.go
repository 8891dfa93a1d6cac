// Package kits runs compactkit's test kits from outside the repository:
// leadertest's scenario over a one-node log, storetest's contract over a
// FileStore, runnertest's suite on blockmerge's merge, embedtest's check
// on a host state machine of its own, and a property drawn from
// compactkittest's generators.
package kits

import (
	"testing"

	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/blockmerge/storetest"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/raftfsm"
)

// oneNode is a leadertest.Cluster of one node whose leader never changes.
type oneNode struct{ svc *leader.Service }

func (c oneNode) Services() []*leader.Service { return []*leader.Service{c.svc} }
func (oneNode) ChangeLeader(testing.TB)       {}
func (oneNode) Settle(testing.TB)             {}

func TestLeaderScenario(t *testing.T) {
	fsm, err := raftfsm.New(raftfsm.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	svc := leader.New(leadertest.NewMemLog(fsm), fsm)
	t.Cleanup(func() { _ = svc.Close() })
	rep := leadertest.Run(t, oneNode{svc}, leadertest.Options{LeaderChanges: -1, Polls: 20})
	if rep.Polls == 0 || rep.Assigned == 0 {
		t.Fatalf("report %+v: nothing polled or assigned", rep)
	}
}

func TestStoreContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) blockmerge.Store {
		s, err := blockmerge.NewFileStore(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
