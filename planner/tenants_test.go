package planner_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/compactkit/compactkit/planner"
)

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
