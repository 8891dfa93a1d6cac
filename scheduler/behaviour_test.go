package scheduler_test

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/scheduler"
)

// The scheduler's scenarios are transcripts (transcript_test.go,
// testdata/transcripts). This file holds the harness that the package's
// tests drive a scheduler with, and the tests that are not scenarios: the
// configuration's validation and the schedule's isolation from other
// goroutines.

// t0 is the log time the tests start at.
const t0 = int64(1_700_000_000) * int64(time.Second)

// harness drives a scheduler the way the state machine does: prepare a poll
// on a schedule, then apply its update at the next entry.
type harness struct {
	t   testing.TB
	s   *scheduler.Scheduler
	idx uint64
	now int64
}

func newHarness(t testing.TB, cfg scheduler.Config) *harness {
	t.Helper()
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	return &harness{t: t, s: s, now: t0}
}

func (h *harness) advance(d time.Duration) { h.now += int64(d) }

// entry returns the next entry.
func (h *harness) entry() ck.Entry {
	h.idx++
	return ck.Entry{Index: h.idx, Term: 1, Time: h.now}
}

// apply applies u at the next entry and returns the results.
func (h *harness) apply(u ck.PlanUpdate) []scheduler.Result {
	h.t.Helper()
	tx := h.s.Begin(h.entry(), h.now, u.TokenIndex)
	out := make([]scheduler.Result, len(u.Changes))
	for i := range u.Changes {
		out[i] = tx.Apply(&u.Changes[i])
	}
	return out
}

// applyAll applies u and requires every change to apply.
func (h *harness) applyAll(u ck.PlanUpdate) []scheduler.Result {
	h.t.Helper()
	rs := h.apply(u)
	for i, r := range rs {
		require.True(h.t, r.Applied, "change %d (%s %s): %s", i, u.Changes[i].Kind, u.Changes[i].Job, r.Why())
	}
	return rs
}

// poll prepares a poll the way the state machine does — reports, then
// assignments up to the capped free slots, then additions (evicting to make
// room) — applies it and returns the update and results.
func (h *harness) poll(worker string, updates []ck.StatusUpdate, free int32, adds ...ck.JobPlan) (ck.PlanUpdate, []scheduler.Result) {
	h.t.Helper()
	sc := h.s.Schedule(h.now)
	for i := range updates {
		sc.UpdateJob(worker, &updates[i])
	}
	for range sc.Capacity(free) {
		if !sc.AssignJob(worker) {
			break
		}
	}
	for _, p := range adds {
		if !sc.AddJob(p) && sc.EvictJob() {
			sc.AddJob(p)
		}
	}
	u := sc.Update()
	return u, h.applyAll(u)
}

// add adds jobs in one entry.
func (h *harness) add(plans ...ck.JobPlan) {
	h.t.Helper()
	sc := h.s.Schedule(h.now)
	for _, p := range plans {
		require.True(h.t, sc.AddJob(p), "add %s", p.Name)
	}
	h.applyAll(sc.Update())
}

// assign assigns up to n jobs to worker in one poll and returns their names.
func (h *harness) assign(worker string, n int) []string {
	h.t.Helper()
	_, rs := h.poll(worker, nil, int32(n))
	var names []string
	for _, r := range rs {
		if r.Kind == ck.ChangeAssign {
			names = append(names, r.After.Name)
		}
	}
	return names
}

// report builds a status update with the job's current token.
func (h *harness) report(name string, status ck.ReportStatus) ck.StatusUpdate {
	h.t.Helper()
	st, _, ok := h.s.Job(name)
	require.True(h.t, ok, "job %s", name)
	u := ck.StatusUpdate{Job: name, Token: st.Token, Status: status}
	if status == ck.ReportSuccess {
		u.Outputs = []ck.BlockMeta{{ID: name + "-out", Tenant: "t", Level: st.Level + 1}}
	}
	return u
}

func (h *harness) job(name string) ck.JobState {
	h.t.Helper()
	st, _, ok := h.s.Job(name)
	require.True(h.t, ok, "job %s", name)
	return st
}

func snapshot(t require.TestingT, s *scheduler.Scheduler) []byte {
	var buf bytes.Buffer
	require.NoError(t, s.Snapshot(&buf))
	return buf.Bytes()
}

func plan(name, tenant string, level uint32) ck.JobPlan {
	return ck.JobPlan{Name: name, Tenant: tenant, Level: level, Shard: 1, Sources: []string{name + "/src-1", name + "/src-2"}}
}

func plans(prefix, tenant string, level uint32, n int) []ck.JobPlan {
	out := make([]ck.JobPlan, n)
	for i := range out {
		out[i] = plan(fmt.Sprintf("%s-%02d", prefix, i), tenant, level)
	}
	return out
}

// testConfig is the default configuration without aging.
func testConfig() scheduler.Config {
	cfg := scheduler.DefaultConfig()
	cfg.AgingThreshold = nil
	return cfg
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
	done := assignAllAsync(h.s.Schedule(h.now), nil)
	for range 10 {
		h.assign("w2", 3)
	}
	got := <-done
	require.Len(t, got, 50, "the view still sees 50 unassigned jobs")
}

// A schedule in use keeps the tenant policies of its view while the
// scheduler's change (setters, caps reached and released by Apply) on
// another goroutine.
func TestScheduleKeepsItsPolicies(t *testing.T) {
	h := newHarness(t, testConfig())
	h.s.SetLimits("capped", &scheduler.Limits{MaxInProgress: 3})
	h.add(plans("c", "capped", 0, 20)...)
	h.add(plans("o", "open", 0, 20)...)
	done := assignAllAsync(h.s.Schedule(h.now), func(sc *scheduler.Schedule) string {
		return fmt.Sprintf("held=%t", sc.Held("capped", 0))
	})
	for i := range 10 {
		h.s.SetLimits("capped", &scheduler.Limits{MaxInProgress: uint32(i % 4), Rank: uint8(i % 3)})
		h.s.SetDefaultLimits(scheduler.Limits{Closed: i%2 == 0, Rank: 1})
		h.assign("w2", 2)
	}
	got := <-done
	require.Len(t, got, 3+20+1, "the view's cap: 3 of capped, all 20 of open")
	require.Equal(t, []string{"c-00", "c-01", "c-02"}, got[:3])
	require.Equal(t, "held=true", got[len(got)-1])
}

// assignAllAsync assigns every job sc gives worker w1, on another
// goroutine, and sends the names of the jobs assigned, then what after
// says of the schedule if after is not nil.
func assignAllAsync(sc *scheduler.Schedule, after func(*scheduler.Schedule) string) <-chan []string {
	done := make(chan []string)
	go func() {
		var got []string
		for sc.AssignJob("w1") {
		}
		for _, c := range sc.Update().Changes {
			got = append(got, c.Job)
		}
		if after != nil {
			got = append(got, after(sc))
		}
		done <- got
	}()
	return done
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

// A schedule left open reads the trees as they were when it was opened,
// through a clone made when the scheduler changed; a closed one costs the
// change no clone, finds no job and changes nothing, and still returns
// the changes it prepared.
func TestScheduleViewCopyOnWrite(t *testing.T) {
	h := newHarness(t, testConfig())
	h.add(plan("a", "t", 0), plan("b", "t", 0))

	open := h.s.Schedule(h.now)
	closed := h.s.Schedule(h.now)
	require.True(t, closed.AssignJob("w1"))
	closed.Close()
	closed.Close() // idempotent
	u := closed.Update()
	require.Len(t, u.Changes, 1)

	h.applyAll(u)
	require.True(t, scheduler.ViewFrozen(open), "an open schedule's view is frozen at the change")
	st, _, ok := open.Job(u.Changes[0].Job)
	require.True(t, ok)
	require.Equal(t, ck.StatusUnassigned, st.Status, "the open schedule sees the job as it was")
	require.Equal(t, ck.StatusInProgress, h.job(u.Changes[0].Job).Status)

	_, _, ok = closed.Job("a")
	require.False(t, ok, "a closed schedule finds no job")
	require.False(t, closed.AssignJob("w2"))
	require.False(t, closed.AddJob(plan("c", "t", 0)))
	require.True(t, closed.Held("t", 0), "a closed schedule adds nothing")
	require.Len(t, closed.Update().Changes, 1, "a closed schedule changes nothing")

	// Every schedule of the next view closed: the change clones nothing.
	next := h.s.Schedule(h.now)
	require.True(t, next.AssignJob("w2"))
	next.Close()
	h.applyAll(next.Update())
	require.False(t, scheduler.ViewFrozen(next), "a closed view is never frozen")
	require.NoError(t, scheduler.CheckDerived(h.s))
}

// TestListAfterChurn: after thousands of jobs were added and most of them
// removed, with no pause, policy change or listing in between (the tenant
// index takes the new jobs in when it is next read), List lists exactly
// the jobs left, in (tenant, level, name) order.
func TestListAfterChurn(t *testing.T) {
	h := newHarness(t, testConfig())
	var want []ck.JobState
	for round := range 8 {
		var plans []ck.JobPlan
		for i := range 500 {
			plans = append(plans, plan(fmt.Sprintf("j-%d-%03d", round, i), fmt.Sprintf("t%d", i%3), uint32(i%2)))
		}
		h.add(plans...)
		for i, p := range plans {
			if i%5 != 0 {
				_, err := h.s.Cancel(h.entry(), h.now, p.Name)
				require.NoError(t, err)
			}
		}
	}
	for round := range 8 {
		for i := 0; i < 500; i += 5 {
			want = append(want, h.job(fmt.Sprintf("j-%d-%03d", round, i)))
		}
	}
	slices.SortFunc(want, func(a, b ck.JobState) int {
		return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Level, b.Level), cmp.Compare(a.Name, b.Name))
	})
	require.Equal(t, want, listAll(h.s))
	require.Equal(t, want, listAll(h.s), "listed again")
}

// TestCompletedRememberedAcrossManyAdds: a completed job's name is refused
// — by a schedule's AddJob and by a transaction's add — while its
// completion is remembered, however many jobs were added since (the
// scheduler's filter of known names is rebuilt from its trees as it
// fills), and a job in the queue likewise.
func TestCompletedRememberedAcrossManyAdds(t *testing.T) {
	h := newHarness(t, testConfig())
	h.add(plan("done", "t", 0), plan("queued", "t", 0))
	require.Len(t, h.assign("w1", 2), 2)
	h.poll("w1", []ck.StatusUpdate{h.report("done", ck.ReportSuccess)}, 0)
	for round := range 5 {
		var plans []ck.JobPlan
		for i := range 500 {
			plans = append(plans, plan(fmt.Sprintf("j-%d-%03d", round, i), "t", 0))
		}
		h.add(plans...)
		for _, p := range plans {
			_, err := h.s.Cancel(h.entry(), h.now, p.Name)
			require.NoError(t, err)
		}
	}
	for _, name := range []string{"done", "queued"} {
		sc := h.s.Schedule(h.now)
		require.False(t, sc.AddJob(plan(name, "t", 0)), "schedule adds %s", name)
		p := plan(name, "t", 0)
		rs := h.apply(ck.PlanUpdate{Changes: []ck.Change{{Kind: ck.ChangeAdd, Job: name, Plan: &p}}})
		require.False(t, rs[0].Applied, "transaction adds %s", name)
	}
	_, ok := h.s.CompletedToken("done")
	require.True(t, ok)
}

// TestScheduleHandsAddedJobsInOrder: the jobs a schedule adds are handed
// out in the order of AssignJob — level, then the tenant's rank, then
// name — whatever order they were added in, each once.
func TestScheduleHandsAddedJobsInOrder(t *testing.T) {
	h := newHarness(t, scheduler.DefaultConfig())
	h.s.SetLimits("a", &scheduler.Limits{Rank: 2})
	h.s.SetLimits("c", &scheduler.Limits{Rank: 1})
	sc := h.s.Schedule(h.now)
	defer sc.Close()
	for _, p := range []struct {
		name, tenant string
		level        uint32
	}{
		{"a1", "a", 1}, {"a0", "a", 0}, {"b1", "b", 1}, {"c0", "c", 0},
		{"b0", "b", 0}, {"c1", "c", 1}, {"a2", "a", 0}, {"b2", "b", 0},
	} {
		require.True(t, sc.AddJob(ck.JobPlan{Name: p.name, Tenant: p.tenant, Level: p.level, Sources: []string{p.name + "-src"}}))
	}
	require.False(t, sc.AddJob(ck.JobPlan{Name: "c0", Tenant: "c", Sources: []string{"other"}}), "a name added before")
	for sc.AssignJob("w") {
	}
	var handed []string
	for _, c := range sc.Update().Changes {
		if c.Kind == ck.ChangeAssign {
			handed = append(handed, c.Job)
		}
	}
	require.Equal(t, []string{"b0", "b2", "c0", "a0", "a2", "b1", "c1", "a1"}, handed)
}
