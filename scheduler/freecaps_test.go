package scheduler_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/scheduler"
)

// TestFreeCaps: a schedule with FreeCaps that ends capped tenants' jobs
// (complete, fail, release) assigns their waiting jobs in the same
// schedule, up to the caps: every change applies (no assignment is
// refused at the cap), no tenant or shard ends above its cap, and a
// tenant with a tenant-wide cap only is left below it only when none of
// its jobs is left to assign. Without FreeCaps the schedule assigns none
// of a tenant that was at its cap. After each entry the holds of every
// job, and the indexes, are those of the counts: jobs added while their
// tenant was below its cap in the entry are held if the entry filled it.
func TestFreeCaps(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, err := scheduler.New(testConfig())
		require.NoError(t, err)
		idx, now := uint64(0), t0
		apply := func(u ck.PlanUpdate) {
			idx++
			tx := s.Begin(ck.Entry{Index: idx, Term: 1, Time: now}, now, 0)
			for i := range u.Changes {
				r := tx.Apply(&u.Changes[i])
				require.True(t, r.Applied, "change %d (%s %s): %s", i, u.Changes[i].Kind, u.Changes[i].Job, r.Why())
			}
			require.NoError(t, scheduler.CheckDerived(s))
		}
		tenants := []string{"a", "b"}
		pols := map[string]scheduler.Limits{}
		for _, tenant := range tenants {
			p := scheduler.Limits{Rank: rapid.Uint8Range(0, 1).Draw(t, "rank"), MaxInProgress: rapid.Uint32Range(1, 3).Draw(t, "cap")}
			if rapid.Bool().Draw(t, "shardCap") {
				p.MaxPerShard = 1
			}
			pols[tenant] = p
			s.SetLimits(tenant, &p)
		}
		sc := s.Schedule(now)
		for i := range rapid.IntRange(1, 12).Draw(t, "jobs") {
			tenant := rapid.SampledFrom(tenants).Draw(t, "tenant")
			p := ck.JobPlan{Name: fmt.Sprintf("%s-%02d", tenant, i), Tenant: tenant, Level: rapid.Uint32Range(0, 1).Draw(t, "level"),
				Shard: rapid.Uint32Range(1, 2).Draw(t, "shard")}
			p.Sources = []string{p.Name + "/src"}
			require.True(t, sc.AddJob(p))
		}
		for range rapid.IntRange(0, 6).Draw(t, "assigned") {
			sc.AssignJob("w1")
		}
		apply(sc.Update())

		free := rapid.Bool().Draw(t, "freeCaps")
		sc = s.Schedule(now)
		if free {
			sc.FreeCaps()
		}
		capped := map[string]bool{}
		for _, tenant := range tenants {
			capped[tenant] = sc.Held(tenant, 0)
		}
		reported := map[string]bool{}
		jobs, _ := s.List(scheduler.Filter{Status: ck.StatusInProgress}, "", 0)
		for _, js := range jobs {
			status := rapid.SampledFrom([]ck.ReportStatus{ck.ReportInProgress, ck.ReportSuccess, ck.ReportFailure, ck.ReportReleased}).Draw(t, "report")
			u := ck.StatusUpdate{Job: js.Name, Token: js.Token, Status: status}
			if status == ck.ReportSuccess {
				u.Outputs = []ck.BlockMeta{{ID: js.Name + "-out", Tenant: js.Tenant, Level: js.Level + 1}}
			}
			require.True(t, sc.UpdateJob("w1", &u))
			reported[js.Name] = true
		}
		// New jobs after the updates: added while their tenant may be
		// below its cap in the entry, which the assignments that follow
		// may fill again.
		for i := range rapid.IntRange(0, 3).Draw(t, "added") {
			tenant := rapid.SampledFrom(tenants).Draw(t, "tenant")
			p := ck.JobPlan{Name: fmt.Sprintf("%s-new-%d", tenant, i), Tenant: tenant, Shard: rapid.Uint32Range(1, 2).Draw(t, "shard")}
			p.Sources = []string{p.Name + "/src"}
			sc.AddJob(p)
		}
		assigned := map[string]int{}
		for sc.AssignJob("w2") {
		}
		u := sc.Update()
		for _, c := range u.Changes {
			if c.Kind == ck.ChangeAssign {
				js, _, _ := s.Job(c.Job)
				assigned[js.Tenant]++
			}
		}
		apply(u)

		for _, tenant := range tenants {
			p := pols[tenant]
			tf := tenant
			inProgress, _ := s.List(scheduler.Filter{Tenant: &tf, Status: ck.StatusInProgress}, "", 0)
			require.LessOrEqual(t, len(inProgress), int(p.MaxInProgress), "tenant %s above its cap", tenant)
			perShard := map[uint32]int{}
			for _, js := range inProgress {
				_, plan, _ := s.Job(js.Name)
				perShard[plan.Shard]++
				if p.MaxPerShard > 0 {
					require.LessOrEqual(t, perShard[plan.Shard], int(p.MaxPerShard), "tenant %s shard %d above its cap", tenant, plan.Shard)
				}
			}
			if !free && capped[tenant] {
				require.Zero(t, assigned[tenant], "tenant %s was at its cap", tenant)
			}
			if free && p.MaxPerShard == 0 && len(inProgress) < int(p.MaxInProgress) {
				waiting, _ := s.List(scheduler.Filter{Tenant: &tf, Status: ck.StatusUnassigned}, "", 0)
				for _, js := range waiting {
					require.True(t, reported[js.Name], "tenant %s below its cap (%d of %d) with %s waiting", tenant, len(inProgress), p.MaxInProgress, js.Name)
				}
			}
		}
	})
}

// capOfOne returns a scheduler whose tenant "a" has a cap of one job in
// progress, a function that applies an update as the next entry (every
// change must apply, and the derived state must be right after it), and
// one that returns a plan of tenant a.
func capOfOne(t *testing.T) (*scheduler.Scheduler, func(ck.PlanUpdate), func(string) ck.JobPlan) {
	s, err := scheduler.New(testConfig())
	require.NoError(t, err)
	s.SetLimits("a", &scheduler.Limits{MaxInProgress: 1})
	idx := uint64(0)
	apply := func(u ck.PlanUpdate) {
		t.Helper()
		idx++
		tx := s.Begin(ck.Entry{Index: idx, Term: 1, Time: t0}, t0, 0)
		for i := range u.Changes {
			r := tx.Apply(&u.Changes[i])
			require.True(t, r.Applied, "change %d (%s %s): %s", i, u.Changes[i].Kind, u.Changes[i].Job, r.Why())
		}
		require.NoError(t, scheduler.CheckDerived(s))
	}
	plan := func(name string) ck.JobPlan {
		return ck.JobPlan{Name: name, Tenant: "a", Sources: []string{name + "/src"}}
	}
	return s, apply, plan
}

// TestFreeCapsJobAddedAtCap: a job added while its tenant is at its cap
// waits for the cap; a schedule with FreeCaps that completes the job in
// progress assigns the waiting one in the same schedule.
func TestFreeCapsJobAddedAtCap(t *testing.T) {
	s, apply, plan := capOfOne(t)

	sc := s.Schedule(t0)
	require.True(t, sc.AddJob(plan("a-1")))
	require.True(t, sc.AssignJob("w1"))
	apply(sc.Update())
	sc = s.Schedule(t0)
	require.True(t, sc.AddJob(plan("a-2")))
	require.False(t, sc.AssignJob("w1"), "tenant a is at its cap")
	apply(sc.Update())

	first, _, ok := s.Job("a-1")
	require.True(t, ok)
	sc = s.Schedule(t0).FreeCaps()
	require.True(t, sc.UpdateJob("w1", &ck.StatusUpdate{Job: "a-1", Token: first.Token, Status: ck.ReportSuccess,
		Outputs: []ck.BlockMeta{{ID: "a-1-out", Tenant: "a", Level: 1}}}))
	require.True(t, sc.AssignJob("w2"), "the job that waited for the cap")
	apply(sc.Update())
	second, _, ok := s.Job("a-2")
	require.True(t, ok)
	require.Equal(t, ck.StatusInProgress, second.Status)
	require.Equal(t, "w2", second.Worker)
}

// TestFreeCapsAssignsInOrder: the job a schedule with FreeCaps gives for a
// freed cap is the tenant's first held job in the order of its level —
// fewer failures first, then deadline, then name — not the first by name.
func TestFreeCapsAssignsInOrder(t *testing.T) {
	s, apply, plan := capOfOne(t)
	report := func(sc *scheduler.Schedule, name string, status ck.ReportStatus) {
		t.Helper()
		js, _, ok := s.Job(name)
		require.True(t, ok)
		u := ck.StatusUpdate{Job: name, Token: js.Token, Status: status}
		if status == ck.ReportSuccess {
			u.Outputs = []ck.BlockMeta{{ID: name + "-out", Tenant: "a", Level: 1}}
		}
		require.True(t, sc.UpdateJob("w1", &u))
	}
	assigned := func(u ck.PlanUpdate) []string {
		var out []string
		for _, c := range u.Changes {
			if c.Kind == ck.ChangeAssign {
				out = append(out, c.Job)
			}
		}
		return out
	}

	// a-2 runs and fails once; a-3 runs; a-4 waits behind the cap.
	sc := s.Schedule(t0)
	require.True(t, sc.AddJob(plan("a-2")))
	require.True(t, sc.AddJob(plan("a-3")))
	require.True(t, sc.AssignJob("w1"))
	u := sc.Update()
	require.Equal(t, []string{"a-2"}, assigned(u))
	apply(u)
	sc = s.Schedule(t0)
	report(sc, "a-2", ck.ReportFailure)
	apply(sc.Update())
	sc = s.Schedule(t0)
	require.True(t, sc.AddJob(plan("a-4")))
	require.True(t, sc.AssignJob("w1"))
	u = sc.Update()
	require.Equal(t, []string{"a-3"}, assigned(u), "fewer failures first")
	apply(u)

	// Completing a-3 frees the cap for a-4 (no failure), ahead of a-2.
	sc = s.Schedule(t0).FreeCaps()
	report(sc, "a-3", ck.ReportSuccess)
	for sc.AssignJob("w1") {
	}
	u = sc.Update()
	require.Equal(t, []string{"a-4"}, assigned(u), "the held job with fewer failures, then the cap again")
	apply(u)
}
