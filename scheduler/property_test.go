package scheduler_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/scheduler"
)

var (
	workers = []string{"w1", "w2", "w3"}
	tenants = []string{"", "a", "b"}
)

func genConfig() *rapid.Generator[scheduler.Config] {
	return rapid.Custom(func(t *rapid.T) scheduler.Config {
		return scheduler.Config{
			MaxFailures:        rapid.Uint32Range(0, 3).Draw(t, "max_failures"),
			LeaseDuration:      time.Duration(rapid.IntRange(5, 20).Draw(t, "lease_s")) * time.Second,
			MaxQueueSize:       rapid.SampledFrom([]int{0, 4, 8, 12}).Draw(t, "max_queue"),
			MaxSlotsPerRequest: rapid.IntRange(1, 4).Draw(t, "max_slots"),
			AgingThreshold: rapid.SampledFrom([][]time.Duration{
				nil, {0, 30 * time.Second}, {0, 0, 20 * time.Second, 50 * time.Second}, {0, time.Minute, 0},
			}).Draw(t, "aging"),
			CompletedRetention: time.Duration(rapid.IntRange(0, 90).Draw(t, "retention_s")) * time.Second,
		}
	})
}

// sm is the state machine of the property test: the scheduler under test,
// the model, and what the workers believe they hold.
type sm struct {
	s   *scheduler.Scheduler
	m   *model
	now int64
	idx uint64
	seq int
	// held is what each worker believes: job → token. A worker whose job
	// was reassigned still believes it holds it.
	held map[string]map[string]fencing.Token
	// tokens are all tokens ever given out per job (creation and
	// assignments).
	tokens    map[string][]fencing.Token
	completed map[string]bool // names completed and still remembered by the model
	pending   []ck.PlanUpdate // prepared, not applied
	last      *applied        // the last update applied
}

type applied struct {
	u ck.PlanUpdate
	e ck.Entry
}

func (st *sm) entry() ck.Entry {
	st.idx++
	return ck.Entry{Index: st.idx, Term: 1, Time: st.now}
}

func (st *sm) newPlan(t *rapid.T) ck.JobPlan {
	st.seq++
	name := fmt.Sprintf("j%03d", st.seq)
	return ck.JobPlan{
		Name:    name,
		Tenant:  rapid.SampledFrom(tenants).Draw(t, "tenant"),
		Level:   rapid.Uint32Range(0, 3).Draw(t, "level"),
		Shard:   rapid.Uint32Range(0, 2).Draw(t, "shard"),
		Sources: []string{name + "/s1", name + "/s2"},
	}
}

// prepare runs one poll on a schedule and on the model's schedule and
// requires them to decide the same things.
func (st *sm) prepare(t *rapid.T, worker string) ck.PlanUpdate {
	before := snapshot(t, st.s)
	sc := st.s.Schedule(st.now)
	ms := st.m.schedule(st.now)

	var updates []ck.StatusUpdate
	for _, name := range slices.Sorted(maps.Keys(st.held[worker])) {
		if rapid.IntRange(0, 3).Draw(t, "report?") == 0 {
			continue
		}
		u := ck.StatusUpdate{Job: name, Token: st.held[worker][name],
			Status: ck.ReportStatus(rapid.IntRange(1, 4).Draw(t, "status"))}
		if u.Status == ck.ReportSuccess && rapid.IntRange(0, 5).Draw(t, "no_outputs?") > 0 {
			// (A success without outputs must not complete the job.)
			u.Outputs = []ck.BlockMeta{{ID: name + "/out", Tenant: "a"}}
		}
		updates = append(updates, u)
	}
	if len(st.tokens) > 0 && rapid.Bool().Draw(t, "bogus?") {
		// A stale, forged or unknown report.
		names := slices.Sorted(maps.Keys(st.tokens))
		name := rapid.SampledFrom(append(names, "ghost")).Draw(t, "bogus_job")
		tok := fencing.Token(rapid.Uint64Range(1, st.idx+2).Draw(t, "bogus_token"))
		if ts := st.tokens[name]; len(ts) > 0 && rapid.Bool().Draw(t, "old_token?") {
			tok = rapid.SampledFrom(ts).Draw(t, "old_token")
		}
		if !slices.ContainsFunc(updates, func(u ck.StatusUpdate) bool { return u.Job == name }) {
			updates = append(updates, ck.StatusUpdate{Job: name, Token: tok, Status: ck.ReportInProgress})
		}
	}
	if len(updates) > 0 && rapid.IntRange(0, 5).Draw(t, "duplicate?") == 0 {
		// A second report on a job (a malformed request): no second change.
		dup := updates[0]
		dup.Status = ck.ReportStatus(rapid.IntRange(1, 4).Draw(t, "dup_status"))
		dup.Outputs = nil
		updates = append(updates, dup)
	}
	for i := range updates {
		u := &updates[i]
		got, want := sc.UpdateJob(worker, u), ms.updateJob(worker, u)
		require.Equal(t, want, got, "UpdateJob %s token %d", u.Job, u.Token)
		if j := st.m.jobs[u.Job]; j != nil && j.st.Token != u.Token {
			require.False(t, got, "a worker whose job was reassigned gets no lease")
		}
	}
	free := rapid.Int32Range(-1, 6).Draw(t, "free")
	require.Equal(t, ms.capacity(free), sc.Capacity(free))
	slots := sc.Capacity(free)
	assign := func(n int) {
		for ; n > 0 && slots > 0; n-- {
			got, want := sc.AssignJob(worker), ms.assignJob(worker)
			require.Equal(t, want, got, "AssignJob")
			require.Equal(t, ms.changes, sc.Update().Changes)
			if !got {
				return
			}
			slots--
		}
	}
	// Assign some slots, add jobs, then assign the rest: jobs added in
	// this poll are assignable in it.
	assign(rapid.IntRange(0, slots).Draw(t, "assign_first"))
	for range rapid.IntRange(0, 3).Draw(t, "adds") {
		p := st.newPlan(t)
		if len(st.completed) > 0 && rapid.IntRange(0, 4).Draw(t, "readd?") == 0 {
			p.Name = rapid.SampledFrom(slices.Sorted(maps.Keys(st.completed))).Draw(t, "readd")
		}
		got, want := sc.AddJob(p), ms.addJob(p)
		require.Equal(t, want, got, "AddJob %s", p.Name)
		if !got {
			gotE, wantE := sc.EvictJob(), ms.evictJob()
			require.Equal(t, wantE, gotE, "EvictJob")
			if gotE {
				require.Equal(t, ms.addJob(p), sc.AddJob(p), "AddJob after evict %s", p.Name)
			}
		}
	}
	assign(slots)
	for _, tenant := range tenants {
		for level := range uint32(4) {
			require.Equal(t, ms.held(tenant, level), sc.Held(tenant, level), "Held %q %d", tenant, level)
		}
	}
	u := sc.Update()
	require.Equal(t, ms.changes, u.Changes)
	require.Equal(t, st.now, u.Time)
	for _, c := range u.Changes {
		require.NoError(t, c.Validate())
	}
	require.Equal(t, before, snapshot(t, st.s), "the view never changes the scheduler")
	return u
}

// apply applies u to both at the next entry and compares the results.
func (st *sm) apply(t *rapid.T, u ck.PlanUpdate) []scheduler.Result {
	e := st.entry()
	tx, mtx := st.s.Begin(e, st.now, u.TokenIndex), st.m.begin(e, st.now, u.TokenIndex)
	out := make([]scheduler.Result, len(u.Changes))
	for i := range u.Changes {
		c := &u.Changes[i]
		prev, _, _ := st.s.Job(c.Job)
		r, mr := tx.Apply(c), mtx.apply(c)
		require.Equal(t, mr.applied, r.Applied, "change %d %s %s: %s", i, c.Kind, c.Job, r.Why())
		require.Equal(t, c.Kind, r.Kind)
		if !r.Applied {
			require.NotEqual(t, scheduler.Skip(0), r.Reason)
			continue
		}
		require.Equal(t, mr.after, r.After, "change %d %s %s", i, c.Kind, c.Job)
		require.Equal(t, mr.prevToken, r.PrevToken, "change %d %s %s", i, c.Kind, c.Job)
		require.NotNil(t, r.Plan)
		require.Equal(t, c.Job, r.Plan.Name)
		if c.Kind == ck.ChangeAssign {
			require.NotEqual(t, ck.StatusExcluded, prev.Status, "excluded jobs are never assigned")
		}
		st.track(c, r)
		out[i] = r
	}
	st.last = &applied{u: u, e: e}
	return out
}

// track updates the workers' beliefs after an applied change.
func (st *sm) track(c *ck.Change, r scheduler.Result) {
	switch c.Kind {
	case ck.ChangeAdd:
		st.tokens[c.Job] = append(st.tokens[c.Job], r.After.Token)
	case ck.ChangeAssign:
		st.tokens[c.Job] = append(st.tokens[c.Job], r.After.Token)
		st.held[c.Worker][c.Job] = r.After.Token
	case ck.ChangeComplete, ck.ChangeFail, ck.ChangeRelease:
		delete(st.held[c.Worker], c.Job)
	}
	if c.Kind == ck.ChangeComplete {
		st.completed[c.Job] = true
	}
}

func (st *sm) check(t *rapid.T) {
	// Same jobs, field by field, in the same order.
	var want []ck.JobState
	for _, j := range st.m.sorted() {
		want = append(want, j.st)
	}
	slices.SortStableFunc(want, func(a, b ck.JobState) int {
		if a.Tenant != b.Tenant {
			return cmpStr(a.Tenant, b.Tenant)
		}
		if a.Level != b.Level {
			return int(a.Level) - int(b.Level)
		}
		return cmpStr(a.Name, b.Name)
	})
	got := listAll(st.s)
	if len(want) == 0 {
		want = nil
	}
	require.Equal(t, want, got)
	require.Equal(t, len(want), st.s.Len())

	// Counters and per-level statistics.
	stats := st.s.Stats()
	require.Equal(t, st.m.c, stats.Counters)
	levels := map[uint32]*scheduler.LevelStats{}
	for _, j := range st.m.jobs {
		l := scheduler.TallyLevel(levels, j.st.Level, j.st.Status)
		if st.m.paused(j.st.Tenant, j.st.Level) {
			l.Paused++
		}
		if j.st.Status == ck.StatusUnassigned && (st.m.closed(j.st.Tenant, j.st.Level) || st.m.capped(j.st.Tenant, 0) || st.m.shardCapped(j.st.Tenant, j.plan.Shard, 0)) {
			l.Held++
		}
	}
	var wantLevels []scheduler.LevelStats
	for _, level := range slices.Sorted(maps.Keys(levels)) {
		wantLevels = append(wantLevels, *levels[level])
	}
	require.Equal(t, wantLevels, stats.Levels)
	require.Equal(t, len(st.m.done), stats.Completed)

	// Tenant policies: effective policy, jobs in progress, capped.
	require.Equal(t, st.m.def, stats.DefaultLimits)
	require.Equal(t, len(st.m.pols), stats.OwnLimits)
	var cappedTenants, cappedShards int
	for _, tenant := range tenants {
		require.Equal(t, st.m.policy(tenant), st.s.Limits(tenant), "tenant %q", tenant)
		require.Equal(t, st.m.inProgress(tenant), st.s.InProgress(tenant), "tenant %q", tenant)
		capped := st.m.capped(tenant, 0)
		require.Equal(t, capped, st.s.Capped(tenant), "tenant %q", tenant)
		if capped {
			cappedTenants++
		}
		// Per-shard caps: the shards the generator draws (0-2).
		for shard := range uint32(3) {
			capped := st.m.shardCapped(tenant, shard, 0)
			require.Equal(t, capped, st.s.ShardCapped(tenant, shard), "tenant %q shard %d", tenant, shard)
			if capped {
				cappedShards++
			}
			if st.m.policy(tenant).MaxPerShard > 0 {
				n := 0
				for _, j := range st.m.jobs {
					if j.st.Tenant == tenant && j.plan.Shard == shard && j.st.Status == ck.StatusInProgress {
						n++
					}
				}
				require.Equal(t, n, st.s.ShardInProgress(tenant, shard), "tenant %q shard %d", tenant, shard)
			}
		}
	}
	require.Equal(t, cappedTenants, stats.CappedTenants)
	require.Equal(t, cappedShards, stats.CappedShards)
	require.NoError(t, scheduler.CheckDerived(st.s))

	// Completions: remembered with their token, and never back in the queue.
	for name, d := range st.m.done {
		tok, ok := st.s.CompletedToken(name)
		require.True(t, ok, name)
		require.Equal(t, d.token, tok)
		_, _, exists := st.s.Job(name)
		require.False(t, exists, "completed job %s reappeared", name)
	}
	for name := range st.completed {
		if _, ok := st.m.done[name]; !ok {
			delete(st.completed, name)
		}
	}

	// At most one token is accepted per job, and only the current one of a
	// job in progress.
	for _, name := range slices.Sorted(maps.Keys(st.tokens)) {
		accepted := 0
		for _, tok := range slices.Compact(slices.Sorted(slices.Values(st.tokens[name]))) {
			if st.s.Schedule(st.now).UpdateJob("probe", &ck.StatusUpdate{Job: name, Token: tok, Status: ck.ReportInProgress}) {
				accepted++
				j := st.m.jobs[name]
				require.NotNil(t, j)
				require.Equal(t, ck.StatusInProgress, j.st.Status)
				require.Equal(t, j.st.Token, tok)
			}
		}
		require.LessOrEqual(t, accepted, 1, "job %s", name)
	}
}

// genPolicy draws a tenant policy: mostly open, ranks 0-2, caps 0-2,
// per-shard caps 0-2.
func genPolicy() *rapid.Generator[scheduler.Limits] {
	return rapid.Custom(func(t *rapid.T) scheduler.Limits {
		return scheduler.Limits{
			Rank:          rapid.Uint8Range(0, 2).Draw(t, "rank"),
			MaxInProgress: rapid.Uint32Range(0, 2).Draw(t, "cap"),
			MaxPerShard:   rapid.Uint32Range(0, 2).Draw(t, "shardCap"),
			Closed:        rapid.IntRange(0, 3).Draw(t, "closed") == 0,
			ClosedLevels:  uint64(rapid.IntRange(0, 7).Draw(t, "closedLevels")) * uint64(rapid.IntRange(0, 1).Draw(t, "someLevelsClosed")),
		}
	})
}

// installPolicies installs the model's policies on r, as the state
// machine does after a restore: the default, then the tenants' own in
// order.
func (st *sm) installPolicies(r *scheduler.Scheduler) {
	r.SetDefaultLimits(st.m.def)
	for _, tenant := range slices.Sorted(maps.Keys(st.m.pols)) {
		p := st.m.pols[tenant]
		r.SetLimits(tenant, &p)
	}
}

// nextSchedule is what a poll prepared on s at now decides, with every
// tenant's Held answers before and after: assignments for one worker until
// none is left (at most 8), an add per tenant, then assignments again.
func nextSchedule(t require.TestingT, s *scheduler.Scheduler, now int64, seq int) []string {
	sc := s.Schedule(now)
	var out []string
	held := func() {
		for _, tenant := range tenants {
			for level := range uint32(4) {
				out = append(out, fmt.Sprintf("held %q %d: %t", tenant, level, sc.Held(tenant, level)))
			}
		}
	}
	held()
	for range 8 {
		if !sc.AssignJob("w9") {
			break
		}
	}
	for i, tenant := range tenants {
		name := fmt.Sprintf("k%03d-%d", seq, i)
		out = append(out, fmt.Sprintf("add %s: %t", name, sc.AddJob(ck.JobPlan{Name: name, Tenant: tenant, Sources: []string{name + "/s"}})))
	}
	for range 8 {
		if !sc.AssignJob("w9") {
			break
		}
	}
	held()
	for _, c := range sc.Update().Changes {
		out = append(out, fmt.Sprintf("%s %s v=%d w=%s", c.Kind, c.Job, c.Version, c.Worker))
	}
	return out
}

func cmpStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestSchedulerModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := genConfig().Draw(t, "config")
		s, err := scheduler.New(cfg)
		require.NoError(t, err)
		st := &sm{s: s, m: newModel(cfg), now: t0, held: map[string]map[string]fencing.Token{},
			tokens: map[string][]fencing.Token{}, completed: map[string]bool{}}
		for _, w := range workers {
			st.held[w] = map[string]fencing.Token{}
		}
		t.Repeat(map[string]func(*rapid.T){
			"": st.check,
			"poll": func(t *rapid.T) {
				u := st.prepare(t, rapid.SampledFrom(workers).Draw(t, "worker"))
				if rapid.IntRange(0, 3).Draw(t, "two-commit?") == 0 {
					// Two-commit mode: the prepare step is an entry of its
					// own, whose index the tokens take.
					u.TokenIndex = st.entry().Index
				}
				if rapid.IntRange(0, 5).Draw(t, "defer?") == 0 {
					st.pending = append(st.pending, u)
					return
				}
				st.apply(t, u)
			},
			"apply-pending": func(t *rapid.T) {
				if len(st.pending) == 0 {
					// rapid: the action does not apply now; another is drawn.
					// Not a skipped test: rapid draws another action.
					t.Skip("nothing pending")
				}
				i := rapid.IntRange(0, len(st.pending)-1).Draw(t, "pending")
				u := st.pending[i]
				st.pending = slices.Delete(st.pending, i, i+1)
				st.apply(t, u)
			},
			"two-schedules": func(t *rapid.T) {
				// Two polls prepared on one view, applied in either order,
				// never give one job to two workers.
				ua := st.prepare(t, "w1")
				ub := st.prepare(t, "w2")
				if rapid.Bool().Draw(t, "b-first?") {
					ua, ub = ub, ua
				}
				ra, rb := st.apply(t, ua), st.apply(t, ub)
				taken := map[string]string{}
				for i, r := range append(ra, rb...) {
					if r.Applied && r.Kind == ck.ChangeAssign {
						_, dup := taken[r.After.Name]
						require.False(t, dup, "job %s assigned twice (%d)", r.After.Name, i)
						taken[r.After.Name] = r.After.Worker
					}
				}
			},
			"time": func(t *rapid.T) {
				st.now += int64(time.Duration(rapid.IntRange(0, 25).Draw(t, "seconds")) * time.Second)
			},
			"time-to-boundary": func(t *rapid.T) {
				// Land exactly on (or just past) a lease deadline or an
				// aging threshold.
				var marks []int64
				for _, j := range st.m.jobs {
					switch j.st.Status {
					case ck.StatusInProgress:
						marks = append(marks, j.st.Deadline)
					case ck.StatusUnassigned:
						if thr := st.m.threshold(j.st.Level); thr > 0 {
							marks = append(marks, j.st.AddedAt+int64(thr))
						}
					}
				}
				slices.Sort(marks)
				i := slices.IndexFunc(marks, func(m int64) bool { return m >= st.now })
				if i < 0 {
					// rapid: the action does not apply now; another is drawn.
					// Not a skipped test: rapid draws another action.
					t.Skip("no boundary ahead")
				}
				st.now = marks[i] + rapid.Int64Range(0, 1).Draw(t, "past")
			},
			"expire": func(t *rapid.T) {
				require.Equal(t, st.m.expire(st.now), st.s.Expire(st.now))
			},
			"extend-leases": func(t *rapid.T) {
				require.Equal(t, st.m.extendLeases(st.now), st.s.ExtendLeases(st.entry(), st.now))
			},
			"cancel": func(t *rapid.T) {
				names := slices.Sorted(maps.Keys(st.m.jobs))
				name := rapid.SampledFrom(append(names, "ghost")).Draw(t, "job")
				r, err := st.s.Cancel(st.entry(), st.now, name)
				if _, ok := st.m.jobs[name]; !ok {
					require.ErrorIs(t, err, scheduler.ErrUnknownJob)
					return
				}
				require.NoError(t, err)
				mr := st.m.cancel(name)
				require.Equal(t, mr.prevToken, r.PrevToken)
				require.Equal(t, name, r.Plan.Name)
			},
			"retry": func(t *rapid.T) {
				name := ""
				if rapid.Bool().Draw(t, "one?") {
					var excluded []string
					for n, j := range st.m.jobs {
						if j.st.Status == ck.StatusExcluded {
							excluded = append(excluded, n)
						}
					}
					if len(excluded) == 0 {
						// rapid: the action does not apply now; another is drawn.
						// Not a skipped test: rapid draws another action.
						t.Skip("nothing excluded")
					}
					slices.Sort(excluded)
					name = rapid.SampledFrom(excluded).Draw(t, "job")
				}
				by := rapid.SampledFrom([]string{"", "alice"}).Draw(t, "by")
				e := st.entry()
				n, err := st.s.Retry(e, st.now, name, by)
				require.NoError(t, err)
				require.Equal(t, st.m.retry(e, st.now, name, by), n)
			},
			"pause": func(t *rapid.T) {
				tenant := rapid.SampledFrom([]string{"", "a", "b"}).Draw(t, "tenant")
				var level *uint32
				if rapid.Bool().Draw(t, "level?") {
					l := rapid.Uint32Range(0, 3).Draw(t, "level")
					level = &l
				}
				on := rapid.Bool().Draw(t, "on")
				r := scheduler.PauseRule{Tenant: tenant, AllTenants: tenant == "", AllLevels: level == nil}
				if level != nil {
					r.Level = *level
				}
				st.s.SetPause(r, on)
				if on {
					st.m.rules[r] = true
				} else {
					delete(st.m.rules, r)
				}
			},
			"config": func(t *rapid.T) {
				cfg := genConfig().Draw(t, "config")
				require.NoError(t, st.s.SetConfig(cfg))
				st.m.cfg = cfg
			},
			"restore": func(t *rapid.T) {
				r := restored(t, snapshot(t, st.s))
				// The policies are not in the snapshot: the state machine
				// installs them again.
				st.installPolicies(r)
				require.Equal(t, st.s.Stats(), r.Stats())
				require.Equal(t, st.s.Config(), r.Config())
				require.Equal(t, listAll(st.s), listAll(r))
				// The next schedule decides the same on both.
				require.Equal(t, nextSchedule(t, st.s, st.now, st.seq), nextSchedule(t, r, st.now, st.seq))
				st.s = r
			},
			"policy": func(t *rapid.T) {
				tenant := rapid.SampledFrom(tenants).Draw(t, "tenant")
				p := genPolicy().Draw(t, "policy")
				st.s.SetLimits(tenant, &p)
				st.m.pols[tenant] = p
			},
			"default-policy": func(t *rapid.T) {
				p := genPolicy().Draw(t, "policy")
				st.s.SetDefaultLimits(p)
				st.m.def = p
			},
			"clear-policy": func(t *rapid.T) {
				tenant := rapid.SampledFrom(tenants).Draw(t, "tenant")
				st.s.SetLimits(tenant, nil)
				delete(st.m.pols, tenant)
			},
			"reapply": func(t *rapid.T) {
				if st.last == nil {
					// rapid: the action does not apply now; another is drawn.
					// Not a skipped test: rapid draws another action.
					t.Skip("nothing applied")
				}
				before := snapshot(t, st.s)
				tx := st.s.Begin(st.last.e, st.now, st.last.u.TokenIndex)
				for i := range st.last.u.Changes {
					require.False(t, tx.Apply(&st.last.u.Changes[i]).Applied)
				}
				require.Equal(t, before, snapshot(t, st.s), "applying an entry twice changes nothing")
			},
		})
	})
}
