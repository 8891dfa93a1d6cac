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
