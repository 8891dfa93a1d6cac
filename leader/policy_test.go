package leader_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/planner"
	"github.com/compactkit/compactkit/policy"
	"github.com/compactkit/compactkit/raftfsm"
)

// noon is a Wednesday, 12:00 UTC: outside an off-peak window.
var noon = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

var offPeak = policy.RunPolicy{Mode: policy.OnlyIn, Windows: []policy.Window{{Days: policy.EveryDay, Start: 22 * 60, End: 6 * 60}}}

// Policies set through one leader are replicated state: the next leader
// reads them, every replica holds them, a follower names the leader, and a
// policy under which work could never start is refused before anything is
// proposed.
func TestServicePolicy(t *testing.T) {
	clock := func() time.Time { return noon }
	c := newFakeCluster(t, 3, 7, leader.WithClock(clock))
	ctx := context.Background()
	svc := c.svcs[0]
	_, err := svc.AddBlocks(ctx, []ck.BlockMeta{leadertest.Block("a-1", "acme", 0, 0), leadertest.Block("g-1", "globex", 0, 0)})
	require.NoError(t, err)

	acme := policy.Tenant{Class: policy.Low, MaxInProgress: 2, Run: offPeak, StaleAfter: time.Hour}
	res, err := svc.Propose(ctx, &raftfsm.Command{Policy: &raftfsm.PolicyCommand{Action: raftfsm.PolicySet, Tenant: "acme", Policy: &acme, By: "alice"}})
	require.NoError(t, err)
	require.Equal(t, 1, res.Count)
	_, err = svc.Propose(ctx, &raftfsm.Command{Policy: &raftfsm.PolicyCommand{Action: raftfsm.PolicySet, All: true, Policy: &policy.Tenant{Class: policy.High}}})
	require.NoError(t, err)
	level := uint32(0)
	_, err = svc.Propose(ctx, &raftfsm.Command{Policy: &raftfsm.PolicyCommand{Action: raftfsm.PolicyCompactNow, Tenant: "globex", Level: &level}})
	require.NoError(t, err)

	ps, err := readPolicies(ctx, svc)
	require.NoError(t, err)
	require.Equal(t, policy.High, ps.Default.Class)
	require.Len(t, ps.Tenants, 1)
	require.Equal(t, "acme", ps.Tenants[0].Tenant)
	require.True(t, acme.Equal(ps.Tenants[0].Policy), "%+v", ps.Tenants[0].Policy)
	require.False(t, ps.Tenants[0].Open, "at noon the off-peak window is closed")
	require.Equal(t, []planner.Force{{Tenant: "globex", Level: 0, Before: noon.UnixNano()}}, ps.CompactNow)

	// Refused before anything is proposed: a freeze that never lifts, a
	// set without a policy, a level on a set.
	c.mu.Lock()
	before := len(c.entries)
	c.mu.Unlock()
	always := policy.RunPolicy{Mode: policy.NeverIn, Windows: []policy.Window{{Days: policy.EveryDay, Start: 0, End: 24 * 60}}}
	_, err = svc.Propose(ctx, &raftfsm.Command{Policy: &raftfsm.PolicyCommand{Action: raftfsm.PolicySet, Tenant: "acme", Policy: &policy.Tenant{Run: always}}})
	require.ErrorIs(t, err, raftfsm.ErrInvalidCommand)
	require.ErrorIs(t, err, policy.ErrNeverOpens)
	_, err = svc.Propose(ctx, &raftfsm.Command{Policy: &raftfsm.PolicyCommand{Action: raftfsm.PolicySet, Tenant: "acme"}})
	require.ErrorIs(t, err, raftfsm.ErrInvalidCommand)
	_, err = svc.Propose(ctx, &raftfsm.Command{Policy: &raftfsm.PolicyCommand{Action: raftfsm.PolicySet, Tenant: "acme", Level: &level, Policy: &acme}})
	require.ErrorIs(t, err, raftfsm.ErrInvalidCommand)
	c.mu.Lock()
	require.Equal(t, before, len(c.entries), "refused commands propose nothing")
	c.mu.Unlock()

	// A follower names the leader.
	_, err = readPolicies(ctx, c.svcs[1])
	var nl *leader.NotLeaderError
	require.ErrorAs(t, err, &nl)
	require.Equal(t, "0", nl.LeaderID)
	_, err = c.svcs[1].Propose(ctx, &raftfsm.Command{Policy: &raftfsm.PolicyCommand{Action: raftfsm.PolicyClear, Tenant: "acme"}})
	require.ErrorAs(t, err, &nl)

	// The next leader reads the same policies; every replica holds them.
	c.ChangeLeader(t)
	var next *leader.Service
	for _, s := range c.svcs {
		if _, err := s.Read(ctx); err == nil {
			next = s
		}
	}
	require.NotNil(t, next)
	again, err := readPolicies(ctx, next)
	require.NoError(t, err)
	require.Equal(t, ps, again)
	c.Settle(t)
	for i, s := range c.svcs {
		require.Equal(t, ps, s.FSM().Policies(), "replica %d", i)
	}

	// Clearing is idempotent: the second clear changes nothing.
	res, err = next.Propose(ctx, &raftfsm.Command{Policy: &raftfsm.PolicyCommand{Action: raftfsm.PolicyClear, Tenant: "acme"}})
	require.NoError(t, err)
	require.Equal(t, 1, res.Count)
	res, err = next.Propose(ctx, &raftfsm.Command{Policy: &raftfsm.PolicyCommand{Action: raftfsm.PolicyClear, Tenant: "acme"}})
	require.NoError(t, err)
	require.Equal(t, 0, res.Count)
	ps, err = readPolicies(ctx, next)
	require.NoError(t, err)
	require.Empty(t, ps.Tenants)
}

// readPolicies reads the policies in force through the service's
// linearizable read.
func readPolicies(ctx context.Context, svc *leader.Service) (raftfsm.Policies, error) {
	f, err := svc.Read(ctx)
	if err != nil {
		return raftfsm.Policies{}, err
	}
	return f.Policies(), nil
}
