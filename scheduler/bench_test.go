package scheduler

import (
	"fmt"
	"testing"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/fencing"
)

// benchNow is the log time of the benchmark fixtures.
const benchNow = int64(1_700_000_000) * int64(time.Second)

// benchFixture builds a scheduler with inProgress jobs in progress (live
// leases) and unassigned jobs waiting, over levels 0-2, 20 sources each,
// with the queue limit off. It inserts records directly (as Restore does).
func benchFixture(tb testing.TB, inProgress, unassigned int) *Scheduler {
	tb.Helper()
	cfg := DefaultConfig()
	cfg.MaxQueueSize = 0
	s, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	idx := uint64(1)
	mk := func(name string, level uint32) *job {
		p := &ck.JobPlan{Name: name, Tenant: "tenant-" + fmt.Sprint(idx%7), Shard: uint32(idx % 64), Level: level}
		for k := range 20 {
			p.Sources = append(p.Sources, fmt.Sprintf("%s-src-%02d", name, k))
		}
		idx++
		return &job{plan: p, active: true, st: ck.JobState{
			Name: name, Tenant: p.Tenant, Level: level, Status: ck.StatusUnassigned,
			Token: fencing.Token(idx), Version: idx, AddedAt: benchNow - int64(time.Minute),
		}}
	}
	for i := range inProgress {
		j := mk(fmt.Sprintf("run-%08d", i), uint32(i%3))
		j.st.Status, j.st.Worker = ck.StatusInProgress, fmt.Sprintf("w-%d", i%100)
		j.st.Deadline = benchNow + int64(10*time.Second) + int64(i%1000)
		s.insert(j)
	}
	for i := range unassigned {
		s.insert(mk(fmt.Sprintf("new-%08d", i), uint32(i%3)))
	}
	s.lastEntry = idx
	return s
}

// benchPoll prepares the benchmark's poll: 16 renewals, 16 completions, 16
// assignments and 16 additions.
type benchPoll struct {
	renew, complete []ck.StatusUpdate
	adds            []ck.JobPlan
}

func newBenchPoll(s *Scheduler, inProgress int) *benchPoll {
	p := &benchPoll{}
	for i := range 32 {
		name := fmt.Sprintf("run-%08d", i*(inProgress/32))
		st, _, _ := s.Job(name)
		u := ck.StatusUpdate{Job: name, Token: st.Token, Status: ck.ReportInProgress}
		if i%2 == 1 {
			u.Status = ck.ReportSuccess
			u.Outputs = []ck.BlockMeta{{ID: name + "-out", Tenant: st.Tenant, Level: st.Level + 1}}
			p.complete = append(p.complete, u)
		} else {
			p.renew = append(p.renew, u)
		}
	}
	for i := range 16 {
		name := fmt.Sprintf("add-%04d", i)
		pl := ck.JobPlan{Name: name, Tenant: "tenant-1", Level: uint32(i % 2)}
		for k := range 20 {
			pl.Sources = append(pl.Sources, fmt.Sprintf("%s-src-%02d", name, k))
		}
		p.adds = append(p.adds, pl)
	}
	return p
}

func (p *benchPoll) run(s *Scheduler, now int64) *Schedule {
	sc := s.Schedule(now)
	for i := range p.renew {
		sc.UpdateJob("w", &p.renew[i])
	}
	for i := range p.complete {
		sc.UpdateJob("w", &p.complete[i])
	}
	for range sc.Capacity(16) {
		sc.AssignJob("w")
	}
	sc.EvictJob()
	for i := range p.adds {
		sc.AddJob(p.adds[i])
	}
	return sc
}

// cpuMeter accumulates the process's CPU time over the measured parts of a
// benchmark and reports it as cpu-ns/op.
type cpuMeter struct {
	total, since time.Duration
	ok           bool
}

func startCPU() *cpuMeter {
	m := &cpuMeter{}
	m.resume()
	return m
}

func (m *cpuMeter) resume() { m.since, m.ok = cpuTime() }

func (m *cpuMeter) pause() {
	if now, ok := cpuTime(); ok && m.ok {
		m.total += now - m.since
	}
}

// report pauses the meter and reports the CPU time per operation.
func (m *cpuMeter) report(b *testing.B) {
	if m.since != 0 {
		m.pause()
		m.since = 0
	}
	if m.ok && b.N > 0 {
		b.ReportMetric(float64(m.total.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkPrepare measures one poll's Prepare on a schedule: 16 renewals,
// 16 completions, 16 assignments and 16 additions, with that many jobs in
// progress (live leases) plus 1,000 unassigned, queue limit off. The indexes
// are cloned afresh for every poll, as after an Apply. Besides ns/op and
// allocs/op it reports cpu-ns/op, the process's CPU time per poll (GC
// included), which a loaded machine inflates less than the wall clock.
func BenchmarkPrepare(b *testing.B) {
	for _, n := range []int{10000, 1000000} {
		b.Run(fmt.Sprintf("jobs=%d", n), func(b *testing.B) {
			if n > 10000 && testing.Short() {
				b.Skip("1M-job fixture in -short mode")
			}
			s := benchFixture(b, n, 1000)
			p := newBenchPoll(s, n)
			now := benchNow + int64(time.Second)
			if u := p.run(s, now).Update(); len(u.Changes) != 64 {
				b.Fatalf("%d changes, want 64", len(u.Changes))
			}
			b.ReportAllocs()
			cpu := startCPU()
			for b.Loop() {
				s.dirty() // every poll follows an Apply: clone the indexes each time
				p.run(s, now)
			}
			cpu.report(b)
		})
	}
}

// steady drives a steady-state workload: each poll renews 16 running jobs,
// completes 16, assigns 16 and adds 16, so the queue keeps its shape.
type steady struct {
	s       *Scheduler
	now     int64
	index   uint64
	running []string // names of in-progress jobs, oldest assignment first
	seq     int
}

func newSteady(tb testing.TB, inProgress, unassigned int) *steady {
	s := benchFixture(tb, inProgress, unassigned)
	st := &steady{s: s, now: benchNow + int64(time.Second), index: s.lastEntry}
	s.expiry.Ascend(func(j *job) bool {
		st.running = append(st.running, j.st.Name)
		return true
	})
	return st
}

// prepare returns the next poll's update.
func (st *steady) prepare() ck.PlanUpdate {
	st.now += int64(time.Millisecond)
	sc := st.s.Schedule(st.now)
	report := func(name string, status ck.ReportStatus) {
		js, _, _ := st.s.Job(name)
		u := ck.StatusUpdate{Job: name, Token: js.Token, Status: status}
		if status == ck.ReportSuccess {
			u.Outputs = []ck.BlockMeta{{ID: name + "-out", Tenant: js.Tenant, Level: js.Level + 1}}
		}
		sc.UpdateJob("w", &u)
	}
	for i := range 16 { // renew jobs spread over the running set
		report(st.running[len(st.running)/2+i*(len(st.running)/64)], ck.ReportInProgress)
	}
	for _, name := range st.running[:16] { // complete the oldest
		report(name, ck.ReportSuccess)
	}
	st.running = st.running[16:]
	for range 16 {
		sc.AssignJob("w")
	}
	for range 16 {
		st.seq++
		name := fmt.Sprintf("add-%08d", st.seq)
		pl := ck.JobPlan{Name: name, Tenant: "tenant-1", Level: uint32(st.seq % 3)}
		for k := range 20 {
			pl.Sources = append(pl.Sources, fmt.Sprintf("%s-src-%02d", name, k))
		}
		sc.AddJob(pl)
	}
	return sc.Update()
}

// apply applies u at the next entry and records the new assignments.
func (st *steady) apply(tb testing.TB, u *ck.PlanUpdate) {
	st.index++
	tx := st.s.Begin(ck.Entry{Index: st.index, Term: 1, Time: u.Time}, u.Time, 0)
	for i := range u.Changes {
		r := tx.Apply(&u.Changes[i])
		if !r.Applied {
			tb.Fatalf("change %d (%s %s) skipped: %s", i, u.Changes[i].Kind, u.Changes[i].Job, r.Reason)
		}
		if r.Kind == ck.ChangeAssign {
			st.running = append(st.running, r.After.Name)
		}
	}
}

// BenchmarkSchedulerApply measures applying one poll's update (16
// renewals, 16 completions, 16 assignments, 16 additions) with 10,000 jobs
// in progress, in a steady state: each poll completes the oldest
// assignments, so the queue keeps its size. Preparing the update is not
// timed.
func BenchmarkSchedulerApply(b *testing.B) {
	for _, n := range []int{10000} {
		b.Run(fmt.Sprintf("jobs=%d", n), func(b *testing.B) {
			st := newSteady(b, n, 1000)
			b.ReportAllocs()
			var cpu cpuMeter
			for b.Loop() {
				b.StopTimer()
				u := st.prepare()
				if len(u.Changes) != 64 {
					b.Fatalf("%d changes, want 64", len(u.Changes))
				}
				b.StartTimer()
				cpu.resume()
				st.apply(b, &u)
				cpu.pause()
				b.StopTimer()
				b.StartTimer()
			}
			b.StopTimer()
			cpu.report(b)
			b.ReportMetric(float64(st.s.Len()), "queue")
		})
	}
}
