package scheduler

import (
	"fmt"
	"testing"

	ck "github.com/compactkit/compactkit"
)

// BenchmarkScheduleAdded: one schedule adds n jobs (a tenant's, at three
// levels) and hands each of them out, on a scheduler of 10,000 jobs in
// progress. ns/job is the schedule's time per added job.
func BenchmarkScheduleAdded(b *testing.B) {
	for _, n := range []int{32, 256, 1024} {
		b.Run(fmt.Sprintf("jobs=%d", n), func(b *testing.B) {
			s := benchFixture(b, 10000, 0)
			cfg := s.Config()
			cfg.MaxSlotsPerRequest = n
			if err := s.SetConfig(cfg); err != nil {
				b.Fatal(err)
			}
			plans := make([]ck.JobPlan, n)
			for i := range plans {
				name := fmt.Sprintf("added.s%d.l0.%d.%016x", i%64, i, uint64(i)*0x9e3779b97f4a7c15)
				plans[i] = ck.JobPlan{Name: name, Tenant: "added", Level: uint32(i % 3), Sources: []string{name + "-src"}}
			}
			for b.Loop() {
				sc := s.Schedule(benchNow)
				for i := range plans {
					if !sc.AddJob(plans[i]) {
						b.Fatal("add refused")
					}
				}
				for range n {
					if !sc.AssignJob("w") {
						b.Fatal("nothing to assign")
					}
				}
				sc.Close()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/job")
		})
	}
}
