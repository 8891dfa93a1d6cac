package scheduler_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/scheduler"
)

func TestApplySameEntryTwiceChangesNothing(t *testing.T) {
	h := newHarness(t, testConfig())
	h.add(plans("j", "t", 0, 3)...)
	h.assign("w", 1)
	sc := h.s.Schedule(h.now)
	r := h.report("j-00", ck.ReportSuccess)
	require.True(t, sc.UpdateJob("w", &r))
	require.True(t, sc.AssignJob("w"))
	require.True(t, sc.AddJob(plan("new", "t", 0)))
	require.True(t, sc.AssignJob("w"))
	u := sc.Update()
	u.Changes = append(u.Changes, ck.Change{Kind: ck.ChangeCancel, Job: "new"}) // add then cancel in one entry

	e := h.entry()
	tx := h.s.Begin(e, h.now, 0)
	for i := range u.Changes {
		require.True(t, tx.Apply(&u.Changes[i]).Applied, "change %d", i)
	}
	before := snapshot(t, h.s)
	tx = h.s.Begin(e, h.now, 0)
	for i := range u.Changes {
		r := tx.Apply(&u.Changes[i])
		require.False(t, r.Applied)
		require.Equal(t, scheduler.SkippedStaleEntry, r.Reason)
		require.Contains(t, r.Detail, "already applied")
	}
	require.Equal(t, before, snapshot(t, h.s), "not even a counter moved")

	// An older entry, or index 0, is refused the same way.
	for _, idx := range []uint64{e.Index - 1, 0} {
		tx = h.s.Begin(ck.Entry{Index: idx}, h.now, 0)
		require.False(t, tx.Apply(&u.Changes[0]).Applied)
	}
	require.Equal(t, before, snapshot(t, h.s))
}

// Two polls prepared on the same view never give one job to two workers,
// whichever is applied first.
func TestTwoSchedulesFromOneView(t *testing.T) {
	for _, firstA := range []bool{true, false} {
		t.Run(fmt.Sprintf("a-first=%t", firstA), func(t *testing.T) {
			h := newHarness(t, testConfig())
			h.add(plans("j", "t", 0, 3)...)
			a, b := h.s.Schedule(h.now), h.s.Schedule(h.now)
			for range 2 {
				require.True(t, a.AssignJob("wa"))
				require.True(t, b.AssignJob("wb"))
			}
			require.True(t, a.AddJob(plan("new", "t", 0)))
			require.True(t, b.AddJob(plan("new", "t", 0)))
			require.True(t, a.AssignJob("wa"))
			require.True(t, b.AssignJob("wb"))
			ua, ub := a.Update(), b.Update()
			require.Equal(t, kinds(ua), kinds(ub), "same view, same decisions")
			if !firstA {
				ua, ub = ub, ua
			}
			h.applyAll(ua)
			rs := h.apply(ub)
			for i, r := range rs {
				require.False(t, r.Applied, "change %d of the second update", i)
			}
			require.Equal(t, uint64(len(ub.Changes)), h.s.Stats().Counters.Skipped)
			holders := map[string]string{}
			for _, st := range listAll(h.s) {
				if st.Status == ck.StatusInProgress {
					holders[st.Name] = st.Worker
				}
			}
			require.Len(t, holders, 3)
		})
	}
}

func listAll(s *scheduler.Scheduler) []ck.JobState {
	var out []ck.JobState
	cursor := ""
	for {
		page, next := s.List(scheduler.Filter{}, cursor, 7)
		out = append(out, page...)
		if next == "" {
			return out
		}
		cursor = next
	}
}

func TestCompletedJobIsRememberedThenForgotten(t *testing.T) {
	cfg := testConfig()
	cfg.CompletedRetention = time.Minute
	h := newHarness(t, cfg)
	h.add(plan("j", "t", 0))
	h.assign("w", 1)
	success := h.report("j", ck.ReportSuccess)
	u, rs := h.poll("w", []ck.StatusUpdate{success}, 0)
	require.Equal(t, []string{"complete:j"}, kinds(u))
	require.Equal(t, success.Outputs, u.Changes[0].Outputs)
	require.Zero(t, rs[0].After)
	require.Zero(t, rs[0].PrevToken, "a committed attempt leaves no orphans")
	require.NotNil(t, rs[0].Plan)
	_, _, ok := h.s.Job("j")
	require.False(t, ok)

	// A repeated report: no change, and the answer is "completed".
	sc := h.s.Schedule(h.now)
	require.False(t, sc.UpdateJob("w", &success))
	tok, ok := sc.CompletedToken("j")
	require.True(t, ok)
	require.Equal(t, success.Token, tok)
	tok, ok = h.s.CompletedToken("j")
	require.True(t, ok)
	require.Equal(t, success.Token, tok)

	// A completed job never reappears while it is remembered.
	require.False(t, sc.AddJob(plan("j", "t", 0)))
	add := ck.Change{Kind: ck.ChangeAdd, Job: "j", Plan: &ck.JobPlan{Name: "j", Sources: []string{"x"}}}
	rs = h.apply(ck.PlanUpdate{Changes: []ck.Change{add}})
	require.False(t, rs[0].Applied)

	h.advance(time.Minute)
	require.Zero(t, h.s.Expire(h.now), "exactly the retention: still remembered")
	h.advance(1)
	require.Equal(t, 1, h.s.Expire(h.now))
	_, ok = h.s.CompletedToken("j")
	require.False(t, ok)
	require.Zero(t, h.s.Stats().Completed)
}

func TestLevelOrder(t *testing.T) {
	h := newHarness(t, testConfig())
	h.add(plan("c2", "t", 2), plan("b1", "t", 1), plan("a1", "t", 1), plan("z0", "t", 0))
	require.Equal(t, []string{"z0", "a1", "b1", "c2"}, h.assign("w", 10))

	// Within a level: fewer failures first, then earlier deadline, then
	// name; unassigned before expired.
	h2 := newHarness(t, testConfig())
	h2.add(plan("a", "t", 0), plan("b", "t", 0), plan("c", "t", 0), plan("d", "t", 1))
	h2.assign("w", 1) // a
	h2.poll("w", []ck.StatusUpdate{h2.report("a", ck.ReportFailure)}, 0)
	h2.advance(time.Second)
	require.Equal(t, []string{"b"}, h2.assign("w", 1))
	h2.advance(time.Second)
	require.Equal(t, []string{"c"}, h2.assign("w", 1))
	h2.poll("w", []ck.StatusUpdate{h2.report("b", ck.ReportReleased), h2.report("c", ck.ReportReleased)}, 0)
	// Unassigned at level 0: b (0 failures, deadline t+1s+15s), c (0, later), a (1 failure).
	require.Equal(t, []string{"b", "c", "a"}, h2.assign("w2", 3))
	h2.advance(testConfig().LeaseDuration + time.Second)
	// All three expired; the level-0 expired jobs come before level 1's
	// unassigned job, in failure then deadline order.
	_, rs := h2.poll("w3", nil, 4)
	var got []string
	for _, r := range rs {
		got = append(got, fmt.Sprintf("%s/%d", r.After.Name, r.After.Failures))
	}
	require.Equal(t, []string{"b/1", "c/1", "a/2", "d/0"}, got)
}

func TestAging(t *testing.T) {
	cfg := testConfig()
	cfg.AgingThreshold = []time.Duration{0, 0, time.Minute, 2 * time.Minute} // level 1 never ages
	cfg.LeaseDuration = 24 * time.Hour
	h := newHarness(t, cfg)
	h.add(plan("old1", "t", 1), plan("old2", "t", 2), plan("old5", "t", 5))
	h.advance(time.Minute - 1)
	h.add(plans("zero", "t", 0, 5)...)
	require.Equal(t, []string{"zero-00"}, h.assign("w", 1), "not aged yet")
	h.advance(1)
	require.Equal(t, []string{"zero-01"}, h.assign("w", 1), "old2 waited exactly its threshold, not longer")
	h.advance(1)
	// old2 waited longer than its threshold: it competes as level 0 (and
	// wins on name against "zero-*"); old5 (threshold 2 min) and old1
	// (never) do not.
	require.Equal(t, []string{"old2", "zero-02"}, h.assign("w", 2))
	h.advance(time.Minute)
	require.Equal(t, []string{"old5", "zero-03", "zero-04", "old1"}, h.assign("w", 10))

	// Aged jobs of a level enter level 0 oldest first.
	h = newHarness(t, cfg)
	h.add(plan("b", "t", 2))
	h.advance(time.Second)
	h.add(plan("a", "t", 2))
	h.advance(time.Hour)
	h.add(plan("z", "t", 0))
	require.Equal(t, []string{"b", "a", "z"}, h.assign("w", 3), "b is older than a; aged b competes with z by name")
}

func TestTwoCommitTokens(t *testing.T) {
	h := newHarness(t, testConfig())
	sc := h.s.Schedule(h.now)
	require.True(t, sc.AddJob(plan("j", "t", 0)))
	require.True(t, sc.AssignJob("w"))
	u := sc.Update()
	prepare := h.entry() // the prepare entry, committed first
	u.TokenIndex = prepare.Index
	rs := h.applyAll(u)
	require.Equal(t, fencing.Token(prepare.Index), rs[0].After.Token, "a new job gets the prepare entry's index")
	require.Equal(t, fencing.Token(prepare.Index), rs[1].After.Token)
	require.Equal(t, h.idx, rs[1].After.Version, "versions are the applying entry's index")

	// A token index after the entry is refused.
	tx := h.s.Begin(ck.Entry{Index: h.idx + 1}, h.now, h.idx+5)
	r := tx.Apply(&ck.Change{Kind: ck.ChangeCancel, Job: "j"})
	require.False(t, r.Applied)
	require.Equal(t, scheduler.SkippedStaleEntry, r.Reason)
	require.Contains(t, r.Detail, "after entry")
}

func TestAssignmentTokensGrow(t *testing.T) {
	h := newHarness(t, testConfig())
	h.add(plan("j", "t", 0))
	h.assign("w", 1)
	tok := h.job("j").Token
	h.poll("w", []ck.StatusUpdate{h.report("j", ck.ReportReleased)}, 0)
	// An assignment in two-commit mode whose prepare entry is older than
	// the last assignment: its token would not be newer.
	v := h.job("j").Version
	rs := h.apply(ck.PlanUpdate{TokenIndex: uint64(tok), Changes: []ck.Change{{Kind: ck.ChangeAssign, Job: "j", Version: v, Worker: "w2"}}})
	require.False(t, rs[0].Applied)
	require.Equal(t, scheduler.SkippedTokenNotNewer, rs[0].Reason)
}

func TestStaleChangesAreSkippedAndCounted(t *testing.T) {
	h := newHarness(t, testConfig())
	h.add(plans("j", "t", 0, 2)...)
	h.assign("w", 2)
	// Prepared on a view, then the job moves on before the update applies.
	sc := h.s.Schedule(h.now)
	r0 := h.report("j-00", ck.ReportInProgress)
	require.True(t, sc.UpdateJob("w", &r0))
	r1 := h.report("j-01", ck.ReportInProgress)
	require.True(t, sc.UpdateJob("w", &r1))
	stale := sc.Update()
	h.poll("w", []ck.StatusUpdate{h.report("j-00", ck.ReportReleased)}, 0)

	rs := h.apply(stale)
	require.False(t, rs[0].Applied)
	require.Equal(t, scheduler.SkippedStaleVersion, rs[0].Reason)
	require.Equal(t, ck.StatusUnassigned, rs[0].Before.Status)
	require.True(t, rs[1].Applied, "the other change still applies")
	require.Equal(t, uint64(1), h.s.Stats().Counters.Skipped)

	// Wrong token, wrong status, unknown job, unknown kind: skipped.
	v := h.job("j-01").Version
	for _, tc := range []struct {
		c    ck.Change
		want scheduler.Skip
	}{
		{ck.Change{Kind: ck.ChangeRenew, Job: "j-01", Version: v, Token: 999}, scheduler.SkippedNoLease},
		{ck.Change{Kind: ck.ChangeExclude, Job: "j-01", Version: v}, scheduler.SkippedNoExpiredLease},
		{ck.Change{Kind: ck.ChangeEvict, Job: "j-01", Version: v}, scheduler.SkippedNotExcluded},
		{ck.Change{Kind: ck.ChangeAssign, Job: "j-01", Version: v, Worker: "w"}, scheduler.SkippedLeaseNotExpired},
		{ck.Change{Kind: ck.ChangeRenew, Job: "nope", Token: 1}, scheduler.SkippedUnknownJob},
		{ck.Change{Kind: ck.ChangeKind(99), Job: "j-01", Version: v}, scheduler.SkippedInvalid},
		{ck.Change{Kind: ck.ChangeAdd, Job: "x", Plan: &ck.JobPlan{Name: "y"}}, scheduler.SkippedInvalid},
	} {
		rs := h.apply(ck.PlanUpdate{Changes: []ck.Change{tc.c}})
		require.False(t, rs[0].Applied, "%s", tc.c.Kind)
		require.Equal(t, tc.want, rs[0].Reason, "%s: %s", tc.c.Kind, rs[0].Why())
	}
	require.Equal(t, uint64(8), h.s.Stats().Counters.Skipped)
}

// Several changes of one entry may touch one job; each is checked against
// the version from before the entry.
func TestSeveralChangesToOneJobInOneEntry(t *testing.T) {
	h := newHarness(t, testConfig())
	h.add(plan("j", "t", 0))
	h.assign("w1", 1)
	st := h.job("j")
	u := ck.PlanUpdate{Changes: []ck.Change{
		{Kind: ck.ChangeFail, Job: "j", Version: st.Version, Token: st.Token, Worker: "w1"},
		{Kind: ck.ChangeAssign, Job: "j", Version: st.Version, Worker: "w2"},
		{Kind: ck.ChangeRenew, Job: "j", Version: st.Version + 100, Token: st.Token},
	}}
	rs := h.apply(u)
	require.True(t, rs[0].Applied)
	require.True(t, rs[1].Applied, "fail then assign")
	require.False(t, rs[2].Applied)
	require.Equal(t, fencing.Token(h.idx), rs[1].After.Token)
	require.Equal(t, "w2", rs[1].After.Worker)
	require.Equal(t, uint32(1), rs[1].After.Failures)

	// Complete then add again in one entry: the add is stale (the job
	// existed before the entry), and the name is remembered anyway.
	st = h.job("j")
	rs = h.apply(ck.PlanUpdate{Changes: []ck.Change{
		{Kind: ck.ChangeComplete, Job: "j", Version: st.Version, Token: st.Token},
		{Kind: ck.ChangeAdd, Job: "j", Plan: &ck.JobPlan{Name: "j", Sources: []string{"s"}}},
	}})
	require.True(t, rs[0].Applied)
	require.False(t, rs[1].Applied)
}

func TestCancel(t *testing.T) {
	h := newHarness(t, testConfig())
	h.add(plans("j", "t", 0, 2)...)
	h.assign("w", 1)
	tok := h.job("j-00").Token
	r, err := h.s.Cancel(h.entry(), h.now, "j-00")
	require.NoError(t, err)
	require.True(t, r.Applied)
	require.Equal(t, ck.ChangeCancel, r.Kind)
	require.Equal(t, tok, r.PrevToken, "the running attempt's outputs become orphans")
	require.Equal(t, "j-00", r.Plan.Name, "the plan, so the planner re-queues the sources")
	require.False(t, h.owns("j-00", tok))

	r, err = h.s.Cancel(h.entry(), h.now, "j-01")
	require.NoError(t, err)
	require.Zero(t, r.PrevToken, "never started")
	_, err = h.s.Cancel(h.entry(), h.now, "j-01")
	require.ErrorIs(t, err, scheduler.ErrUnknownJob)
	require.Zero(t, h.s.Len())
	require.Equal(t, uint64(2), h.s.Stats().Counters.Cancelled)
}

func TestListAndStats(t *testing.T) {
	h := newHarness(t, testConfig())
	var all []ck.JobPlan
	for _, tenant := range []string{"", "a", "b/c"} {
		for level := range uint32(3) {
			all = append(all, plans(fmt.Sprintf("%s%d", map[string]string{"": "m", "a": "a", "b/c": "b"}[tenant], level), tenant, level, 3)...)
		}
	}
	h.add(all...)
	h.assign("w", 4)

	jobs := listAll(h.s)
	require.Len(t, jobs, len(all))
	for i := 1; i < len(jobs); i++ {
		p, c := jobs[i-1], jobs[i]
		require.True(t, p.Tenant < c.Tenant || p.Tenant == c.Tenant && (p.Level < c.Level || p.Level == c.Level && p.Name < c.Name), "order at %d", i)
	}

	collect := func(f scheduler.Filter, limit int) []string {
		var names []string
		cursor := ""
		for {
			page, next := h.s.List(f, cursor, limit)
			require.LessOrEqual(t, len(page), max(limit, 1))
			for _, st := range page {
				names = append(names, st.Name)
			}
			if next == "" {
				return names
			}
			cursor = next
		}
	}
	tenant, level := "b/c", uint32(1)
	require.Equal(t, []string{"b1-00", "b1-01", "b1-02"}, collect(scheduler.Filter{Tenant: &tenant, Level: &level}, 2))
	require.Len(t, collect(scheduler.Filter{Tenant: &tenant}, 4), 9)
	require.Equal(t, []string{"m1-00", "m1-01", "m1-02", "a1-00", "a1-01", "a1-02", "b1-00", "b1-01", "b1-02"}, collect(scheduler.Filter{Level: &level}, 2))
	// Assigned by name ("a0-*" < "b0-*" < "m0-*"), listed by tenant.
	require.Equal(t, []string{"a0-00", "a0-01", "a0-02", "b0-00"}, collect(scheduler.Filter{Status: ck.StatusInProgress}, 3))
	empty := "zzz"
	require.Empty(t, collect(scheduler.Filter{Tenant: &empty}, 3))

	// A cursor is a position: jobs added and removed between pages do not
	// make a job present throughout appear twice or not at all.
	page, cursor := h.s.List(scheduler.Filter{}, "", 5)
	_, err := h.s.Cancel(h.entry(), h.now, page[4].Name)
	require.NoError(t, err)
	_, err = h.s.Cancel(h.entry(), h.now, "a2-02")
	require.NoError(t, err)
	h.add(plan("a0-000", "a", 0), plan("m0-000", "", 0))
	more, _ := h.s.List(scheduler.Filter{}, cursor, 1000)
	names := map[string]bool{}
	for _, st := range append(page[:4], more...) {
		require.False(t, names[st.Name], "%s twice", st.Name)
		names[st.Name] = true
	}
	require.Len(t, names, len(all)-2+1, "everything but the two cancelled, plus the job added after the cursor")

	_, next := h.s.List(scheduler.Filter{}, "garbage", 10)
	require.Empty(t, next)
	page, _ = h.s.List(scheduler.Filter{}, "", 0)
	require.Len(t, page, min(scheduler.DefaultListLimit, h.s.Len()))

	st := h.s.Stats()
	require.Equal(t, h.s.Len(), st.Jobs)
	require.Len(t, st.Levels, 3)
	total := 0
	for _, l := range st.Levels {
		total += l.Unassigned + l.InProgress + l.Excluded
	}
	require.Equal(t, st.Jobs, total)
	require.Equal(t, 4, st.Levels[0].InProgress)
	require.Equal(t, uint64(len(all)+2), st.Counters.Added)
	require.Equal(t, uint64(4), st.Counters.Assigned)
}

func TestConfig(t *testing.T) {
	require.NoError(t, scheduler.DefaultConfig().Validate())
	for name, mut := range map[string]func(*scheduler.Config){
		"lease":     func(c *scheduler.Config) { c.LeaseDuration = 0 },
		"queue":     func(c *scheduler.Config) { c.MaxQueueSize = -1 },
		"slots":     func(c *scheduler.Config) { c.MaxSlotsPerRequest = 0 },
		"aging":     func(c *scheduler.Config) { c.AgingThreshold = []time.Duration{0, -1} },
		"aging-len": func(c *scheduler.Config) { c.AgingThreshold = make([]time.Duration, 257) },
		"retention": func(c *scheduler.Config) { c.CompletedRetention = -1 },
	} {
		cfg := scheduler.DefaultConfig()
		mut(&cfg)
		require.ErrorIs(t, cfg.Validate(), scheduler.ErrInvalidConfig, name)
		_, err := scheduler.New(cfg)
		require.ErrorIs(t, err, scheduler.ErrInvalidConfig, name)
		s, _ := scheduler.New(scheduler.DefaultConfig())
		require.ErrorIs(t, s.SetConfig(cfg), scheduler.ErrInvalidConfig, name)
		require.Equal(t, scheduler.DefaultConfig(), s.Config(), "unchanged")
	}

	// The scheduler keeps its own copy.
	cfg := scheduler.DefaultConfig()
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	cfg.AgingThreshold[1] = time.Hour
	require.Equal(t, scheduler.DefaultConfig(), s.Config())
	got := s.Config()
	got.AgingThreshold[1] = time.Hour
	require.Equal(t, scheduler.DefaultConfig(), s.Config())

	cfg = scheduler.DefaultConfig()
	cfg.LeaseDuration = time.Minute
	require.NoError(t, s.SetConfig(cfg))
	require.Equal(t, time.Minute, s.Config().LeaseDuration)
}

// A schedule in use is not affected by entries applied after it was
// opened, and may be used on another goroutine meanwhile.
func TestScheduleIsAStableView(t *testing.T) {
	h := newHarness(t, testConfig())
	h.add(plans("j", "t", 0, 50)...)
	sc := h.s.Schedule(h.now)
	done := make(chan []string)
	go func() {
		var got []string
		for sc.AssignJob("w1") {
		}
		for _, c := range sc.Update().Changes {
			got = append(got, c.Job)
		}
		done <- got
	}()
	for range 10 {
		h.assign("w2", 3)
	}
	got := <-done
	require.Len(t, got, 50, "the view still sees 50 unassigned jobs")
}
