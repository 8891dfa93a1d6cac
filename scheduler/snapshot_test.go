package scheduler_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/internal/snaptest"
	"github.com/compactkit/compactkit/scheduler"
)

var update = flag.Bool("update", false, "rewrite the golden snapshot and the fuzz seeds")

// goldenScheduler builds a scheduler with a bit of everything: a
// non-default configuration, jobs of every status over several tenants and
// levels (one multi-tenant, one cleanup-only, one with tombstones), an
// expired lease, pause rules, remembered completions and counters.
func goldenScheduler(t testing.TB) *scheduler.Scheduler {
	cfg := scheduler.Config{
		MaxFailures:        2,
		LeaseDuration:      10 * time.Second,
		MaxQueueSize:       50,
		MaxSlotsPerRequest: 8,
		AgingThreshold:     []time.Duration{0, time.Minute, 5 * time.Minute},
		CompletedRetention: 10 * time.Minute,
	}
	h := newHarness(t, cfg)
	tombs := plan("tombs", "acme", 0)
	tombs.Tombstones = []ck.Tombstone{
		{Kind: ck.TombstoneBlock, Target: "01JOLD/block-1"},
		{Kind: ck.TombstonePrefix, Target: "blocks/old-job/7/"},
	}
	cleanup := ck.JobPlan{Name: "cleanup-1", Shard: ck.AnyShard,
		Tombstones: []ck.Tombstone{{Kind: ck.TombstoneBlock, Target: "01JOLD/block-2"}}}
	h.add(append(plans("acme", "acme", 0, 4), plan("multi", "", 0), tombs, cleanup)...)
	h.advance(time.Second)
	h.add(plans("globex", "globex", 1, 3)...)
	h.add(plan("initech", "initech", 2))
	h.advance(time.Second)

	held := h.assign("w1", 4)     // acme-00..03
	held2 := h.assign("w-two", 3) // cleanup-1, multi, tombs
	require.Len(t, held, 4)
	require.Len(t, held2, 3)
	h.advance(2 * time.Second)
	// Renew one, complete one, fail one, release one.
	h.poll("w1", []ck.StatusUpdate{
		h.report(held[0], ck.ReportInProgress),
		h.report(held[1], ck.ReportSuccess),
		h.report(held[2], ck.ReportFailure),
		h.report(held[3], ck.ReportReleased),
	}, 0)
	h.poll("w-two", []ck.StatusUpdate{h.report(held2[0], ck.ReportSuccess)}, 0)
	// w-two's other jobs expire: reassigned with a failure counted.
	h.advance(20 * time.Second)
	re := h.assign("w3", 2)
	require.Len(t, re, 2)
	// The job that failed once fails again: excluded at the limit.
	h.assign("w4", 1)
	h.poll(h.job(held[2]).Worker, []ck.StatusUpdate{h.report(held[2], ck.ReportFailure)}, 0)
	require.Equal(t, ck.StatusExcluded, h.job(held[2]).Status)

	h.s.SetPause(scheduler.PauseRule{Tenant: "globex", AllLevels: true}, true)
	h.s.SetPause(scheduler.PauseRule{AllTenants: true, Level: 2}, true)
	return h.s
}

// TestGoldenSnapshot: the snapshot format is stable. A release must read
// the snapshots of the previous one; if the format changes on purpose, the
// version changes and the old golden file stays readable.
func TestGoldenSnapshot(t *testing.T) {
	s := goldenScheduler(t)
	got := snapshot(t, s)
	if *update {
		empty, err := scheduler.New(scheduler.DefaultConfig())
		require.NoError(t, err)
		writeSeed(t, "golden", got)
		writeSeed(t, "empty", snapshot(t, empty))
		writeSeed(t, "truncated", got[:len(got)/2])
	}
	want := snaptest.Golden(t, "scheduler_v2.bin", got, *update)

	r := restored(t, want)
	require.Equal(t, s.Stats(), r.Stats())
	require.Equal(t, s.Config(), r.Config())
	require.Equal(t, listAll(s), listAll(r))
	st := r.Stats()
	require.Len(t, st.Paused, 2)
	require.Equal(t, 2, st.Completed)
	require.Positive(t, st.Counters.Excluded)
	require.Positive(t, st.Counters.Reassigned)
}

// TestGoldenSnapshotV1: a state without failure records is written in
// version 1 of the section, and a version-1 snapshot restores and
// re-snapshots to the same bytes.
func TestGoldenSnapshotV1(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("testdata", "golden", "scheduler_v1.bin"))
	require.NoError(t, err)
	r := restored(t, want)
	require.Len(t, listAll(r), 9)
}

// TestRestoreRefusesMislabelledVersion: a section's version says whether
// its header counts failure records: a version-1 section with such a
// header, or a version-2 one without, is refused.
func TestRestoreRefusesMislabelledVersion(t *testing.T) {
	v2 := snapshot(t, goldenScheduler(t))
	require.Equal(t, byte(2), v2[3])
	v2[3] = 1
	_, err := scheduler.Restore(bytes.NewReader(snaptest.Reseal(v2[:len(v2)-4])))
	require.ErrorIs(t, err, ck.ErrMalformed)
	require.ErrorContains(t, err, "version 1 with 5 failure records")

	v1, err := os.ReadFile(filepath.Join("testdata", "golden", "scheduler_v1.bin"))
	require.NoError(t, err)
	v1[3] = 2
	_, err = scheduler.Restore(bytes.NewReader(snaptest.Reseal(v1[:len(v1)-4])))
	require.ErrorIs(t, err, ck.ErrMalformed)
	require.ErrorContains(t, err, "0 failure records")
}

func writeSeed(t testing.TB, name string, data []byte) {
	dir := filepath.Join("testdata", "fuzz", "FuzzRestore")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", data), 0o644))
}

// TestRestoredBehavesAlike: a restored scheduler decides and applies
// exactly what the original does, paused jobs included.
func TestRestoredBehavesAlike(t *testing.T) {
	a := goldenScheduler(t)
	b := restored(t, snapshot(t, a))
	now := t0 + int64(time.Hour)
	idx := uint64(1000)
	for round := range 4 {
		var us [2]ck.PlanUpdate
		for i, s := range []*scheduler.Scheduler{a, b} {
			sc := roundOf(s, now, round)
			us[i] = sc.Update()
		}
		require.Equal(t, us[0], us[1], "round %d", round)
		idx++
		e := ck.Entry{Index: idx, Term: 3, Time: now}
		for _, s := range []*scheduler.Scheduler{a, b} {
			tx := s.Begin(e, now, 0)
			for i := range us[0].Changes {
				tx.Apply(&us[0].Changes[i])
			}
		}
		require.Equal(t, snapshot(t, a), snapshot(t, b), "round %d", round)
		now += int64(11 * time.Second)
	}
	for _, job := range listAll(a) {
		require.False(t, job.Tenant == "globex" && job.Status == ck.StatusInProgress && job.Version > 1000,
			"paused tenant's job %s assigned", job.Name)
	}
}

// TestRestoredWithPoliciesBehavesAlike: policies are not in the snapshot;
// a restored scheduler given the same policies (as the state machine does)
// has the same stats, jobs and derived state, and decides and applies
// exactly what the original does, rounds after rounds of ranks, caps and
// closed tenants.
func TestRestoredWithPoliciesBehavesAlike(t *testing.T) {
	a := goldenScheduler(t)
	install := func(s *scheduler.Scheduler) {
		s.SetDefaultLimits(scheduler.Limits{Rank: 1, MaxInProgress: 2})
		s.SetLimits("acme", &scheduler.Limits{Rank: 2, MaxInProgress: 1})
		s.SetLimits("initech", &scheduler.Limits{Closed: true})
	}
	install(a)
	b := restored(t, snapshot(t, a))
	require.NotEqual(t, a.Stats(), b.Stats(), "the policies are not in the snapshot")
	install(b)
	require.Equal(t, a.Stats(), b.Stats())
	require.Equal(t, listAll(a), listAll(b))
	require.NoError(t, scheduler.CheckDerived(b))
	now := t0 + int64(time.Hour)
	idx := uint64(1000)
	assigned := 0
	for round := range 6 {
		var us [2]ck.PlanUpdate
		var held [2][]bool
		for i, s := range []*scheduler.Scheduler{a, b} {
			sc := roundOf(s, now, round)
			sc.AddJob(plan(fmt.Sprintf("late-%d", round), "initech", 1))
			for _, tenant := range []string{"acme", "globex", "initech", "other"} {
				held[i] = append(held[i], sc.Held(tenant, 0), sc.Held(tenant, 1))
			}
			us[i] = sc.Update()
		}
		require.Equal(t, us[0], us[1], "round %d", round)
		require.Equal(t, held[0], held[1], "round %d", round)
		idx++
		e := ck.Entry{Index: idx, Term: 3, Time: now}
		var rs [2][]scheduler.Result
		for i, s := range []*scheduler.Scheduler{a, b} {
			tx := s.Begin(e, now, 0)
			for k := range us[0].Changes {
				rs[i] = append(rs[i], tx.Apply(&us[0].Changes[k]))
			}
		}
		require.Equal(t, rs[0], rs[1], "round %d", round)
		for _, r := range rs[0] {
			if r.Applied && r.Kind == ck.ChangeAssign {
				assigned++
			}
		}
		require.Equal(t, snapshot(t, a), snapshot(t, b), "round %d", round)
		require.Equal(t, a.Stats(), b.Stats(), "round %d", round)
		require.NoError(t, scheduler.CheckDerived(a))
		now += int64(11 * time.Second)
	}
	require.Positive(t, assigned, "the rounds assigned jobs")
	for _, job := range listAll(a) {
		require.False(t, job.Tenant == "initech" && job.Status == ck.StatusInProgress && job.Version > 1000,
			"closed tenant's job %s assigned", job.Name)
	}
}

// TestRestoreRejectsDamage: every truncation and every flipped bit of a
// snapshot is an error, never a panic or a silently different scheduler.
func TestRestoreRejectsDamage(t *testing.T) {
	snaptest.RejectsDamage(t, snapshot(t, goldenScheduler(t)), 7, snaptest.Err(scheduler.Restore))
}

// TestRestoreValidates: structurally valid streams with invalid contents
// are refused with an error; what is accepted is a usable scheduler.
func TestRestoreValidates(t *testing.T) {
	step := 5 // every byte takes long under -race: a sample
	if testing.Short() {
		step = 17
	}
	snaptest.RefusesOrWorks(t, snapshot(t, goldenScheduler(t)), step, scheduler.Restore, func(r *scheduler.Scheduler) { exercise(t, r) })
}

// TestRestoreRefusesInconsistentState: a snapshot of a state Apply cannot
// produce — here a completed job that is also queued — is refused with
// ErrMalformed, even with a valid checksum.
func TestRestoreRefusesInconsistentState(t *testing.T) {
	s := goldenScheduler(t)
	_, ok := s.CompletedToken("cleanup-1")
	require.True(t, ok)
	_, _, ok = s.Job("globex-00")
	require.True(t, ok)
	snap := snapshot(t, s)
	body := bytes.Clone(snap[:len(snap)-4])
	i := bytes.LastIndex(body, []byte("cleanup-1")) // in the completions
	require.Positive(t, i)
	copy(body[i:], "globex-00") // same length, still in name order
	_, err := scheduler.Restore(bytes.NewReader(snaptest.Reseal(body)))
	require.ErrorIs(t, err, ck.ErrMalformed)
	require.ErrorContains(t, err, "also queued")
}

// exercise schedules, applies and snapshots a restored scheduler; it must
// neither panic nor fail to round-trip.
func exercise(t testing.TB, r *scheduler.Scheduler) {
	restored(t, snapshot(t, r))
	now := t0 + int64(24*time.Hour)
	sc := r.Schedule(now)
	for _, js := range listAll(r) {
		sc.UpdateJob(js.Worker, &ck.StatusUpdate{Job: js.Name, Token: js.Token, Status: ck.ReportFailure})
	}
	for range 5 {
		sc.AssignJob("w")
	}
	sc.EvictJob()
	sc.AddJob(plan("fresh", "acme", 0))
	u := sc.Update()
	tx := r.Begin(ck.Entry{Index: 1 << 40, Time: now}, now, 0)
	for i := range u.Changes {
		tx.Apply(&u.Changes[i])
	}
	r.ExtendLeases(ck.Entry{Index: 1<<40 + 1, Time: now}, now)
	_, _ = r.Retry(ck.Entry{Index: 1<<40 + 2, Time: now}, now, "", "")
	r.Expire(now)
	_ = r.Stats()
	restored(t, snapshot(t, r))
}

// restored restores snap, which must snapshot to the same bytes again.
func restored(t snaptest.TB, snap []byte) *scheduler.Scheduler {
	t.Helper()
	return snaptest.RoundTrip(t, snap, scheduler.Restore, func(s *scheduler.Scheduler) []byte { return snapshot(t, s) })
}

// FuzzRestore: Restore never panics; what it accepts round-trips and can
// be scheduled on. Inputs are tried as they are and with their checksum
// recomputed, so that the fuzzer reaches the decoder.
func FuzzRestore(f *testing.F) {
	f.Add(snapshot(f, goldenScheduler(f)))
	empty, err := scheduler.New(scheduler.DefaultConfig())
	require.NoError(f, err)
	f.Add(snapshot(f, empty))
	f.Fuzz(func(t *testing.T, data []byte) {
		snaptest.TryRestore(data, scheduler.Restore, func(r *scheduler.Scheduler) { exercise(t, r) })
	})
}

// roundOf opens a schedule for a round of the restore tests: up to five
// assignments, an eviction and two additions.
func roundOf(s *scheduler.Scheduler, now int64, round int) *scheduler.Schedule {
	sc := s.Schedule(now)
	for range sc.Capacity(5) {
		sc.AssignJob("w")
	}
	sc.EvictJob()
	sc.AddJob(plan(fmt.Sprintf("new-%d", round), "globex", 0))
	sc.AddJob(plan(fmt.Sprintf("more-%d", round), "acme", 1))
	return sc
}
