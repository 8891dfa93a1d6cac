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
//	                                     SetLimits (from the tenant's effective
//	                                     limits so changed), SetDefaultLimits (from the
//	                                     default so changed) or SetLimits(nil)
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
	case "pause", "resume":
		// No tenant: every tenant; no level: every level.
		r := scheduler.PauseRule{Tenant: c.Str("tenant", ""), AllTenants: !c.Has("tenant"), AllLevels: !c.Has("level")}
		r.Level = uint32(c.Int("level", 0))
		e.entry() // a pause is an entry of the log
		e.s.SetPause(r, c.Name == "pause")
	case "policy":
		e.policy(c)
	case "add", "poll", "change", "apply", "cancel", "retry", "extend", "expire":
		e.runApply(c, &b)
	case "open", "on", "update":
		e.runSchedule(c, &b)
	case "job", "jobs", "list", "stats", "paused", "tenant", "shard", "owns", "completed", "entry", "mark", "unchanged":
		e.runQuery(c, &b)
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

var changeKinds = map[string]ck.ChangeKind{}

func init() {
	for k := ck.ChangeAdd; k <= ck.ChangeCancel; k++ {
		changeKinds[k.String()] = k
	}
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

// policy sets a tenant's policy, the default, or clears a tenant's.
func (e *env) policy(c *transcript.Command) {
	c.Only("tenant", "rank", "cap", "shardcap", "closed")
	mod := func(p scheduler.Limits) scheduler.Limits {
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
		l := mod(e.s.Limits(tenant))
		e.s.SetLimits(tenant, &l)
	case "default":
		e.s.SetDefaultLimits(mod(e.s.Stats().DefaultLimits))
	case "clear":
		e.s.SetLimits(tenant, nil)
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
