package scheduler_test

import (
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
