package scheduler_test

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/internal/transcript"
	"github.com/compactkit/compactkit/scheduler"
)

// TestTranscripts replays testdata/*.txt: scenarios of the scheduler
// driven the way the state machine drives it. Rewrite the expected
// outputs with
//
//	go test ./scheduler -run TestTranscripts -rewrite
//
// and review the diff.
//
// Commands (times are durations since the start, t0; tokens and versions
// are entry indexes):
//
//	new [lease=15s] [max-queue=N] [max-failures=N] [max-slots=N] [retention=D] [aging=(D,...)]
//	                                     a scheduler with the default config, aging off
//	config <same keys>                   SetConfig with the current config so changed
//	advance <duration>                   move the clock
//	add <plan>... [tenant=t] [level=0] [n=N]
//	                                     add jobs in one entry; the input holds one
//	                                     plan a line; with n, <plan> is a prefix of N jobs
//	poll <worker> [slots=N] [report=(<job>:<status>[@token],...)] [changes]
//	                                     prepare a poll as the state machine does (reports,
//	                                     assignments, no additions) and apply it; with
//	                                     changes, print the changes prepared too
//	open <schedule>                      open a schedule at the current time
//	on <schedule> add|assign|evict|report|capacity|job|paused|completed ...
//	                                     call a method of an open schedule
//	update <schedule>                    take its update, kept under the schedule's name
//	change <update> kind=K job=J [version=V|cur] [token=T|cur] [worker=W] [plan=P]
//	                                     append a hand-made change to an update
//	apply <update> [token-index=N] [index=same|N]
//	                                     apply an update at the next entry (or at the same
//	                                     entry as the last apply, or at index N)
//	cancel <job> | retry [job] | pause|resume [tenant=T] [level=L] | extend | expire
//	                                     operator commands and upkeep, each one entry
//	job <job> | jobs [tenant=] [level=] [status=] [limit=N]
//	list [cursor=C|next] [limit=N]      one page; next is the cursor the last list returned
//	stats | paused <tenant> <level> | owns <job> <token> [worker=W] | completed <job>
//	policy [default|clear] [tenant=T] [rank=R] [cap=N] [shardcap=N] [closed=BOOL]
//	                                     SetTenantPolicy (from the tenant's effective
//	                                     policy so changed), SetDefaultPolicy (from the
//	                                     default so changed) or ClearTenantPolicy
//	tenant <tenant>...                   effective policy, jobs in progress, capped
//	shard <tenant> <shard>               jobs in progress on the shard, shard capped
//	on <schedule> held <tenant> <level>  Schedule.Held
//	mark <name> | unchanged <name>       compare snapshots
//	entry                                use up an entry (say, a prepare entry)
//
// A <plan> is name[@tenant][:level][/shard] (shard 1 unless given); a cleanup-only plan is
// name!<tombstone> (shard any, no sources).
func TestTranscripts(t *testing.T) {
	transcript.Walk(t, "testdata/transcripts/*.txt", func(t *testing.T) transcript.Handler {
		e := &env{t: t, now: t0}
		return e.handle
	})
}

type env struct {
	t       *testing.T
	cfg     scheduler.Config
	s       *scheduler.Scheduler
	idx     uint64
	last    ck.Entry
	now     int64
	scheds  map[string]*scheduler.Schedule
	updates map[string]*ck.PlanUpdate
	marks   map[string][]byte
	next    string // the cursor the last list returned
}

func (e *env) entry() ck.Entry {
	e.idx++
	e.last = ck.Entry{Index: e.idx, Term: 1, Time: e.now}
	return e.last
}

func (e *env) handle(c *transcript.Command) string {
	if e.s == nil && c.Name != "new" {
		e.init(c, testConfig())
	}
	var b strings.Builder
	switch c.Name {
	case "new":
		e.init(c, testConfig())
	case "config":
		cfg := e.s.Config()
		e.configure(c, &cfg)
		if err := e.s.SetConfig(cfg); err != nil {
			fmt.Fprintf(&b, "error: %v", err)
		}
	case "advance":
		e.now += int64(c.ParseDuration(e.pos(c, 0)))
		fmt.Fprintf(&b, "now=%s", e.rel(e.now))
	case "add":
		sc := e.s.Schedule(e.now)
		for _, p := range e.plans(c) {
			if !sc.AddJob(p) {
				fmt.Fprintf(&b, "add %s: refused\n", p.Name)
			}
		}
		e.results(&b, sc.Update(), e.entry(), 0)
	case "poll":
		w := e.pos(c, 0)
		sc := e.s.Schedule(e.now)
		for _, spec := range c.Vals("report") {
			u := e.report(c, spec, true)
			if !sc.UpdateJob(w, &u) {
				fmt.Fprintf(&b, "report %s: refused\n", spec)
			}
		}
		for range sc.Capacity(int32(c.Int("slots", 0))) {
			if !sc.AssignJob(w) {
				break
			}
		}
		u := sc.Update()
		if c.Has("changes") {
			for _, ch := range u.Changes {
				b.WriteString("change: " + change(&ch) + "\n")
			}
		}
		e.results(&b, u, e.entry(), 0)
	case "open":
		e.scheds[e.pos(c, 0)] = e.s.Schedule(e.now)
	case "on":
		e.on(c, &b)
	case "update":
		name := e.pos(c, 0)
		u := e.sched(c, name).Update()
		e.updates[name] = &u
		for _, ch := range u.Changes {
			b.WriteString(change(&ch) + "\n")
		}
	case "change":
		e.change(c)
	case "apply":
		u, ok := e.updates[e.pos(c, 0)]
		if !ok {
			c.Fatalf("no update %s", e.pos(c, 0))
		}
		var en ck.Entry
		switch ix := c.Str("index", ""); ix {
		case "":
			en = e.entry()
		case "same":
			en = e.last
		default:
			i, err := strconv.ParseUint(ix, 10, 64)
			if err != nil {
				c.Fatalf("index: %v", err)
			}
			en = ck.Entry{Index: i, Term: 1, Time: e.now}
		}
		e.results(&b, *u, en, uint64(c.Int("token-index", int64(u.TokenIndex))))
	case "cancel":
		r, err := e.s.Cancel(e.entry(), e.now, e.pos(c, 0))
		if err != nil {
			fmt.Fprintf(&b, "error: %v", err)
			break
		}
		b.WriteString(e.result(r, e.pos(c, 0)))
	case "retry":
		name := ""
		if p := c.Positional(); len(p) > 0 {
			name = p[0]
		}
		n, err := e.s.Retry(e.entry(), e.now, name, "")
		if err != nil {
			fmt.Fprintf(&b, "error: %v", err)
			break
		}
		fmt.Fprintf(&b, "retried %d", n)
	case "pause", "resume":
		// No tenant: every tenant; no level: every level.
		r := scheduler.PauseRule{Tenant: c.Str("tenant", ""), AllTenants: !c.Has("tenant"), AllLevels: !c.Has("level")}
		r.Level = uint32(c.Int("level", 0))
		e.entry() // a pause is an entry of the log
		e.s.SetPause(r, c.Name == "pause")
	case "extend":
		fmt.Fprintf(&b, "extended %d", e.s.ExtendLeases(e.entry(), e.now))
	case "expire":
		fmt.Fprintf(&b, "expired %d", e.s.Expire(e.now))
	case "job":
		for _, name := range c.Positional() {
			st, _, ok := e.s.Job(name)
			if !ok {
				fmt.Fprintf(&b, "%s: unknown\n", name)
				continue
			}
			b.WriteString(e.state(st) + "\n")
		}
	case "jobs":
		e.jobs(c, &b)
	case "list":
		cursor := c.Str("cursor", "")
		if cursor == "next" {
			cursor = e.next
		}
		page, next := e.s.List(scheduler.Filter{}, cursor, int(c.Int("limit", 0)))
		e.next = next
		names := []string{"(none)"}
		for i, st := range page {
			if i == 0 {
				names = nil
			}
			names = append(names, st.Name)
		}
		fmt.Fprintf(&b, "%s\nnext=%s", strings.Join(names, " "), next)
	case "stats":
		e.stats(&b)
	case "paused":
		level, _ := strconv.ParseUint(e.pos(c, 1), 10, 32)
		fmt.Fprintf(&b, "%t", e.s.Paused(e.pos(c, 0), uint32(level)))
	case "policy":
		e.policy(c)
	case "tenant":
		for _, t := range c.Positional() {
			p := e.s.TenantPolicy(t)
			fmt.Fprintf(&b, "%s: rank=%d cap=%d", t, p.Rank, p.MaxInProgress)
			if p.MaxPerShard > 0 {
				fmt.Fprintf(&b, " shardcap=%d", p.MaxPerShard)
			}
			fmt.Fprintf(&b, " closed=%t in_progress=%d capped=%t\n", p.Closed, e.s.InProgress(t), e.s.Capped(t))
		}
	case "shard":
		shard, err := strconv.ParseUint(e.pos(c, 1), 10, 32)
		if err != nil {
			c.Fatalf("shard: %v", err)
		}
		t := e.pos(c, 0)
		fmt.Fprintf(&b, "%s/%d: in_progress=%d capped=%t", t, shard, e.s.ShardInProgress(t, uint32(shard)), e.s.ShardCapped(t, uint32(shard)))
	case "owns":
		// Reported by the job's worker, or by worker=W.
		tok, _ := strconv.ParseUint(e.pos(c, 1), 10, 64)
		st, _, _ := e.s.Job(e.pos(c, 0))
		ok := e.s.Schedule(e.now).UpdateJob(c.Str("worker", st.Worker), &ck.StatusUpdate{Job: e.pos(c, 0), Token: fencing.Token(tok), Status: ck.ReportInProgress})
		fmt.Fprintf(&b, "%t", ok)
	case "completed":
		tok, ok := e.s.CompletedToken(e.pos(c, 0))
		fmt.Fprintf(&b, "%t token=%d", ok, tok)
	case "entry":
		fmt.Fprintf(&b, "index=%d", e.entry().Index)
	case "mark":
		e.marks[e.pos(c, 0)] = e.snapshot()
	case "unchanged":
		if bytes.Equal(e.marks[e.pos(c, 0)], e.snapshot()) {
			b.WriteString("unchanged")
		} else {
			b.WriteString("changed")
		}
	default:
		c.Fatalf("unknown command")
	}
	return b.String()
}

func (e *env) init(c *transcript.Command, cfg scheduler.Config) {
	e.configure(c, &cfg)
	s, err := scheduler.New(cfg)
	if err != nil {
		c.Fatalf("%v", err)
	}
	*e = env{t: e.t, cfg: cfg, s: s, now: t0, scheds: map[string]*scheduler.Schedule{},
		updates: map[string]*ck.PlanUpdate{}, marks: map[string][]byte{}}
}

func (e *env) configure(c *transcript.Command, cfg *scheduler.Config) {
	if c.Name != "new" && c.Name != "config" {
		return
	}
	c.Only("lease", "max-queue", "max-failures", "max-slots", "retention", "aging")
	cfg.LeaseDuration = c.Duration("lease", cfg.LeaseDuration)
	cfg.MaxQueueSize = int(c.Int("max-queue", int64(cfg.MaxQueueSize)))
	cfg.MaxFailures = uint32(c.Int("max-failures", int64(cfg.MaxFailures)))
	cfg.MaxSlotsPerRequest = int(c.Int("max-slots", int64(cfg.MaxSlotsPerRequest)))
	cfg.CompletedRetention = c.Duration("retention", cfg.CompletedRetention)
	if c.Has("aging") {
		cfg.AgingThreshold = nil
		for _, d := range c.Vals("aging") {
			cfg.AgingThreshold = append(cfg.AgingThreshold, c.ParseDuration(d))
		}
	}
}

func (e *env) pos(c *transcript.Command, i int) string {
	p := c.Positional()
	if i >= len(p) {
		c.Fatalf("want %d positional arguments", i+1)
	}
	return p[i]
}

func (e *env) sched(c *transcript.Command, name string) *scheduler.Schedule {
	sc, ok := e.scheds[name]
	if !ok {
		c.Fatalf("no schedule %s", name)
	}
	return sc
}

// rel formats a log time as the duration since t0.
func (e *env) rel(t int64) string { return time.Duration(t - t0).String() }

// parsePlan parses name[@tenant][:level] or name!tombstone.
func parsePlan(spec, tenant string, level uint32) ck.JobPlan {
	if name, target, ok := strings.Cut(spec, "!"); ok {
		return ck.JobPlan{Name: name, Shard: ck.AnyShard, Tombstones: []ck.Tombstone{{Kind: ck.TombstoneBlock, Target: target}}}
	}
	shard, hasShard := uint32(0), false
	if s, sh, ok := strings.Cut(spec, "/"); ok {
		n, err := strconv.ParseUint(sh, 10, 32)
		if err != nil {
			panic(err)
		}
		spec, shard, hasShard = s, uint32(n), true
	}
	if s, l, ok := strings.Cut(spec, ":"); ok {
		n, err := strconv.ParseUint(l, 10, 32)
		if err != nil {
			panic(err)
		}
		spec, level = s, uint32(n)
	}
	if s, t, ok := strings.Cut(spec, "@"); ok {
		spec, tenant = s, t
	}
	p := plan(spec, tenant, level)
	if hasShard {
		p.Shard = shard
	}
	return p
}

func (e *env) plans(c *transcript.Command) []ck.JobPlan {
	c.Only("tenant", "level", "n")
	tenant, level := c.Str("tenant", "t"), uint32(c.Int("level", 0))
	specs := c.Positional()
	if c.Input != "" {
		specs = append(specs, strings.Fields(c.Input)...)
	}
	var out []ck.JobPlan
	for _, spec := range specs {
		if c.Has("n") {
			out = append(out, plans(spec, tenant, level, int(c.Int("n", 0)))...)
			continue
		}
		out = append(out, parsePlan(spec, tenant, level))
	}
	return out
}

var reportStatus = map[string]ck.ReportStatus{
	"in_progress": ck.ReportInProgress, "success": ck.ReportSuccess,
	"failure": ck.ReportFailure, "released": ck.ReportReleased,
}

// report parses <job>:<status>[@token]: the token is the job's current
// one unless given; a success carries one output unless outputs is false.
func (e *env) report(c *transcript.Command, spec string, outputs bool) ck.StatusUpdate {
	spec, tok, hasTok := strings.Cut(spec, "@")
	name, status, ok := strings.Cut(spec, ":")
	st, ok2 := reportStatus[status]
	if !ok || !ok2 {
		c.Fatalf("report %q: want <job>:<status>[@token]", spec)
	}
	u := ck.StatusUpdate{Job: name, Status: st}
	js, _, known := e.s.Job(name)
	if known {
		u.Token = js.Token
	}
	if hasTok {
		n, err := strconv.ParseUint(tok, 10, 64)
		if err != nil {
			c.Fatalf("report %q: %v", spec, err)
		}
		u.Token = fencing.Token(n)
	}
	if st == ck.ReportSuccess && outputs {
		u.Outputs = []ck.BlockMeta{{ID: name + "-out", Tenant: "t", Level: js.Level + 1}}
	}
	return u
}

func (e *env) on(c *transcript.Command, b *strings.Builder) {
	sc := e.sched(c, e.pos(c, 0))
	args := c.Positional()[1:]
	if len(args) == 0 {
		c.Fatalf("on <schedule> <method> ...")
	}
	switch m, args := args[0], args[1:]; m {
	case "add":
		for _, spec := range args {
			p := parsePlan(spec, "t", 0)
			fmt.Fprintf(b, "add %s: %t\n", p.Name, sc.AddJob(p))
		}
	case "assign":
		for i := range int(c.Int("n", 1)) {
			_ = i
			fmt.Fprintf(b, "assign %s: %t\n", args[0], sc.AssignJob(args[0]))
		}
	case "evict":
		fmt.Fprintf(b, "evict: %t", sc.EvictJob())
	case "report":
		for _, spec := range args[1:] {
			u := e.report(c, spec, c.Str("outputs", "") != "none")
			fmt.Fprintf(b, "report %s: %t\n", spec, sc.UpdateJob(args[0], &u))
		}
	case "capacity":
		for _, a := range args {
			n, _ := strconv.ParseInt(a, 10, 32)
			fmt.Fprintf(b, "capacity %d: %d\n", n, sc.Capacity(int32(n)))
		}
	case "job":
		for _, name := range args {
			st, _, ok := sc.Job(name)
			if !ok {
				fmt.Fprintf(b, "%s: unknown\n", name)
				continue
			}
			b.WriteString(e.state(st) + "\n")
		}
	case "paused":
		level, _ := strconv.ParseUint(args[1], 10, 32)
		fmt.Fprintf(b, "%t", sc.Paused(args[0], uint32(level)))
	case "held":
		level, _ := strconv.ParseUint(args[1], 10, 32)
		fmt.Fprintf(b, "%t", sc.Held(args[0], uint32(level)))
	case "completed":
		tok, ok := sc.CompletedToken(args[0])
		fmt.Fprintf(b, "%t token=%d", ok, tok)
	default:
		c.Fatalf("unknown schedule method %s", m)
	}
}

var changeKinds = map[string]ck.ChangeKind{}

func init() {
	for k := ck.ChangeAdd; k <= ck.ChangeCancel; k++ {
		changeKinds[k.String()] = k
	}
}

// change appends a hand-made change to an update: what a stale, hostile or
// mistaken leader could propose.
func (e *env) change(c *transcript.Command) {
	c.Only("kind", "job", "version", "token", "worker", "plan")
	name := e.pos(c, 0)
	u := e.updates[name]
	if u == nil {
		u = &ck.PlanUpdate{}
		e.updates[name] = u
	}
	kind, ok := changeKinds[c.Str("kind", "")]
	if !ok {
		n, err := strconv.ParseUint(c.Str("kind", ""), 10, 8)
		if err != nil {
			c.Fatalf("kind %q", c.Str("kind", ""))
		}
		kind = ck.ChangeKind(n)
	}
	ch := ck.Change{Kind: kind, Job: c.Str("job", ""), Worker: c.Str("worker", "")}
	st, _, _ := e.s.Job(ch.Job)
	cur := func(key string, v uint64) uint64 {
		switch s := c.Str(key, ""); s {
		case "":
			return 0
		case "cur":
			return v
		default:
			n, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				c.Fatalf("%s: %v", key, err)
			}
			return n
		}
	}
	ch.Version = cur("version", st.Version)
	ch.Token = fencing.Token(cur("token", uint64(st.Token)))
	if p := c.Str("plan", ""); p != "" {
		ch.Plan = &ck.JobPlan{Name: p, Sources: []string{p + "/src"}}
	}
	u.Changes = append(u.Changes, ch)
}

// results applies u at entry en and writes a line for each change.
func (e *env) results(b *strings.Builder, u ck.PlanUpdate, en ck.Entry, tokenIndex uint64) {
	tx := e.s.Begin(en, e.now, tokenIndex)
	for i := range u.Changes {
		b.WriteString(e.result(tx.Apply(&u.Changes[i]), u.Changes[i].Job) + "\n")
	}
}

// result is one line: the change, applied or skipped (with the reason),
// the job's state before and after, the attempt it ended, whether it
// carries the plan.
func (e *env) result(r scheduler.Result, name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s:", r.Kind, name)
	if !r.Applied {
		fmt.Fprintf(&b, " skipped (%s)", r.Why())
		if r.Before.Name != "" {
			fmt.Fprintf(&b, " before=%s", r.Before.Status)
		}
		return b.String()
	}
	if r.Before.Name == "" {
		b.WriteString(" new ->")
	} else {
		fmt.Fprintf(&b, " %s ->", r.Before.Status)
	}
	if r.After.Name == "" {
		b.WriteString(" removed")
	} else {
		b.WriteString(" " + e.state(r.After))
	}
	if r.PrevToken != 0 {
		fmt.Fprintf(&b, " prev=%d", r.PrevToken)
	}
	switch {
	case r.Plan == nil:
		b.WriteString(" no-plan")
	case r.After.Name == "":
		b.WriteString(" plan=" + r.Plan.Name) // a removed job's plan
	}
	return b.String()
}

// state formats a job: name tenant/level status, token, version,
// failures, worker and deadline.
func (e *env) state(st ck.JobState) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s/%d %s tok=%d v=%d fail=%d", st.Name, st.Tenant, st.Level, st.Status, st.Token, st.Version, st.Failures)
	if st.Worker != "" {
		fmt.Fprintf(&b, " w=%s", st.Worker)
	}
	if st.Deadline != 0 {
		fmt.Fprintf(&b, " deadline=%s", e.rel(st.Deadline))
	}
	if st.LastFailure != "" {
		fmt.Fprintf(&b, " last=%q", st.LastFailure)
	}
	return b.String()
}

func change(c *ck.Change) string {
	s := fmt.Sprintf("%s %s v=%d", c.Kind, c.Job, c.Version)
	if c.Token != 0 {
		s += fmt.Sprintf(" tok=%d", c.Token)
	}
	if c.Worker != "" {
		s += " w=" + c.Worker
	}
	for _, o := range c.Outputs {
		s += fmt.Sprintf(" output=%s/%s/%d", o.ID, o.Tenant, o.Level)
	}
	return s
}

// jobs lists the jobs page by page, checking each page's size.
func (e *env) jobs(c *transcript.Command, b *strings.Builder) {
	c.Only("tenant", "level", "status", "limit")
	var f scheduler.Filter
	if c.Has("tenant") {
		t := c.Str("tenant", "")
		f.Tenant = &t
	}
	if c.Has("level") {
		l := uint32(c.Int("level", 0))
		f.Level = &l
	}
	if s := c.Str("status", ""); s != "" {
		for st := ck.StatusUnassigned; st <= ck.StatusExcluded; st++ {
			if st.String() == s {
				f.Status = st
			}
		}
	}
	limit := int(c.Int("limit", 7))
	cursor, pages := "", 0
	for {
		page, next := e.s.List(f, cursor, limit)
		pages++
		if len(page) > max(limit, 1) {
			fmt.Fprintf(b, "page of %d jobs, limit %d\n", len(page), limit)
		}
		for _, st := range page {
			b.WriteString(e.state(st) + "\n")
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if b.Len() == 0 {
		b.WriteString("(none)")
	}
}

func (e *env) stats(b *strings.Builder) {
	st := e.s.Stats()
	fmt.Fprintf(b, "jobs=%d completed=%d\n", st.Jobs, st.Completed)
	for _, l := range st.Levels {
		fmt.Fprintf(b, "level %d: unassigned=%d in_progress=%d excluded=%d paused=%d", l.Level, l.Unassigned, l.InProgress, l.Excluded, l.Paused)
		if l.Held != 0 {
			fmt.Fprintf(b, " held=%d", l.Held)
		}
		b.WriteString("\n")
	}
	for _, p := range st.Paused {
		fmt.Fprintf(b, "paused: %+v\n", p)
	}
	if st.Policies != (scheduler.PolicyStats{}) {
		d := st.Policies.Default
		fmt.Fprintf(b, "policies: default=(rank=%d cap=%d closed=%t) overrides=%d capped=%d", d.Rank, d.MaxInProgress, d.Closed, st.Policies.Overrides, st.Policies.Capped)
		if st.Policies.CappedShards > 0 {
			fmt.Fprintf(b, " capped_shards=%d", st.Policies.CappedShards)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(b, "counters: %+v", st.Counters)
}

// policy sets a tenant's policy, the default, or clears a tenant's.
func (e *env) policy(c *transcript.Command) {
	c.Only("tenant", "rank", "cap", "shardcap", "closed")
	mod := func(p scheduler.TenantPolicy) scheduler.TenantPolicy {
		p.Rank = uint8(c.Int("rank", int64(p.Rank)))
		p.MaxInProgress = uint32(c.Int("cap", int64(p.MaxInProgress)))
		p.MaxPerShard = uint32(c.Int("shardcap", int64(p.MaxPerShard)))
		if c.Has("closed") {
			v, err := strconv.ParseBool(c.Str("closed", ""))
			if err != nil {
				c.Fatalf("closed: %v", err)
			}
			p.Closed = v
		}
		return p
	}
	what := ""
	if p := c.Positional(); len(p) > 0 {
		what = p[0]
	}
	tenant := c.Str("tenant", "")
	switch what {
	case "":
		e.s.SetTenantPolicy(tenant, mod(e.s.TenantPolicy(tenant)))
	case "default":
		e.s.SetDefaultPolicy(mod(e.s.Stats().Policies.Default))
	case "clear":
		e.s.ClearTenantPolicy(tenant)
	default:
		c.Fatalf("policy %s: want default or clear", what)
	}
}

func (e *env) snapshot() []byte {
	var buf bytes.Buffer
	if err := e.s.Snapshot(&buf); err != nil {
		e.t.Fatal(err)
	}
	return buf.Bytes()
}
