package scheduler_test

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/scheduler"
)

// start is the log time of the examples.
var start = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC).UnixNano()

// applyUpdate applies a plan update at entry e, as every replica's state
// machine does, and prints what each change did.
func applyUpdate(s *scheduler.Scheduler, e ck.Entry, u ck.PlanUpdate) {
	tx := s.Begin(e, e.Time, u.TokenIndex)
	for i := range u.Changes {
		r := tx.Apply(&u.Changes[i])
		switch {
		case r.Applied && r.After.Name == "":
			fmt.Printf("  %s %s: removed\n", r.Kind, u.Changes[i].Job)
		case r.Applied:
			fmt.Printf("  %s %s: %s token=%d\n", r.Kind, u.Changes[i].Job, r.After.Status, r.After.Token)
		default:
			fmt.Printf("  %s %s: skipped (%s)\n", r.Kind, u.Changes[i].Job, r.Why())
		}
	}
}

// A poll in two steps: the leader prepares the changes on a read-only
// schedule; every replica applies them at the entry's index, which becomes
// the token of the assignments.
func Example() {
	s, err := scheduler.New(scheduler.DefaultConfig())
	if err != nil {
		panic(err)
	}

	// Prepare (leader): add two jobs and assign one of them in the same
	// poll.
	sc := s.Schedule(start)
	sc.AddJob(ck.JobPlan{Name: "job-a", Tenant: "acme", Level: 0, Sources: []string{"b1", "b2"}})
	sc.AddJob(ck.JobPlan{Name: "job-b", Tenant: "acme", Level: 1, Sources: []string{"b3", "b4"}})
	for range sc.Capacity(1) {
		sc.AssignJob("worker-1")
	}
	u := sc.Update()

	// Apply (every replica): entry 7.
	fmt.Println("entry 7:")
	applyUpdate(s, ck.Entry{Index: 7, Term: 1, Time: start}, u)

	st, _, _ := s.Job("job-a")
	fmt.Println("job-a held by", st.Worker, "until", time.Duration(st.Deadline-start))
	// Output:
	// entry 7:
	//   add job-a: unassigned token=7
	//   add job-b: unassigned token=7
	//   assign job-a: in_progress token=7
	// job-a held by worker-1 until 15s
}

// A worker's report is accepted only with the job's current token. After its
// lease expired and the job went to another worker, the first worker's
// renewal gets no lease; a repeated success report is answered "completed".
func ExampleSchedule_UpdateJob() {
	cfg := scheduler.DefaultConfig()
	s, _ := scheduler.New(cfg)
	sc := s.Schedule(start)
	sc.AddJob(ck.JobPlan{Name: "job-a", Tenant: "acme", Sources: []string{"b1", "b2"}})
	sc.AssignJob("w1")
	applyUpdate(s, ck.Entry{Index: 1, Time: start}, sc.Update())

	// w1 goes silent; the lease expires and w2 gets the job.
	later := start + int64(cfg.LeaseDuration) + 1
	sc = s.Schedule(later)
	sc.AssignJob("w2")
	applyUpdate(s, ck.Entry{Index: 2, Time: later}, sc.Update())

	sc = s.Schedule(later)
	fmt.Println("w1 renews with token 1:", sc.UpdateJob("w1", &ck.StatusUpdate{Job: "job-a", Token: 1, Status: ck.ReportInProgress}))
	done := ck.StatusUpdate{Job: "job-a", Token: 2, Status: ck.ReportSuccess,
		Outputs: []ck.BlockMeta{{ID: "out-1", Tenant: "acme", Level: 1}}}
	fmt.Println("w2 reports success with token 2:", sc.UpdateJob("w2", &done))
	applyUpdate(s, ck.Entry{Index: 3, Time: later}, sc.Update())

	// The reply was lost; w2 reports again.
	sc = s.Schedule(later)
	fmt.Println("repeated report accepted:", sc.UpdateJob("w2", &done))
	tok, ok := s.CompletedToken("job-a")
	fmt.Println("completed with its token:", ok && tok == done.Token)
	// Output:
	//   add job-a: unassigned token=1
	//   assign job-a: in_progress token=1
	//   assign job-a: in_progress token=2
	// w1 renews with token 1: false
	// w2 reports success with token 2: true
	//   complete job-a: removed
	// repeated report accepted: false
	// completed with its token: true
}

// Two polls prepared on the same view both pick the same job; the job's
// version lets only the first applied take it.
func ExampleTx_Apply() {
	s, _ := scheduler.New(scheduler.DefaultConfig())
	sc := s.Schedule(start)
	sc.AddJob(ck.JobPlan{Name: "job-a", Tenant: "acme", Sources: []string{"b1"}})
	applyUpdate(s, ck.Entry{Index: 1, Time: start}, sc.Update())

	a, b := s.Schedule(start), s.Schedule(start)
	a.AssignJob("w1")
	b.AssignJob("w2")
	applyUpdate(s, ck.Entry{Index: 2, Time: start}, a.Update())
	applyUpdate(s, ck.Entry{Index: 3, Time: start}, b.Update())
	fmt.Println("stale changes skipped:", s.Stats().Counters.Skipped)
	// Output:
	//   add job-a: unassigned token=1
	//   assign job-a: in_progress token=2
	//   assign job-a: skipped (stale version: prepared against 1, job at 2 before entry 3)
	// stale changes skipped: 1
}

// The queue is at its limit and holds an excluded job: the poll evicts it to
// make room for a new job.
func ExampleSchedule_EvictJob() {
	cfg := scheduler.DefaultConfig()
	cfg.MaxQueueSize = 1
	cfg.MaxFailures = 1
	s, _ := scheduler.New(cfg)
	sc := s.Schedule(start)
	sc.AddJob(ck.JobPlan{Name: "bad", Tenant: "acme", Sources: []string{"b1"}})
	sc.AssignJob("w1")
	applyUpdate(s, ck.Entry{Index: 1, Time: start}, sc.Update())
	sc = s.Schedule(start)
	sc.UpdateJob("w1", &ck.StatusUpdate{Job: "bad", Token: 1, Status: ck.ReportFailure})
	applyUpdate(s, ck.Entry{Index: 2, Time: start}, sc.Update())

	sc = s.Schedule(start)
	next := ck.JobPlan{Name: "next", Tenant: "acme", Sources: []string{"b2"}}
	if !sc.AddJob(next) && sc.EvictJob() {
		sc.AddJob(next)
	}
	applyUpdate(s, ck.Entry{Index: 3, Time: start}, sc.Update())
	// Output:
	//   add bad: unassigned token=1
	//   assign bad: in_progress token=1
	//   fail bad: excluded token=1
	//   evict bad: removed
	//   add next: unassigned token=3
}

// Snapshot and Restore round-trip to identical bytes.
func ExampleRestore() {
	s, _ := scheduler.New(scheduler.DefaultConfig())
	sc := s.Schedule(start)
	sc.AddJob(ck.JobPlan{Name: "job-a", Tenant: "acme", Sources: []string{"b1"}})
	tx := s.Begin(ck.Entry{Index: 1, Time: start}, start, 0)
	for _, c := range sc.Update().Changes {
		tx.Apply(&c)
	}

	var snap bytes.Buffer
	if err := s.Snapshot(&snap); err != nil {
		panic(err)
	}
	r, err := scheduler.Restore(bytes.NewReader(snap.Bytes()))
	if err != nil {
		panic(err)
	}
	var again bytes.Buffer
	_ = r.Snapshot(&again)
	fmt.Println("jobs:", r.Stats().Jobs, "identical:", bytes.Equal(snap.Bytes(), again.Bytes()))

	_, err = scheduler.Restore(bytes.NewReader(snap.Bytes()[:snap.Len()-1]))
	fmt.Println("truncated snapshot refused:", err != nil)
	// Output:
	// jobs: 1 identical: true
	// truncated snapshot refused: true
}

// Pausing a tenant keeps its jobs queued but assigns none and adds none.
func ExampleScheduler_SetPause() {
	s, _ := scheduler.New(scheduler.DefaultConfig())
	addJobs(s, 1, "acme-1")

	acme := scheduler.PauseRule{Tenant: "acme", AllLevels: true}
	s.SetPause(acme, true)
	sc := s.Schedule(start)
	fmt.Println("assigned:", sc.AssignJob("w1"))
	fmt.Println("added:", sc.AddJob(ck.JobPlan{Name: "acme-2", Tenant: "acme", Sources: []string{"b2"}}))
	fmt.Printf("stats: %+v\n", s.Stats().Levels)

	s.SetPause(acme, false)
	fmt.Println("assigned after resume:", s.Schedule(start).AssignJob("w1"))
	// Output:
	// assigned: false
	// added: false
	// stats: [{Level:0 Unassigned:1 InProgress:0 Excluded:0 Paused:1 Held:0}]
	// assigned after resume: true
}

// List pages through the jobs with a stable cursor.
func ExampleScheduler_List() {
	s, _ := scheduler.New(scheduler.DefaultConfig())
	sc := s.Schedule(start)
	for _, name := range []string{"j1", "j2", "j3"} {
		sc.AddJob(ck.JobPlan{Name: name, Tenant: "acme", Level: 1, Sources: []string{name + "-src"}})
	}
	tx := s.Begin(ck.Entry{Index: 1, Time: start}, start, 0)
	for _, c := range sc.Update().Changes {
		tx.Apply(&c)
	}

	tenant := "acme"
	cursor := ""
	for {
		page, next := s.List(scheduler.Filter{Tenant: &tenant, Status: ck.StatusUnassigned}, cursor, 2)
		for _, j := range page {
			fmt.Print(j.Name, " ")
		}
		fmt.Println("| next:", next)
		if next == "" {
			break
		}
		cursor = next
	}
	// Output:
	// j1 j2 | next: acme/1/j2
	// j3 | next:
}

// addJobs adds plans for the tenants' jobs at entry index, level 0.
func addJobs(s *scheduler.Scheduler, index uint64, jobs ...string) {
	sc := s.Schedule(start)
	for _, name := range jobs {
		tenant, _, _ := strings.Cut(name, "-")
		sc.AddJob(ck.JobPlan{Name: name, Tenant: tenant, Sources: []string{name + "-src"}})
	}
	tx := s.Begin(ck.Entry{Index: index, Time: start}, start, 0)
	for _, c := range sc.Update().Changes {
		tx.Apply(&c)
	}
}

// A rank orders tenants at the same level: the state machine maps priority
// classes High, Medium and Low to ranks 0, 1 and 2.
func ExampleScheduler_SetLimits() {
	s, _ := scheduler.New(scheduler.DefaultConfig())
	addJobs(s, 1, "bulk-1", "ingest-1", "web-1")
	s.SetLimits("bulk", &scheduler.Limits{Rank: 2})
	s.SetLimits("ingest", &scheduler.Limits{Rank: 1})

	sc := s.Schedule(start)
	for sc.AssignJob("w1") {
	}
	for _, c := range sc.Update().Changes {
		fmt.Println(c.Kind, c.Job)
	}
	// Output:
	// assign web-1
	// assign ingest-1
	// assign bulk-1
}

// A cap bounds a tenant's jobs in progress: its other jobs wait, and other
// tenants go first. Apply checks the cap again.
func ExampleScheduler_SetLimits_cap() {
	s, _ := scheduler.New(scheduler.DefaultConfig())
	addJobs(s, 1, "acme-1", "acme-2", "acme-3", "beta-1")
	s.SetLimits("acme", &scheduler.Limits{MaxInProgress: 1})

	sc := s.Schedule(start)
	for sc.AssignJob("w1") {
	}
	fmt.Println("acme held in this poll:", sc.Held("acme", 0))
	applyUpdate(s, ck.Entry{Index: 2, Time: start}, sc.Update())
	acme := "acme"
	running, _ := s.List(scheduler.Filter{Tenant: &acme, Status: ck.StatusInProgress}, "", 0)
	fmt.Println("acme in progress:", len(running), "capped:", s.Capped("acme"))
	fmt.Println("held jobs:", s.Stats().Levels[0].Held)
	// Output:
	// acme held in this poll: true
	//   assign acme-1: in_progress token=2
	//   assign beta-1: in_progress token=2
	// acme in progress: 1 capped: true
	// held jobs: 2
}

// A per-shard cap bounds a tenant's jobs in progress on each shard: a busy
// shard's other jobs wait while the tenant's other shards go on.
func ExampleScheduler_SetLimits_shardCap() {
	s, _ := scheduler.New(scheduler.DefaultConfig())
	s.SetLimits("acme", &scheduler.Limits{MaxPerShard: 1})
	sc := s.Schedule(start)
	for i, shard := range []uint32{7, 7, 7, 9} {
		name := fmt.Sprintf("acme-%d", i+1)
		sc.AddJob(ck.JobPlan{Name: name, Tenant: "acme", Shard: shard, Sources: []string{name + "-src"}})
	}
	applyUpdate(s, ck.Entry{Index: 1, Time: start}, sc.Update())

	sc = s.Schedule(start)
	for sc.AssignJob("w1") {
	}
	applyUpdate(s, ck.Entry{Index: 2, Time: start}, sc.Update())
	fmt.Println("shards at their cap:", s.Stats().CappedShards)
	fmt.Println("held jobs:", s.Stats().Levels[0].Held)
	// Output:
	//   add acme-1: unassigned token=1
	//   add acme-2: unassigned token=1
	//   add acme-3: unassigned token=1
	//   add acme-4: unassigned token=1
	//   assign acme-1: in_progress token=2
	//   assign acme-4: in_progress token=2
	// shards at their cap: 2
	// held jobs: 2
}

// A closed tenant (a run window that forbids starting work now, or a
// not-before time) starts nothing new: no job is added or assigned, and
// an assignment prepared before it closed is skipped. Its jobs in progress
// run to their end.
func ExampleScheduler_SetLimits_closed() {
	s, _ := scheduler.New(scheduler.DefaultConfig())
	addJobs(s, 1, "acme-1", "acme-2")
	sc := s.Schedule(start)
	sc.AssignJob("w1")
	prepared := sc.Update() // assigns acme-1

	s.SetLimits("acme", &scheduler.Limits{Closed: true})
	applyUpdate(s, ck.Entry{Index: 2, Time: start}, prepared)
	sc = s.Schedule(start)
	fmt.Println("held:", sc.Held("acme", 0))
	fmt.Println("added:", sc.AddJob(ck.JobPlan{Name: "acme-3", Tenant: "acme", Sources: []string{"b9"}}))
	fmt.Println("assigned:", sc.AssignJob("w1"))

	s.SetLimits("acme", nil)
	fmt.Println("assigned once open:", s.Schedule(start).AssignJob("w1"))
	// Output:
	//   assign acme-1: skipped (window closed: tenant "acme")
	// held: true
	// added: false
	// assigned: false
	// assigned once open: true
}
