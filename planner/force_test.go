package planner_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/compactkit/compactkit/planner"
)

func forcing(fs ...planner.Force) *planner.PlanOptions { return &planner.PlanOptions{Force: fs} }

// TestForcePartialBatch: a partial, young batch is planned when forced and
// not otherwise, and the plan is admissible and claimed like any other.
func TestForcePartialBatch(t *testing.T) {
	f := newFixture(t, planner.DefaultConfig())
	ids := f.add("A", 0, 0, 3)
	_, ok := f.poll(nil)
	require.False(t, ok, "a young partial batch planned unforced")
	_, ok = f.poll(forcing(planner.Force{Tenant: "A", Level: 1, Before: f.now}))
	require.False(t, ok, "another level forced")
	_, ok = f.poll(forcing(planner.Force{Tenant: "B", Level: 0, Before: f.now}))
	require.False(t, ok, "another tenant forced")
	_, ok = f.poll(forcing(planner.Force{Tenant: "A", Level: 0, Before: f.now - 1}))
	require.False(t, ok, "a batch that arrived after Before forced")

	pl := f.mustPoll(forcing(planner.Force{Tenant: "A", Level: 0, Before: f.now}))
	require.Equal(t, ids, pl.Sources)
	claimed, ok := f.p.Claimed(pl.Name)
	require.True(t, ok, "a forced plan was not claimed")
	require.Equal(t, ids, claimed)
	require.Zero(t, f.p.Stats(0).Queued)
}

// TestForceBefore: only batches whose first block arrived at or before
// Before are forced; after a batch is planned, the key's next batch is
// forced on the same terms.
func TestForceBefore(t *testing.T) {
	cfg := planner.DefaultConfig()
	cfg.Levels[0].MaxBlocks = 3
	f := newFixture(t, cfg)
	before := f.now
	a := f.add("A", 0, 0, 4) // a full batch, then one block
	b := f.add("A", 2, 0, 3) // a full batch ...
	f.advance(time.Second)
	b = append(b, f.add("A", 2, 0, 1)...) // ... then a block that arrived after Before
	c := f.add("A", 1, 0, 2)              // arrived after Before

	plans := func(opts *planner.PlanOptions) [][]string {
		v := f.p.View()
		var got [][]string
		for {
			pl, ok := v.Next(f.now, opts)
			if !ok {
				return got
			}
			got = append(got, pl.Sources)
		}
	}
	require.Equal(t, [][]string{a[:3], b[:3]}, plans(nil))
	force := forcing(planner.Force{Tenant: "A", Level: 0, Before: before})
	// a's remainder is forced, and older than b's batch; b's remainder
	// and c arrived after Before.
	require.Equal(t, [][]string{a[:3], a[3:], b[:3]}, plans(force))
	force.Force[0].Before = f.now
	require.Equal(t, [][]string{a[:3], a[3:], b[:3], b[3:], c}, plans(force))
	// Of several matching entries, the latest Before counts.
	force.Force = []planner.Force{{Tenant: "A", Level: 0, Before: before}, {Tenant: "A", AllLevels: true, Before: f.now}}
	require.Equal(t, [][]string{a[:3], a[3:], b[:3], b[3:], c}, plans(force))
}

// TestForceAllTenantsAllLevels: one entry forces every tenant, every level,
// or both; forced batches compete at their own level.
func TestForceAllTenantsAllLevels(t *testing.T) {
	f := newFixture(t, planner.DefaultConfig())
	for _, tn := range []string{"", "A", "B"} {
		f.add(tn, 0, 0, 2)
		if tn != "" {
			f.add(tn, 0, 1, 2)
		}
	}
	now := f.now
	require.Empty(t, drain(t, f.p.View(), now, nil))
	require.Equal(t, []string{"/0/0", "A/0/0", "B/0/0", "A/0/1", "B/0/1"},
		drain(t, f.p.View(), now, forcing(planner.Force{AllTenants: true, AllLevels: true, Before: now})))
	require.Equal(t, []string{"A/0/1", "B/0/1"},
		drain(t, f.p.View(), now, forcing(planner.Force{AllTenants: true, Level: 1, Before: now})))
	require.Equal(t, []string{"A/0/0", "A/0/1"},
		drain(t, f.p.View(), now, forcing(planner.Force{Tenant: "A", AllLevels: true, Before: now})))
	require.Equal(t, []string{"/0/0"},
		drain(t, f.p.View(), now, forcing(planner.Force{Level: 0, Before: now})), "the empty tenant is the multi-tenant segments'")
	require.Equal(t, []string{"A/0/0", "B/0/0", "B/0/1"},
		drain(t, f.p.View(), now, forcing(planner.Force{Tenant: "B", AllLevels: true, Before: now}, planner.Force{Tenant: "A", Before: now})))

	// A forced batch of level 1 waits for level 0's ready batches.
	f.add("C", 0, 0, 20)
	require.Equal(t, []string{"C/0/0", "A/0/1"},
		drain(t, f.p.View(), now, forcing(planner.Force{Tenant: "A", Level: 1, Before: now})))
}

// TestForceInvalid: malformed entries are ignored by planning (see
// TestForceValidate for the checks).
func TestForceInvalid(t *testing.T) {
	f := newFixture(t, planner.DefaultConfig())
	f.add("A", 0, 0, 2)
	bad := forcing(planner.Force{Tenant: "A", AllTenants: true, AllLevels: true, Before: f.now})
	require.Empty(t, drain(t, f.p.View(), f.now, bad))
	bad = forcing(planner.Force{AllTenants: true, AllLevels: true, Before: f.now}, planner.Force{Tenant: "bad\x01", Before: f.now})
	require.Equal(t, []string{"A/0/0"}, drain(t, f.p.View(), f.now, bad), "a valid entry is ignored beside an invalid one")
	require.Equal(t, []string{"A/0/0"}, drain(t, f.p.View(), f.now, forcing(planner.Force{AllTenants: true, Before: f.now})))
}

// TestForceFairness: forced batches take their turn in the fairness
// rotation with the ready ones, within a view and across polls.
func TestForceFairness(t *testing.T) {
	f := newFixture(t, planner.DefaultConfig())
	f.add("A", 0, 0, 60) // three full batches
	f.add("B", 0, 0, 2)
	f.add("C", 0, 0, 3)
	f.add("D", 0, 0, 20) // full
	force := forcing(planner.Force{AllTenants: true, Level: 0, Before: f.now})
	require.Equal(t, []string{"A/0/0", "D/0/0", "A/0/0", "A/0/0"}, drain(t, f.p.View(), f.now, nil))
	require.Equal(t, []string{"A/0/0", "B/0/0", "C/0/0", "D/0/0", "A/0/0", "A/0/0"}, drain(t, f.p.View(), f.now, force))

	var got []string
	for _, opts := range []*planner.PlanOptions{nil, nil, force, force, force, force} {
		pl := f.mustPoll(opts)
		got = append(got, pl.Tenant)
	}
	// Unforced, D follows A; forced, the rotation wraps around to A, then
	// goes on with B and C.
	require.Equal(t, []string{"A", "D", "A", "B", "C", "A"}, got)
}

// TestForceHeldOrSkipped: held tenants and skipped keys are never forced.
func TestForceHeldOrSkipped(t *testing.T) {
	f := newFixture(t, planner.DefaultConfig())
	f.add("A", 0, 0, 2)
	f.add("B", 0, 1, 2)
	force := forcing(planner.Force{AllTenants: true, AllLevels: true, Before: f.now})
	f.p.SetHold("A", true, levelsHeld(f.p, "A"))
	require.Equal(t, []string{"B/0/1"}, drain(t, f.p.View(), f.now, force))
	force.Force = append(force.Force, planner.Force{Tenant: "A", Before: f.now})
	require.Equal(t, []string{"B/0/1"}, drain(t, f.p.View(), f.now, force))
	force.Skip = func(tenant string, level uint32) bool { return tenant == "B" && level == 1 }
	require.Empty(t, drain(t, f.p.View(), f.now, force))
	f.p.SetHold("A", false, levelsHeld(f.p, "A"))
	require.Equal(t, []string{"A/0/0"}, drain(t, f.p.View(), f.now, force))
}

// TestForceChangesBetweenCalls: each call of one view is judged with its
// own Force entries.
func TestForceChangesBetweenCalls(t *testing.T) {
	f := newFixture(t, planner.DefaultConfig())
	a := f.add("A", 0, 0, 2)
	b := f.add("B", 0, 0, 2)
	v := f.p.View()
	_, ok := v.Next(f.now, nil)
	require.False(t, ok)
	pl, ok := v.Next(f.now, forcing(planner.Force{Tenant: "B", Before: f.now}))
	require.True(t, ok)
	require.Equal(t, b, pl.Sources)
	_, ok = v.Next(f.now, nil)
	require.False(t, ok)
	_, ok = v.Next(f.now, forcing(planner.Force{Tenant: "B", Before: f.now}))
	require.False(t, ok, "a batch planned twice")
	pl, ok = v.Next(f.now, forcing(planner.Force{Tenant: "A", Before: f.now}))
	require.True(t, ok)
	require.Equal(t, a, pl.Sources)
}
