package scheduler_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/scheduler"
)

// The scheduler's scenarios are transcripts (transcript_test.go,
// testdata/transcripts); these are the tests that are not scenarios: the
// configuration's validation and the schedule's isolation from other
// goroutines.

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
