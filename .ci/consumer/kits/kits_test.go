// Package kits runs compactkit's test kits from outside the repository,
// as a host's own tests run them (their Examples only show the calls):
// leadertest's scenario over a one-node log, storetest's contract over a
// FileStore, runnertest's suite on blockmerge's merge, and a property
// drawn from compactkittest's generators. (embedtest's check runs in
// hraft's Examples, on the key/value host they build.)
package kits

import (
	"context"
	"testing"

	"pgregory.net/rapid"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/blockmerge/storetest"
	"github.com/compactkit/compactkit/compactkittest"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/worker"
	"github.com/compactkit/compactkit/worker/runnertest"
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

// The runner conformance suite on blockmerge's merge.
func TestRunner(t *testing.T) {
	runnertest.Run(t, runnertest.BlockmergeFormat(worker.RunnerFunc(
		func(ctx context.Context, store blockmerge.Store, plan *ck.JobPlan, token fencing.Token) ([]ck.BlockMeta, error) {
			return blockmerge.Merge(ctx, store, plan, token)
		})))
}

// The public generators in a property of the consumer's own.
func TestGeneratedBlocksValidate(t *testing.T) {
	space := compactkittest.Space{Tenants: []string{"a", "b"}, Shards: []uint32{0, 3}, Levels: []uint32{0, 1}}
	rapid.Check(t, func(t *rapid.T) {
		b := compactkittest.Block(space).Draw(t, "block")
		if err := b.Validate(); err != nil {
			t.Fatalf("a generated block does not validate: %v", err)
		}
	})
}
