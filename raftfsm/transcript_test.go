package raftfsm_test

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/internal/transcript"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/scheduler"
)

// TestTranscripts replays testdata/transcripts/*.txt: scenarios of the
// whole state machine, polls prepared and applied as a host does.
// Rewrite the expected outputs with
//
//	go test ./raftfsm -run TestTranscripts -rewrite
//
// and review the diff. Jobs are shown as j1, j2, ... in the order they
// first appear (their names are hashes); times are durations since t0.
//
// Commands:
//
//	new [max-failures=N] [max-queue=N] [tombstones-per-job=N] [l1-max-age=D]
//	    [cleanup-after=D] [cleanup-batch=N] [urgent-after=D]
//	                                    a state machine with testConfig (4 blocks a batch)
//	advance <duration>
//	add-blocks <prefix> [tenant=t1] [shard=1] [n=4] [entry-time=D|none]
//	                                    add n level-0 blocks, one second apart from t0
//	                                    (in an entry of that time: t0+D, or 0)
//	poll <worker> [seq=N] [slots=N] [report=(jN:<status>[@token][!variant],...)] [reason=R]
//	                                    Prepare a poll and apply it (seq defaults to the
//	                                    worker's last + 1); a success reports the outputs a
//	                                    worker writes (variant nooutputs: none; elsewhere:
//	                                    outside the attempt; level0: at the wrong level);
//	                                    print the response, skipped changes, refusals
//	                                    (variant live: outputs of the sources still live);
//	                                    with two-commit, a prepare entry first gives the token
//	prepare <worker> <same args> [at=D] only Prepare, at now or now+D: print the changes
//	took-office | retention tenant=T before=D | operator pause|resume|retry|cancel|requeue ...
//	job jN | jobs | stats | index | quarantined | tenants | recorded <worker> <seq>
//	mark <name> | unchanged <name>      compare snapshots
//	restore                             go on with a state machine restored from a snapshot
func TestTranscripts(t *testing.T) {
	transcript.Walk(t, "testdata/transcripts/*.txt", func(t *testing.T) transcript.Handler {
		e := &fsmEnv{t: t}
		return e.handle
	})
}

type fsmEnv struct {
	t       *testing.T
	n       *node
	seq     map[string]uint64
	aliases map[string]string // job name -> jN
	names   []string          // jN -> job name at N-1
	replies map[string]ck.JobReply
	marks   map[string][]byte
	outs    map[string][]ck.BlockMeta // outputs reported, by job/token/variant
}

func (e *fsmEnv) alias(name string) string {
	if a, ok := e.aliases[name]; ok {
		return a
	}
	e.names = append(e.names, name)
	a := fmt.Sprintf("j%d", len(e.names))
	e.aliases[name] = a
	return a
}

func (e *fsmEnv) job(c *transcript.Command, a string) string {
	i, err := strconv.Atoi(strings.TrimPrefix(a, "j"))
	if err != nil || i < 1 || i > len(e.names) {
		c.Fatalf("no job %s (jobs are j1, j2, ... in order of appearance)", a)
	}
	return e.names[i-1]
}

func (e *fsmEnv) rel(t int64) string { return time.Duration(t - t0).String() }

func (e *fsmEnv) init(c *transcript.Command) {
	cfg := testConfig()
	var opts []raftfsm.Option
	if c.Name == "new" {
		c.Only("max-failures", "max-queue", "tombstones-per-job", "l1-max-age", "cleanup-after", "cleanup-batch", "urgent-after",
			"version", "cross-shard")
		cfg.StartVersion = byte(c.Int("version", 0))
		if c.Has("cross-shard") {
			cfg.Planner.Levels[c.Int("cross-shard", 0)].CrossShard = true
		}
		cfg.Scheduler.MaxFailures = uint32(c.Int("max-failures", int64(cfg.Scheduler.MaxFailures)))
		cfg.Scheduler.MaxQueueSize = int(c.Int("max-queue", int64(cfg.Scheduler.MaxQueueSize)))
		cfg.Planner.TombstonesPerJob = int(c.Int("tombstones-per-job", int64(cfg.Planner.TombstonesPerJob)))
		cfg.Planner.Levels[1].MaxAge = c.Duration("l1-max-age", cfg.Planner.Levels[1].MaxAge)
		if c.Has("cleanup-after") {
			opts = append(opts, raftfsm.WithCleanupAfter(c.Duration("cleanup-after", 0)))
		}
		if c.Has("cleanup-batch") {
			opts = append(opts, raftfsm.WithCleanupBatch(int(c.Int("cleanup-batch", 0))))
		}
		if c.Has("urgent-after") {
			opts = append(opts, raftfsm.WithCleanupUrgentAfter(c.Duration("urgent-after", 0)))
		}
	}
	n := newNode(e.t, cfg, opts...)
	n.version = cfg.StartVersion
	*e = fsmEnv{t: e.t, n: n, seq: map[string]uint64{}, aliases: map[string]string{},
		replies: map[string]ck.JobReply{}, marks: map[string][]byte{}, outs: map[string][]ck.BlockMeta{}}
}

func (e *fsmEnv) pos(c *transcript.Command, i int) string {
	p := c.Positional()
	if i >= len(p) {
		c.Fatalf("want %d positional arguments", i+1)
	}
	return p[i]
}

func (e *fsmEnv) handle(c *transcript.Command) string {
	if e.n == nil || c.Name == "new" {
		e.init(c)
	}
	n := e.n
	var b strings.Builder
	switch c.Name {
	case "new":
	case "advance":
		n.advance(c.ParseDuration(e.pos(c, 0)))
		fmt.Fprintf(&b, "now=%s", e.rel(n.now))
	case "add-blocks":
		c.Only("tenant", "shard", "level", "n", "entry-time")
		shard := ck.AnyShard // shard=any: as a cross-shard job's outputs
		if c.Str("shard", "") != "any" {
			shard = uint32(c.Int("shard", 1))
		}
		bs := blocks(e.pos(c, 0), c.Str("tenant", "t1"), shard, int(c.Int("n", 4)), t0)
		for i := range bs {
			bs[i].Level = uint32(c.Int("level", 0))
		}
		var res *raftfsm.Result
		if c.Has("entry-time") {
			at := int64(0)
			if c.Str("entry-time", "") != "none" {
				at = t0 + int64(c.Duration("entry-time", 0))
			}
			res = n.applyAt(addBlocks(bs), at)
		} else {
			var err error
			if res, err = e.apply(addBlocks(bs)); err != nil {
				fmt.Fprintf(&b, "error: %v", err)
				break
			}
		}
		for _, r := range res.Blocks {
			switch {
			case r.Err != nil:
				fmt.Fprintf(&b, "%s: %v\n", r.ID, r.Err)
			case r.Queued:
				fmt.Fprintf(&b, "%s: queued\n", r.ID)
			default:
				fmt.Fprintf(&b, "%s: added\n", r.ID)
			}
		}
	case "poll", "prepare":
		e.poll(c, &b)
	case "cluster-version":
		v := byte(c.Int("v", 0))
		if _, err := e.apply(&raftfsm.Command{ClusterVersion: &raftfsm.SetClusterVersion{Version: v}}); err != nil {
			fmt.Fprintf(&b, "error: %v", err)
			break
		}
		n.version = v
		fmt.Fprintf(&b, "cluster version %d", n.f.ClusterVersion())
	case "took-office":
		res := n.mustApply(&raftfsm.Command{TookOffice: &raftfsm.TookOffice{Leader: c.Str("leader", "n2")}})
		fmt.Fprintf(&b, "extended %d", res.Count)
	case "retention":
		res, err := e.apply(&raftfsm.Command{Retention: &raftfsm.Retention{Tenant: c.Str("tenant", "t1"), Before: t0 + int64(c.Duration("before", 0))}})
		if err != nil {
			fmt.Fprintf(&b, "error: %v", err)
			break
		}
		fmt.Fprintf(&b, "dropped %v\ncancelled %v", res.Dropped, e.aliasAll(res.Cancelled))
	case "operator":
		e.operator(c, &b)
	case "job":
		for _, a := range c.Positional() {
			js, plan, ok := n.f.Job(e.job(c, a))
			if !ok {
				fmt.Fprintf(&b, "%s: unknown\n", a)
				continue
			}
			b.WriteString(e.state(js) + fmt.Sprintf(" sources=%d tombstones=%d", len(plan.Sources), len(plan.Tombstones)) + "\n")
			for _, ev := range js.History {
				fmt.Fprintf(&b, "  %s tok=%d w=%s at=%s %q\n", ev.Kind, ev.Token, ev.Worker, e.rel(ev.At), ev.Detail)
			}
		}
	case "jobs":
		jobs, _ := n.f.Jobs(scheduler.Filter{}, "", 0)
		for _, js := range jobs {
			b.WriteString(e.state(js) + "\n")
		}
	case "stats":
		st := n.f.Stats()
		fmt.Fprintf(&b, "planner: queued=%d claimed=%d quarantined=%d\n", st.Planner.Queued, st.Planner.Claimed, st.Planner.Quarantined)
		for _, l := range st.Planner.Levels {
			if l.Queued != 0 {
				fmt.Fprintf(&b, "planner level %d: queued=%d\n", l.Level, l.Queued)
			}
		}
		fmt.Fprintf(&b, "scheduler: jobs=%d %+v\n", st.Scheduler.Jobs, st.Scheduler.Counters)
		fmt.Fprintf(&b, "index: %+v", st.Index)
	case "index":
		view := n.f.Index()
		fmt.Fprintf(&b, "live %d:", view.Len())
		for _, bl := range view.Blocks("", 0) {
			fmt.Fprintf(&b, " %s", e.block(bl.ID))
		}
		for _, ti := range view.Tombstones(ck.Tombstone{}, 0) {
			fmt.Fprintf(&b, "\ntombstone %s:%s", ti.Kind, e.target(ti.Target))
			if ti.Job != "" {
				fmt.Fprintf(&b, " held by %s", e.alias(ti.Job))
			}
		}
		view.Close()
	case "quarantined":
		q, _ := n.f.Quarantined("", 0)
		for _, qb := range q {
			fmt.Fprintf(&b, "%s job=%s %q\n", qb.ID, e.alias(qb.Job), qb.Reason)
		}
	case "tenants":
		for _, ts := range n.f.Tenants() {
			fmt.Fprintf(&b, "%+v\n", ts)
		}
	case "recorded":
		seq, _ := strconv.ParseUint(e.pos(c, 1), 10, 64)
		resp, ok := n.f.Recorded(e.pos(c, 0), seq)
		if !ok {
			b.WriteString("none")
			break
		}
		e.response(&b, resp)
	case "restore":
		// Replace the state machine by one restored from its snapshot.
		snap := n.snapshot()
		f, err := raftfsm.Restore(bytes.NewReader(snap))
		if err != nil {
			fmt.Fprintf(&b, "error: %v", err)
			break
		}
		n.f = f
		fmt.Fprintf(&b, "restored; same snapshot: %t", bytes.Equal(snap, n.snapshot()))
	case "mark":
		e.marks[e.pos(c, 0)] = n.snapshot()
	case "unchanged":
		if bytes.Equal(e.marks[e.pos(c, 0)], n.snapshot()) {
			b.WriteString("unchanged")
		} else {
			b.WriteString("changed")
		}
	default:
		c.Fatalf("unknown command")
	}
	return b.String()
}

// apply applies cmd as the next entry; an entry refused with an error
// changed nothing, and its index is used again.
func (e *fsmEnv) apply(cmd *raftfsm.Command) (*raftfsm.Result, error) {
	res, err := e.n.apply(cmd)
	if err != nil {
		e.n.index--
		e.n.log = e.n.log[:len(e.n.log)-1]
	}
	return res, err
}

func (e *fsmEnv) aliasAll(names []string) []string {
	out := make([]string, len(names))
	for i, name := range names {
		out[i] = e.alias(name)
	}
	return out
}

// block shows a block ID with the job names in it (outputs) aliased.
func (e *fsmEnv) block(id string) string { return e.target(id) }

// target replaces the job names in an object name or prefix by aliases.
func (e *fsmEnv) target(s string) string {
	for name, a := range e.aliases {
		s = strings.ReplaceAll(s, name, a)
	}
	return s
}

func (e *fsmEnv) state(js ck.JobState) string {
	s := fmt.Sprintf("%s %s/%d %s tok=%d fail=%d", e.alias(js.Name), js.Tenant, js.Level, js.Status, js.Token, js.Failures)
	if js.Worker != "" {
		s += " w=" + js.Worker
	}
	if js.LastFailure != "" {
		s += fmt.Sprintf(" last=%q at=%s", js.LastFailure, e.rel(js.FailedAt))
	}
	return s
}

func (e *fsmEnv) request(c *transcript.Command) *ck.PollRequest {
	c.Only("seq", "slots", "report", "reason", "at", "two-commit")
	w := e.pos(c, 0)
	seq := uint64(c.Int("seq", int64(e.seq[w]+1)))
	req := &ck.PollRequest{WorkerID: w, Seq: seq, FreeSlots: int32(c.Int("slots", 0))}
	for _, spec := range c.Vals("report") {
		spec, variant, _ := strings.Cut(spec, "!")
		spec, tok, hasTok := strings.Cut(spec, "@")
		a, status, _ := strings.Cut(spec, ":")
		st, ok := map[string]ck.ReportStatus{"in_progress": ck.ReportInProgress, "success": ck.ReportSuccess,
			"failure": ck.ReportFailure, "released": ck.ReportReleased}[status]
		if !ok {
			c.Fatalf("report %q: want jN:<status>[@token][!variant]", spec)
		}
		reply := e.replies[e.job(c, a)]
		u := ck.StatusUpdate{Job: reply.Job, Token: reply.Token, Status: st, Reason: c.Str("reason", "")}
		if hasTok {
			t, err := strconv.ParseUint(tok, 10, 64)
			if err != nil {
				c.Fatalf("token %q", tok)
			}
			u.Token = fencing.Token(t)
		}
		if st == ck.ReportSuccess && !reply.Plan.CleanupOnly() && variant != "nooutputs" {
			key := fmt.Sprintf("%s/%d/%s", u.Job, u.Token, variant)
			if outs, ok := e.outs[key]; ok { // a report retried: the same outputs
				u.Outputs = outs
				req.Updates = append(req.Updates, u)
				continue
			}
			p := *reply.Plan
			if variant == "live" { // outputs of the sources still live
				view := e.n.f.Index()
				p.Sources = slices.DeleteFunc(slices.Clone(p.Sources), func(id string) bool { return !view.Live(id) })
				view.Close()
			}
			u.Outputs = e.n.outputs(&p, uint64(u.Token))
			switch variant {
			case "elsewhere":
				u.Outputs[0].ID = "elsewhere/x"
			case "level0":
				u.Outputs[0].Level = 0
			}
			e.outs[key] = u.Outputs
		}
		req.Updates = append(req.Updates, u)
	}
	return req
}

func (e *fsmEnv) poll(c *transcript.Command, b *strings.Builder) {
	n := e.n
	req := e.request(c)
	var tokenIndex uint64
	if c.Has("two-commit") {
		// Two-commit mode: a prepare entry first, whose index is the token.
		n.mustApply(&raftfsm.Command{PreparePoll: &raftfsm.PreparePoll{WorkerID: req.WorkerID, Seq: req.Seq}})
		tokenIndex = n.index
		fmt.Fprintf(b, "prepare entry %d\n", tokenIndex)
	}
	at := n.now + int64(c.Duration("at", 0))
	cmd, err := n.f.Prepare(req, at)
	if err != nil {
		fmt.Fprintf(b, "error: %v", err)
		return
	}
	e.seq[req.WorkerID] = max(e.seq[req.WorkerID], req.Seq)
	if c.Name == "prepare" {
		if cmd.Poll == nil {
			fmt.Fprintf(b, "%+v", cmd)
			return
		}
		if len(cmd.Poll.Update.Changes) == 0 {
			b.WriteString("no changes")
		}
		for _, ch := range cmd.Poll.Update.Changes {
			fmt.Fprintf(b, "%s %s", ch.Kind, e.alias(ch.Job))
			if ch.Plan != nil {
				e.plan(b, ch.Plan)
			}
			b.WriteString("\n")
		}
		return
	}
	if tokenIndex != 0 {
		cmd.Poll.Update.TokenIndex = tokenIndex
	}
	res, err := e.apply(cmd)
	if err != nil {
		fmt.Fprintf(b, "error: %v", err)
		return
	}
	if res.Replayed {
		b.WriteString("replayed\n")
	}
	for _, ch := range res.Changes {
		if !ch.Applied {
			fmt.Fprintf(b, "skipped %s %s: %v\n", ch.Kind, e.alias(ch.Job), ch.Reason)
		}
		if ch.Excluded {
			fmt.Fprintf(b, "excluded %s\n", e.alias(ch.Job))
		}
		if ch.Quarantined != 0 {
			fmt.Fprintf(b, "evicted %s: %d blocks quarantined\n", e.alias(ch.Job), ch.Quarantined)
		}
		if r := ch.Replace; r != nil && !r.Applied {
			fmt.Fprintf(b, "replace %s refused: missing %v surviving %v\n", e.alias(ch.Job), r.Missing, r.Surviving)
		}
	}
	e.response(b, res.Poll)
}

func (e *fsmEnv) response(b *strings.Builder, resp *ck.PollResponse) {
	if len(resp.Jobs) == 0 {
		b.WriteString("no jobs")
	}
	for _, j := range resp.Jobs {
		if j.Outcome == ck.OutcomeAssigned {
			e.replies[j.Job] = j
		}
		fmt.Fprintf(b, "%s %s", e.alias(j.Job), j.Outcome)
		if j.Token != 0 {
			fmt.Fprintf(b, " tok=%d", j.Token)
		}
		if j.Outcome == ck.OutcomeAssigned || j.Outcome == ck.OutcomeRenewed {
			fmt.Fprintf(b, " deadline=%s", e.rel(j.Deadline))
		}
		if j.Plan != nil {
			e.plan(b, j.Plan)
		}
		b.WriteString("\n")
	}
}

func (e *fsmEnv) plan(b *strings.Builder, p *ck.JobPlan) {
	if p.CleanupOnly() {
		b.WriteString(" cleanup")
	} else {
		fmt.Fprintf(b, " %s/%d/%d sources=%v", p.Tenant, p.Shard, p.Level, p.Sources)
	}
	if len(p.Tombstones) > 0 {
		ts := make([]string, len(p.Tombstones))
		for i, t := range p.Tombstones {
			ts[i] = t.Kind.String() + ":" + e.target(t.Target)
		}
		slices.Sort(ts)
		fmt.Fprintf(b, " tombstones=%v", ts)
	}
}

func (e *fsmEnv) operator(c *transcript.Command, b *strings.Builder) {
	c.Only("tenant", "level", "by")
	op := &raftfsm.Operator{Tenant: c.Str("tenant", ""), By: c.Str("by", "")}
	if c.Has("level") {
		l := uint32(c.Int("level", 0))
		op.Level = &l
	}
	args := c.Positional()
	if len(args) == 0 {
		c.Fatalf("operator <action> ...")
	}
	switch args[0] {
	case "pause":
		op.Action = raftfsm.OpPause
	case "resume":
		op.Action = raftfsm.OpResume
	case "retry", "cancel":
		op.Action = raftfsm.OpRetry
		if args[0] == "cancel" {
			op.Action = raftfsm.OpCancel
		}
		if len(args) > 1 {
			op.Job = e.job(c, args[1])
		}
	case "requeue":
		q, _ := e.n.f.Quarantined("", 0)
		for _, qb := range q {
			op.Blocks = append(op.Blocks, qb.ID)
		}
		op.Action = raftfsm.OpRequeue
	default:
		c.Fatalf("unknown operator action %s", args[0])
	}
	res, err := e.apply(&raftfsm.Command{Operator: op})
	if err != nil {
		fmt.Fprintf(b, "error: %v", err)
		return
	}
	fmt.Fprintf(b, "count %d", res.Count)
}
