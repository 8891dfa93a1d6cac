package planner_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/compactkit/compactkit/planner"
)

// TestTenantLoad: a tenant's backlog sums its keys' blocks and debt, as
// the per-tenant statistics do, over its shards or some of them; Queued
// finds blocks by arrival time; holds are reported per tenant.
func TestTenantLoad(t *testing.T) {
	f := newFixture(t, planner.DefaultConfig())
	start := f.now
	f.add("A", 0, 0, 3)
	f.add("A", 1, 0, 2)
	f.add("B", 0, 0, 4)
	now := start + int64(10*time.Second)
	l := f.p.Load("A", now)
	require.Equal(t, int64(5), l.Blocks)
	var debt int64
	var blocks int
	for _, ts := range f.p.Tenants(now) {
		if ts.Tenant == "A" {
			debt += ts.Debt
			blocks += ts.Queued
		}
	}
	require.Equal(t, int64(blocks), l.Blocks)
	require.Equal(t, debt, l.Debt, "the same debt as the per-tenant statistics")
	require.Positive(t, l.Debt)
	require.Equal(t, []uint32{0, 1}, l.Shards)
	require.Equal(t, planner.Load{}, f.p.Load("nobody", now))
	one := f.p.Load("A", now, 1)
	require.Equal(t, int64(2), one.Blocks)
	require.Equal(t, []uint32{1}, one.Shards)
	both := f.p.Load("A", now, 1, 0, 7)
	require.Equal(t, l.Blocks, both.Blocks)
	require.Equal(t, l.Debt, both.Debt)
	require.Equal(t, []uint32{1, 0}, both.Shards, "in the order asked")

	require.True(t, f.p.Queued(planner.Force{Tenant: "A", Before: f.now}))
	require.False(t, f.p.Queued(planner.Force{Tenant: "A", Level: 1, Before: f.now}), "nothing at level 1")
	require.False(t, f.p.Queued(planner.Force{Tenant: "A", AllLevels: true, Before: start - 1}), "nothing arrived that early")
	require.True(t, f.p.Queued(planner.Force{AllTenants: true, AllLevels: true, Before: f.now}))
	require.False(t, f.p.Queued(planner.Force{Tenant: "C", AllLevels: true, Before: f.now}))

	require.False(t, allHeld(f.p, "A"))
	f.p.SetHold("B", true, levelsHeld(f.p, "B"))
	f.p.SetHold("A", true, 1<<2)
	for tn, want := range map[string]bool{"A": true, "B": true, "C": false} {
		all, levels := f.p.Hold(tn)
		require.Equal(t, want, all, tn)
		require.Equal(t, map[string]uint64{"A": 1 << 2}[tn], levels, tn)
	}
}

// TestTenantsLagAndDebt: the per-tenant statistics sum to the per-level
// ones.
func TestTenantsLagAndDebt(t *testing.T) {
	f := newFixture(t, planner.DefaultConfig())
	f.add("t2", 0, 0, 2)
	f.advance(10 * time.Second)
	f.add("t1", 0, 0, 1)
	f.add("t1", 1, 0, 3)
	f.advance(5 * time.Second)
	f.add("t1", 0, 1, 1) // level 1; the planner's clock is now t0+15s
	got := f.p.Tenants(0)
	require.Len(t, got, 3)
	require.Equal(t, "t1", got[0].Tenant)
	require.Equal(t, uint32(0), got[0].Level)
	require.Equal(t, 4, got[0].Queued)
	require.Equal(t, 5*time.Second, got[0].Lag)
	require.Equal(t, int64(4*5), got[0].Debt)
	require.Equal(t, uint32(1), got[1].Level)
	require.Equal(t, time.Duration(0), got[1].Lag)
	require.Equal(t, "t2", got[2].Tenant)
	require.Equal(t, 2, got[2].Queued)
	require.Equal(t, 15*time.Second, got[2].Lag)
	require.Equal(t, int64(2*15), got[2].Debt)
	// The per-level figures are the sums.
	st := f.p.Stats(0)
	require.Equal(t, got[0].Debt+got[2].Debt, st.Levels[0].Debt)
}

// TestStatsAtLaterTime: the figures are judged at the time asked, never
// before the planner's own.
func TestStatsAtLaterTime(t *testing.T) {
	f := newFixture(t, planner.DefaultConfig())
	f.add("t1", 0, 0, 2)
	later := f.now + int64(7*time.Second)
	st := f.p.Stats(later)
	require.Equal(t, later, st.Now)
	require.Equal(t, 7*time.Second, st.Levels[0].Lag)
	require.Equal(t, int64(2*7), st.Levels[0].Debt)
	require.Equal(t, 7*time.Second, f.p.Tenants(later)[0].Lag)
	// An earlier time never moves the planner's figures back.
	require.Equal(t, f.p.Stats(0), f.p.Stats(0))
}
