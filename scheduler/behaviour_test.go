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

// A schedule in use keeps the tenant policies of its view while the
// scheduler's change (setters, caps reached and released by Apply) on
// another goroutine.
func TestScheduleKeepsItsPolicies(t *testing.T) {
	h := newHarness(t, testConfig())
	h.s.SetLimits("capped", &scheduler.Limits{MaxInProgress: 3})
	h.add(plans("c", "capped", 0, 20)...)
	h.add(plans("o", "open", 0, 20)...)
	sc := h.s.Schedule(h.now)
	done := make(chan []string)
	go func() {
		var got []string
		for sc.AssignJob("w1") {
		}
		for _, c := range sc.Update().Changes {
			got = append(got, c.Job)
		}
		held := sc.Held("capped", 0)
		got = append(got, fmt.Sprintf("held=%t", held))
		done <- got
	}()
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
