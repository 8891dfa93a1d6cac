package scheduler_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/scheduler"
)

func testConfig() scheduler.Config {
	cfg := scheduler.DefaultConfig()
	cfg.AgingThreshold = nil
	return cfg
}

// Pyroscope evicts only when the queue is strictly above its limit while
// adding stops at the limit, so its eviction never fires. Ours evicts at
// exactly the limit.
func TestEvictionAtExactLimit(t *testing.T) {
	cfg := testConfig()
	cfg.MaxQueueSize = 3
	cfg.MaxFailures = 1
	h := newHarness(t, cfg)
	h.add(plans("job", "t", 0, 3)...)
	require.Len(t, h.assign("w1", 3), 3)

	// Below the limit nothing is evicted; at the limit nothing is added.
	sc := h.s.Schedule(h.now)
	require.False(t, sc.EvictJob(), "no excluded job yet")
	require.False(t, sc.AddJob(plan("new-0", "t", 0)), "queue at its limit")

	// The worker vanishes; the leases expire; with a limit of one failure
	// the next poll excludes all three instead of reassigning them.
	h.advance(cfg.LeaseDuration + time.Second)
	u, rs := h.poll("w2", nil, 1)
	require.Equal(t, []string{"exclude:job-00", "exclude:job-01", "exclude:job-02"}, kinds(u))
	for _, r := range rs {
		require.Equal(t, ck.StatusExcluded, r.After.Status)
		require.NotZero(t, r.PrevToken, "the abandoned attempt's outputs must be tombstoned")
	}
	require.Equal(t, 3, h.s.Len())

	// Exactly at the limit: evict one excluded job, then add.
	sc = h.s.Schedule(h.now)
	require.False(t, sc.AddJob(plan("new-0", "t", 0)))
	require.True(t, sc.EvictJob())
	require.True(t, sc.AddJob(plan("new-0", "t", 0)))
	require.False(t, sc.AddJob(plan("new-1", "t", 0)), "full again")
	u = sc.Update()
	require.Equal(t, []string{"evict:job-00", "add:new-0"}, kinds(u))
	rs = h.applyAll(u)
	require.Equal(t, ck.StatusExcluded, rs[0].Before.Status)
	require.Zero(t, rs[0].After)
	require.NotNil(t, rs[0].Plan, "the evicted job's plan, so its sources can be quarantined")
	require.Equal(t, 3, h.s.Len())
	require.Equal(t, uint64(1), h.s.Stats().Counters.Evicted)

	// An evict prepared when the queue was full is skipped once it is not.
	sc = h.s.Schedule(h.now)
	require.True(t, sc.EvictJob())
	stale := sc.Update()
	_, err := h.s.Cancel(h.entry(), h.now, "new-0")
	require.NoError(t, err)
	rs = h.apply(stale)
	require.False(t, rs[0].Applied)
	require.Equal(t, scheduler.SkippedQueueBelowLimit, rs[0].Reason)
}

// A job created in a poll can be assigned in the same poll (Pyroscope
// defers it to the next poll).
func TestSamePollAssignmentOfNewJobs(t *testing.T) {
	h := newHarness(t, testConfig())
	sc := h.s.Schedule(h.now)
	require.True(t, sc.AddJob(plan("b", "t", 0)))
	require.True(t, sc.AddJob(plan("a", "t", 0)))
	require.False(t, sc.AddJob(plan("a", "t", 0)), "a name added once per schedule")
	require.True(t, sc.AssignJob("w"))
	require.True(t, sc.AssignJob("w"))
	require.False(t, sc.AssignJob("w"), "each job is handed out at most once per schedule")
	st, _, ok := sc.Job("a")
	require.True(t, ok)
	require.Equal(t, ck.StatusInProgress, st.Status)
	u := sc.Update()
	require.Equal(t, []string{"add:b", "add:a", "assign:a", "assign:b"}, kinds(u))
	for _, c := range u.Changes {
		require.Zero(t, c.Version, "prepared against a job that did not exist")
	}
	_, _, ok = h.s.Job("a")
	require.False(t, ok, "the schedule never changes the scheduler")

	rs := h.applyAll(u)
	for _, r := range rs[2:] {
		require.Equal(t, ck.StatusInProgress, r.After.Status)
		require.Equal(t, fencing.Token(h.idx), r.After.Token, "token = index of the entry that applied the update")
		require.Equal(t, h.idx, r.After.Version)
		require.Equal(t, h.now+int64(testConfig().LeaseDuration), r.After.Deadline)
		require.Equal(t, "w", r.After.Worker)
		require.Zero(t, r.PrevToken)
	}
	require.True(t, h.owns("a", fencing.Token(h.idx)))
}

// A request's free slots are capped server-side, not rejected.
func TestFreeSlotCap(t *testing.T) {
	cfg := testConfig()
	cfg.MaxSlotsPerRequest = 4
	h := newHarness(t, cfg)
	sc := h.s.Schedule(h.now)
	require.Equal(t, 4, sc.Capacity(1000))
	require.Equal(t, 4, sc.Capacity(4))
	require.Equal(t, 3, sc.Capacity(3))
	require.Equal(t, 0, sc.Capacity(0))
	require.Equal(t, 0, sc.Capacity(-7))

	h.add(plans("job", "t", 0, 10)...)
	require.Len(t, h.assign("w", 1000), 4)
	require.Len(t, h.assign("w", 1000), 4)
	require.Len(t, h.assign("w", 1000), 2)
}

func TestReportedFailureAndRelease(t *testing.T) {
	h := newHarness(t, testConfig())
	h.add(plan("j", "t", 0))
	h.assign("w1", 1)
	first := h.job("j").Token

	// A reported failure: failures + 1, unassigned, the attempt's prefix
	// to tombstone; not handed back in the same poll.
	u, rs := h.poll("w1", []ck.StatusUpdate{h.report("j", ck.ReportFailure)}, 1)
	require.Equal(t, []string{"fail:j"}, kinds(u))
	require.Equal(t, first, u.Changes[0].Token)
	require.Equal(t, ck.StatusUnassigned, rs[0].After.Status)
	require.Equal(t, uint32(1), rs[0].After.Failures)
	require.Equal(t, first, rs[0].PrevToken)
	require.False(t, h.owns("j", first))

	// Reassignable at once (next poll), with a larger token.
	require.Equal(t, []string{"j"}, h.assign("w2", 1))
	second := h.job("j").Token
	require.Greater(t, second, first)
	require.False(t, h.owns("j", first), "the first worker's token no longer holds")
	require.True(t, h.owns("j", second))

	// The first worker's stale report gets no lease and changes nothing.
	stale := ck.StatusUpdate{Job: "j", Token: first, Status: ck.ReportSuccess}
	u, _ = h.poll("w1", []ck.StatusUpdate{stale}, 0)
	require.Empty(t, u.Changes)
	_, ok := h.s.CompletedToken("j")
	require.False(t, ok)

	// A release: unassigned, no failure counted.
	u, rs = h.poll("w2", []ck.StatusUpdate{h.report("j", ck.ReportReleased)}, 0)
	require.Equal(t, []string{"release:j"}, kinds(u))
	require.Equal(t, ck.StatusUnassigned, rs[0].After.Status)
	require.Equal(t, uint32(1), rs[0].After.Failures)
	require.Equal(t, second, rs[0].PrevToken)

	c := h.s.Stats().Counters
	require.Equal(t, uint64(1), c.Failed)
	require.Equal(t, uint64(1), c.Released)
	require.Equal(t, uint64(2), c.Assigned)
}

func TestExclusionAtLimit(t *testing.T) {
	cfg := testConfig()
	cfg.MaxFailures = 3
	h := newHarness(t, cfg)
	h.add(plan("j", "t", 0))

	// Attempt 1 fails (reported), attempt 2 is abandoned (reassigned
	// with failures 2), attempt 3 is abandoned: at the limit it is
	// excluded instead of reassigned.
	h.assign("w1", 1)
	h.poll("w1", []ck.StatusUpdate{h.report("j", ck.ReportFailure)}, 0)
	require.Equal(t, uint32(1), h.job("j").Failures)
	h.assign("w2", 1)
	h.advance(cfg.LeaseDuration + 1)
	_, rs := h.poll("w3", nil, 1)
	require.Equal(t, ck.ChangeAssign, rs[0].Kind)
	require.Equal(t, uint32(2), rs[0].After.Failures)
	require.Equal(t, rs[0].Before.Token, rs[0].PrevToken)
	require.Equal(t, uint64(1), h.s.Stats().Counters.Reassigned)

	h.advance(cfg.LeaseDuration + 1)
	u, rs := h.poll("w4", nil, 1)
	require.Equal(t, []string{"exclude:j"}, kinds(u), "excluded, not assigned")
	require.Equal(t, ck.StatusExcluded, rs[0].After.Status)
	require.Equal(t, uint32(3), rs[0].After.Failures)

	// Excluded jobs are never assigned, and an assign prepared before the
	// exclusion is skipped.
	require.Empty(t, h.assign("w5", 5))
	require.Equal(t, 1, h.s.Stats().Levels[0].Excluded)

	// Operator retry: unassigned, failures reset.
	n, err := h.s.Retry(h.entry(), h.now, "j")
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, uint32(0), h.job("j").Failures)
	require.Equal(t, []string{"j"}, h.assign("w5", 1))

	// A reported failure at the limit excludes directly.
	h.poll("w5", []ck.StatusUpdate{h.report("j", ck.ReportFailure)}, 0)
	h.assign("w5", 1)
	h.poll("w5", []ck.StatusUpdate{h.report("j", ck.ReportFailure)}, 0)
	h.assign("w5", 1)
	_, rs = h.poll("w5", []ck.StatusUpdate{h.report("j", ck.ReportFailure)}, 0)
	require.Equal(t, ck.ChangeFail, rs[0].Kind)
	require.Equal(t, ck.StatusExcluded, rs[0].After.Status)
	require.NotZero(t, rs[0].PrevToken)

	// Retry all; a job that is not excluded cannot be retried.
	n, err = h.s.Retry(h.entry(), h.now, "")
	require.NoError(t, err)
	require.Equal(t, 1, n)
	_, err = h.s.Retry(h.entry(), h.now, "j")
	require.ErrorIs(t, err, scheduler.ErrNotExcluded)
	_, err = h.s.Retry(h.entry(), h.now, "nope")
	require.ErrorIs(t, err, scheduler.ErrUnknownJob)

	// Raising the failure limit does not exclude more; unlimited never
	// excludes.
	cfg.MaxFailures = 0
	require.NoError(t, h.s.SetConfig(cfg))
	h.assign("w6", 1)
	for range 5 {
		h.advance(cfg.LeaseDuration + 1)
		_, rs = h.poll("w6", nil, 1)
		require.Equal(t, ck.ChangeAssign, rs[0].Kind)
	}
	require.Equal(t, uint32(5), h.job("j").Failures)
}

func TestPause(t *testing.T) {
	h := newHarness(t, testConfig())
	h.add(plan("a-0", "a", 0), plan("a-1", "a", 1), plan("b-0", "b", 0), plan("b-1", "b", 1), plan("run-a", "a", 2))
	_, rs := h.poll("w", nil, 1) // a-0 first by name
	require.Equal(t, "a-0", rs[0].After.Name)

	level1 := uint32(1)
	addA := plan("a-new", "a", 0)
	prepared := h.s.Schedule(h.now)
	require.True(t, prepared.AddJob(addA))

	h.s.SetPaused(h.entry(), "a", nil, true)
	require.True(t, h.s.Paused("a", 0))
	require.True(t, h.s.Paused("a", 7))
	require.False(t, h.s.Paused("b", 0))
	sc := h.s.Schedule(h.now)
	require.True(t, sc.Paused("a", 1))
	require.False(t, sc.AddJob(plan("a-2", "a", 0)), "paused tenants do not fill the queue")
	rs = h.apply(prepared.Update())
	require.False(t, rs[0].Applied, "an add prepared before the pause")
	require.Equal(t, scheduler.SkippedPaused, rs[0].Reason)

	// Only b's jobs are assigned; the running job of a keeps its lease.
	require.Equal(t, []string{"b-0", "b-1"}, h.assign("w", 10))
	_, rs = h.poll("w", []ck.StatusUpdate{h.report("a-0", ck.ReportInProgress)}, 0)
	require.Equal(t, ck.ChangeRenew, rs[0].Kind)
	// Expired, it is not reassigned while paused (b's are).
	h.advance(testConfig().LeaseDuration * 2)
	require.Equal(t, []string{"b-0", "b-1"}, h.assign("w2", 10))
	st := h.s.Stats()
	require.Equal(t, []scheduler.PauseRule{{Tenant: "a", AllLevels: true}}, st.Paused)
	require.Equal(t, scheduler.LevelStats{Level: 0, InProgress: 2, Paused: 1}, st.Levels[0])

	// A level across tenants; resuming the tenant leaves the level paused.
	h.s.SetPaused(h.entry(), "", &level1, true)
	h.s.SetPaused(h.entry(), "a", nil, false)
	require.False(t, h.s.Paused("a", 0))
	require.True(t, h.s.Paused("a", 1))
	require.True(t, h.s.Paused("b", 1))
	names := h.assign("w2", 10)
	require.Equal(t, []string{"a-0", "run-a"}, names, "a-0 expired: reassigned; level 1 still paused")
	h.s.SetPaused(h.entry(), "", &level1, false)
	require.Equal(t, []string{"a-1"}, h.assign("w2", 10))
	require.Empty(t, h.s.Stats().Paused)

	// A tenant at one level; pausing everything.
	h.add(plan("b-2", "b", 2), plan("b-3", "b", 3))
	two := uint32(2)
	h.s.SetPaused(h.entry(), "b", &two, true)
	require.Equal(t, []string{"b-3"}, h.assign("w3", 10))
	h.s.SetPaused(h.entry(), "", nil, true)
	require.False(t, h.s.Schedule(h.now).AddJob(plan("x", "x", 0)))
	h.s.SetPaused(h.entry(), "", nil, false)
	h.s.SetPaused(h.entry(), "b", &two, false)
	require.Equal(t, []string{"b-2"}, h.assign("w3", 10))
}

func TestLeaseExtension(t *testing.T) {
	cfg := testConfig()
	h := newHarness(t, cfg)
	h.add(plans("j", "t", 0, 4)...)
	h.assign("w", 2) // j-00, j-01 at t0
	h.advance(10 * time.Second)
	h.assign("w", 1) // j-02 at t0+10s
	h.s.SetPaused(h.entry(), "t", nil, true)
	h.s.SetPaused(h.entry(), "t", nil, false)

	// A renewal prepared by the old leader, before the election.
	sc := h.s.Schedule(h.now)
	r := h.report("j-00", ck.ReportInProgress)
	require.True(t, sc.UpdateJob("w", &r))
	renewal := sc.Update()

	// The old leader dies; the new one takes office after 12 s (j-00 and
	// j-01 would have 3 s left, j-02 13 s).
	h.advance(12 * time.Second)
	before := map[string]ck.JobState{}
	for _, n := range []string{"j-00", "j-01", "j-02", "j-03"} {
		before[n] = h.job(n)
	}
	e := h.entry()
	require.Equal(t, 3, h.s.ExtendLeases(e, h.now))
	want := h.now + int64(cfg.LeaseDuration)
	for _, n := range []string{"j-00", "j-01", "j-02"} {
		st := h.job(n)
		require.Equal(t, want, st.Deadline, n)
		require.Equal(t, before[n].Version, st.Version, "an extension is not a change: prepared changes still apply")
		require.Equal(t, before[n].Token, st.Token)
	}
	require.Equal(t, before["j-03"], h.job("j-03"), "unassigned jobs are untouched")
	require.Zero(t, h.s.ExtendLeases(h.entry(), h.now), "idempotent")

	// Nobody's lease expires before now + lease, and the old renewal applies.
	h.advance(cfg.LeaseDuration)
	require.Equal(t, []string{"j-03"}, h.assign("w2", 10))
	rs := h.applyAll(renewal)
	require.Equal(t, h.now+int64(cfg.LeaseDuration), rs[0].After.Deadline)

	// A paused running job is extended too.
	h.s.SetPaused(h.entry(), "t", nil, true)
	h.advance(time.Second)
	require.Equal(t, 4, h.s.ExtendLeases(h.entry(), h.now))
	require.Equal(t, h.now+int64(cfg.LeaseDuration), h.job("j-01").Deadline)
}

// TestSuccessWithoutOutputsNeverCompletes: a success report without outputs
// for a job with sources is refused at Prepare, so its sources are never
// replaced by nothing; a cleanup-only job completes without outputs.
func TestSuccessWithoutOutputsNeverCompletes(t *testing.T) {
	h := newHarness(t, testConfig())
	cleanup := ck.JobPlan{Name: "cleanup", Shard: ck.AnyShard,
		Tombstones: []ck.Tombstone{{Kind: ck.TombstoneBlock, Target: "old-block"}}}
	h.add(plan("a", "t", 0), cleanup)
	require.ElementsMatch(t, []string{"a", "cleanup"}, h.assign("w", 2))
	sc := h.s.Schedule(h.now)
	require.False(t, sc.UpdateJob("w", &ck.StatusUpdate{Job: "a", Token: h.job("a").Token, Status: ck.ReportSuccess}))
	require.True(t, sc.UpdateJob("w", &ck.StatusUpdate{Job: "cleanup", Token: h.job("cleanup").Token, Status: ck.ReportSuccess}))
	h.applyAll(sc.Update())
	require.Equal(t, ck.StatusInProgress, h.job("a").Status)
	_, _, ok := h.s.Job("cleanup")
	require.False(t, ok)
}
