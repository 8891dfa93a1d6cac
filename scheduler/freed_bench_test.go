package scheduler_test

import (
	"fmt"
	"testing"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/scheduler"
)

// BenchmarkScheduleFreedBacklog: a poll that completes one job of a
// tenant at its cap of 4 jobs in progress, whose other jobs wait behind
// the cap (held=N), and is given the one its completion frees (a schedule
// with FreeCaps, then the transaction). ns/schedule and ns/apply are the
// two halves' means.
func BenchmarkScheduleFreedBacklog(b *testing.B) {
	for _, n := range []int{100, 1_000, 10_000} {
		b.Run(fmt.Sprintf("held=%d", n), func(b *testing.B) {
			cfg := scheduler.DefaultConfig()
			cfg.MaxQueueSize = 0
			s, err := scheduler.New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			s.SetLimits("capped", &scheduler.Limits{MaxInProgress: 4})
			idx := uint64(0)
			apply := func(u ck.PlanUpdate) {
				idx++
				tx := s.Begin(ck.Entry{Index: idx, Term: 1, Time: t0}, t0, 0)
				for i := range u.Changes {
					if r := tx.Apply(&u.Changes[i]); !r.Applied {
						b.Fatalf("%s %s: %s", u.Changes[i].Kind, u.Changes[i].Job, r.Why())
					}
				}
			}
			for start := 0; start < n+4; start += 1000 {
				sc := s.Schedule(t0)
				for i := start; i < min(start+1000, n+4); i++ {
					name := fmt.Sprintf("capped.s1.l0.%d.%016x", i, uint64(i)*0x9e3779b97f4a7c15)
					if !sc.AddJob(ck.JobPlan{Name: name, Tenant: "capped", Shard: 1, Sources: []string{name + "-src"}}) {
						b.Fatal("add refused")
					}
				}
				if start == 0 {
					for range 4 {
						sc.AssignJob("w1")
					}
				}
				apply(sc.Update())
				sc.Close()
			}
			running, _ := s.List(scheduler.Filter{Status: ck.StatusInProgress}, "", 0)
			if len(running) != 4 {
				b.Fatalf("%d jobs in progress, want 4", len(running))
			}
			var sched, appl time.Duration
			for b.Loop() {
				done := running[0]
				report := ck.StatusUpdate{Job: done.Name, Token: done.Token, Status: ck.ReportSuccess,
					Outputs: []ck.BlockMeta{{ID: done.Name + "-out", Tenant: "capped", Level: 1}}}
				t1 := time.Now()
				sc := s.Schedule(t0).FreeCaps()
				if !sc.UpdateJob("w1", &report) {
					b.Fatal("report refused")
				}
				got := 0
				for got < 32 && sc.AssignJob("w1") {
					got++
				}
				if got != 1 {
					b.Fatalf("%d assigned, want 1 (the cap freed by the completion)", got)
				}
				u := sc.Update()
				sc.Close()
				t2 := time.Now()
				apply(u)
				appl += time.Since(t2)
				sched += t2.Sub(t1)
				running, _ = s.List(scheduler.Filter{Status: ck.StatusInProgress}, "", 0)
			}
			b.ReportMetric(float64(sched.Nanoseconds())/float64(b.N), "ns/schedule")
			b.ReportMetric(float64(appl.Nanoseconds())/float64(b.N), "ns/apply")
		})
	}
}
