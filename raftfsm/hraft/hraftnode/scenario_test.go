package hraftnode_test

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"

	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
)

// scenarioCluster runs the leader service's scenario over real
// hashicorp/raft nodes: leadership moves by raft's leadership transfer.
type scenarioCluster struct{ *cluster }

func (c scenarioCluster) Services() []*leader.Service {
	out := make([]*leader.Service, len(c.nodes))
	for i, nd := range c.nodes {
		out[i] = nd.Service.Service
	}
	return out
}

func (c scenarioCluster) ChangeLeader(t testing.TB) {
	for _, nd := range c.nodes {
		if nd.Raft.State() == raft.Leader {
			// Errors (a transfer already under way, say) leave the leader
			// as it is: the scenario goes on either way.
			_ = nd.Raft.LeadershipTransfer().Error()
			return
		}
	}
}

func (c scenarioCluster) Settle(testing.TB) { c.settle() }

// The leader service's scenario over hashicorp/raft: polls and blocks
// through whichever node leads while leadership moves, in both modes.
func TestLeaderServiceScenario(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) {
			c := newCluster(t, 3, mode, 200*time.Millisecond)
			rep := leadertest.Run(t, scenarioCluster{c}, leadertest.Options{Polls: 30})
			t.Logf("%+v", rep)
			require.Positive(t, rep.Completed)
			require.Equal(t, 5, rep.LeaderChanges)
		})
	}
}
