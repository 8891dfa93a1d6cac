package planner_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/compactkit/compactkit/planner"
)

// TestTenantLoad: a tenant's backlog sums its keys' blocks and debt, as
// the per-tenant statistics do; Queued finds blocks by arrival time; the
// held tenants are listed in order.
func TestTenantLoad(t *testing.T) {
	f := newFixture(t, planner.DefaultConfig())
	start := f.now
	f.add("A", 0, 0, 3)
	f.add("A", 1, 0, 2)
	f.add("B", 0, 0, 4)
	now := start + int64(10*time.Second)
	l := f.p.TenantLoad("A", now)
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
	require.Equal(t, planner.Load{}, f.p.TenantLoad("nobody", now))

	require.True(t, f.p.Queued(planner.Force{Tenant: "A", Before: f.now}))
	require.False(t, f.p.Queued(planner.Force{Tenant: "A", Level: 1, Before: f.now}), "nothing at level 1")
	require.False(t, f.p.Queued(planner.Force{Tenant: "A", AllLevels: true, Before: start - 1}), "nothing arrived that early")
	require.True(t, f.p.Queued(planner.Force{AllTenants: true, AllLevels: true, Before: f.now}))
	require.False(t, f.p.Queued(planner.Force{Tenant: "C", AllLevels: true, Before: f.now}))

	require.Empty(t, f.p.HeldTenants())
	f.p.SetHold("B", true, f.p.HeldLevels("B"))
	f.p.SetHold("A", true, f.p.HeldLevels("A"))
	require.Equal(t, []string{"A", "B"}, f.p.HeldTenants())
}
