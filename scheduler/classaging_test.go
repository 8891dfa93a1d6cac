package scheduler_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/scheduler"
)

// TestClassAgingAtLevel0: level 0 ages into no other level, so a waiting
// level-0 job of a lower class competes as the best class once it has
// waited level 1's aging threshold: a Low tenant's job does not wait
// behind a stream of High tenants' jobs for ever.
func TestClassAgingAtLevel0(t *testing.T) {
	cfg := scheduler.DefaultConfig()
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	s.SetTenantPolicy("low", scheduler.TenantPolicy{Rank: 2})
	s.SetTenantPolicy("high", scheduler.TenantPolicy{Rank: 0})
	t0 := int64(1_700_000_000_000_000_000)
	index := uint64(0)
	// add adds an unassigned level-0 job at time at.
	add := func(name, tenant string, at int64) {
		sc := s.Schedule(at)
		require.True(t, sc.AddJob(ck.JobPlan{Name: name, Tenant: tenant, Sources: []string{name + "-src"}}))
		index++
		tx := s.Begin(ck.Entry{Index: index, Time: at}, at, 0)
		for _, c := range sc.Update().Changes {
			require.True(t, tx.Apply(&c).Applied)
		}
	}
	// next returns the job one free slot gets at time at, without
	// applying it.
	next := func(at int64) string {
		sc := s.Schedule(at)
		require.True(t, sc.AssignJob("w"))
		ch := sc.Update().Changes
		return ch[len(ch)-1].Job
	}
	add("l", "low", t0)
	add("h1", "high", t0+int64(time.Second))
	require.Equal(t, "h1", next(t0+int64(time.Minute)), "the High job first")
	threshold := cfg.AgingThreshold[1]
	add("h2", "high", t0+int64(threshold))
	require.Equal(t, "h1", next(t0+int64(threshold)), "not aged yet: waited exactly the threshold")
	require.Equal(t, "l", next(t0+int64(threshold)+1), "aged: the Low job goes first")
}
