package raftfsm_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/admin"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/internal/transcript"
	"github.com/compactkit/compactkit/policy"
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
// An error is printed with the sentinels it wraps ("is: ErrClock").
//
// Commands (config options: [max-failures=N] [max-queue=N]
// [tombstones-per-job=N] [l1-max-age=D] [version=N] [cross-shard=L]
// [max-clock-step=D] [cleanup-delay=D]; local options: [cleanup-after=D]
// [cleanup-batch=N] [urgent-after=D]):
//
//	new [config and local options] [encode] [entry-time=none]
//	                                    a state machine with testConfig (4 blocks a batch);
//	                                    encode: the log's entries are encoded by FSM.Encode at
//	                                    the clock, as a leader does (else MarshalVersion at the
//	                                    version set by cluster-version); entry-time=none: its
//	                                    entries carry no time (else the clock)
//	advance <duration>
//	add-blocks <prefix> [tenant=t1] [shard=1|any] [level=0] [n=4] [entry options]
//	                                    add n blocks, one second apart from t0
//	    entry options, for any command that appends an entry:
//	    [entry-time=D|none]             the entry's time: t0+D, or 0
//	    [stamp=D]                       the command's time: now+D (else now)
//	    [encode=D]                      encoded by FSM.Encode at the leader's clock now+D
//	    [apply-at]                      applied by ApplyAt (at the entry's time)
//	                                    with any of these, "now=" prints the entry's log time
//	poll <worker> [seq=N] [slots=N] [report=(jN:<status>[@token][!variant],...)] [reason=R]
//	     [reason-repeat=N] [two-commit] [everywhere]
//	                                    Prepare a poll and apply it (seq defaults to the
//	                                    worker's last + 1); a success reports the outputs a
//	                                    worker writes (variant nooutputs: none; elsewhere:
//	                                    outside the attempt; level0: at the wrong level);
//	                                    print the response, skipped changes, refusals
//	                                    (variant live: outputs of the sources still live);
//	                                    with two-commit, a prepare entry first gives the token;
//	                                    everywhere: each replica prepares the request itself
//	                                    and applies its own command (see replica)
//	prepare <worker> <same args> [at=D] [as=NAME]
//	                                    only Prepare, at now or now+D: print the changes;
//	                                    as: keep the command
//	apply <NAME>                        apply a command kept by prepare as=NAME, as poll does
//	forge <worker> complete jN [seq=N]  apply a poll command a hostile leader built: the
//	                                    worker completes jN with its token and version
//	raw (hex=BYTES|last|<malformed>) [index=N]
//	                                    apply hand-built bytes (the last entry's, or a
//	                                    malformed command from the table in malformed,
//	                                    marshalled without validation) at index N (default:
//	                                    the next; below it, an entry applied again)
//	config [config options]             apply a config command (testConfig and the options)
//	cluster-version v=N
//	took-office | retention tenant=T before=D | operator pause|resume|retry|cancel|requeue ...
//	job jN | jobs | stats | index | quarantined | tenants | recorded <worker> <seq>
//	mark <name> [capture]               keep the snapshot (capture: take a Capture, written
//	                                    when compared)
//	unchanged <name> | same <name> <name>
//	                                    compare kept snapshots with the state, or each other
//	restore                             go on with a state machine restored from a snapshot
//	replica <name> [config and local options] [from=snapshot] [entry-time=none|D]
//	                                    a second state machine that applies every entry of
//	                                    the log after the first (it catches up on the log so
//	                                    far, or restores the first's snapshot); its entries'
//	                                    time is the first's, 0, or the clock+D (ApplyAt
//	                                    entries keep theirs). After each entry a replica
//	                                    whose snapshot or response differs says so.
//	compare                             the log position and snapshot version, and for each
//	                                    replica whether its snapshot and answers (jobs, job
//	                                    plans, index, quarantine, tenants, config, stats but
//	                                    the replica's own counters) are the first's
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
	marks   map[string]func() []byte  // snapshots kept by mark
	outs    map[string][]ck.BlockMeta // outputs reported, by job/token/variant

	encode      bool // entries are encoded by FSM.Encode
	noEntryTime bool // entries carry no time
	log         []entry
	replicas    []*replica
	prepared    map[string]*raftfsm.Command
	own         map[*replica]*raftfsm.Command // see applyPoll
	cur         *transcript.Command           // the command running
	// notes are what replicas said about the current command's entries,
	// printed after its output.
	notes []string
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

// configOptions are the arguments that set the replicated configuration;
// localOptions those that set a replica's own options.
var (
	configOptions = []string{"max-failures", "max-queue", "tombstones-per-job", "l1-max-age", "version", "cross-shard",
		"max-clock-step", "cleanup-delay"}
	localOptions = []string{"cleanup-after", "cleanup-batch", "urgent-after"}
)

// config returns testConfig with the configuration options of c.
func config(c *transcript.Command) raftfsm.Config {
	cfg := testConfig()
	cfg.StartVersion = byte(c.Int("version", 0))
	if c.Has("cross-shard") {
		cfg.Planner.Levels[c.Int("cross-shard", 0)].CrossShard = true
	}
	cfg.Scheduler.MaxFailures = uint32(c.Int("max-failures", int64(cfg.Scheduler.MaxFailures)))
	cfg.Scheduler.MaxQueueSize = int(c.Int("max-queue", int64(cfg.Scheduler.MaxQueueSize)))
	cfg.Planner.TombstonesPerJob = int(c.Int("tombstones-per-job", int64(cfg.Planner.TombstonesPerJob)))
	cfg.Planner.Levels[1].MaxAge = c.Duration("l1-max-age", cfg.Planner.Levels[1].MaxAge)
	cfg.MaxClockStep = c.Duration("max-clock-step", cfg.MaxClockStep)
	cfg.Index.CleanupDelay = c.Duration("cleanup-delay", cfg.Index.CleanupDelay)
	return cfg
}

// options returns the local options of c.
func options(c *transcript.Command) []raftfsm.Option {
	var opts []raftfsm.Option
	if c.Has("cleanup-after") {
		opts = append(opts, raftfsm.WithCleanupAfter(c.Duration("cleanup-after", 0)))
	}
	if c.Has("cleanup-batch") {
		opts = append(opts, raftfsm.WithCleanupBatch(int(c.Int("cleanup-batch", 0))))
	}
	if c.Has("urgent-after") {
		opts = append(opts, raftfsm.WithCleanupUrgentAfter(c.Duration("urgent-after", 0)))
	}
	return opts
}

func (e *fsmEnv) init(c *transcript.Command) {
	cfg := testConfig()
	var opts []raftfsm.Option
	var encode, noEntryTime bool
	if c.Name == "new" {
		c.Only(append(append([]string{"entry-time"}, configOptions...), localOptions...)...)
		cfg, opts = config(c), options(c)
		for _, p := range c.Positional() {
			if p != "encode" {
				c.Fatalf("unknown argument %s", p)
			}
			encode = true
		}
		if c.Has("entry-time") {
			if c.Str("entry-time", "") != "none" {
				c.Fatalf("entry-time=none or nothing")
			}
			noEntryTime = true
		}
	}
	n := newNode(e.t, cfg, opts...)
	n.version = cfg.StartVersion
	*e = fsmEnv{t: e.t, n: n, seq: map[string]uint64{}, aliases: map[string]string{},
		replies: map[string]ck.JobReply{}, marks: map[string]func() []byte{}, outs: map[string][]ck.BlockMeta{},
		encode: encode, noEntryTime: noEntryTime, prepared: map[string]*raftfsm.Command{}}
}

func (e *fsmEnv) pos(c *transcript.Command, i int) string {
	p := c.Positional()
	if i >= len(p) {
		c.Fatalf("want %d positional arguments", i+1)
	}
	return p[i]
}

// entryOptions are the arguments of a command that appends an entry.
var entryOptions = []string{"entry-time", "stamp", "encode", "apply-at"}

func (e *fsmEnv) handle(c *transcript.Command) string {
	if e.n == nil || c.Name == "new" {
		e.init(c)
	}
	e.notes, e.cur = nil, c
	out := e.run(c)
	if len(e.notes) > 0 {
		if out != "" && !strings.HasSuffix(out, "\n") {
			out += "\n"
		}
		out += strings.Join(e.notes, "\n")
	}
	return out
}

func (e *fsmEnv) run(c *transcript.Command) string {
	n := e.n
	var b strings.Builder
	switch c.Name {
	case "new":
	case "advance":
		n.advance(c.ParseDuration(e.pos(c, 0)))
		fmt.Fprintf(&b, "now=%s", e.rel(n.now))
	case "add-blocks":
		c.Only(append([]string{"tenant", "shard", "level", "n"}, entryOptions...)...)
		shard := ck.AnyShard // shard=any: as a cross-shard job's outputs
		if c.Str("shard", "") != "any" {
			shard = uint32(c.Int("shard", 1))
		}
		bs := blocks(e.pos(c, 0), c.Str("tenant", "t1"), shard, int(c.Int("n", 4)), t0)
		for i := range bs {
			bs[i].Level = uint32(c.Int("level", 0))
		}
		res, err := e.propose(c, addBlocks(bs))
		if err != nil {
			e.error(&b, err)
			break
		}
		for _, r := range res.Blocks {
			switch {
			case r.Err != nil:
				fmt.Fprintf(&b, "%s: %v\n", r.ID, r.Err)
			case r.Queued && r.Pressure != policy.OK:
				fmt.Fprintf(&b, "%s: queued pressure=%s\n", r.ID, r.Pressure)
			case r.Queued:
				fmt.Fprintf(&b, "%s: queued\n", r.ID)
			default:
				fmt.Fprintf(&b, "%s: added\n", r.ID)
			}
		}
		e.now(c, &b, res)
	case "poll", "prepare":
		e.poll(c, &b)
	case "apply":
		cmd, ok := e.prepared[e.pos(c, 0)]
		if !ok {
			c.Fatalf("no command kept as %s", e.pos(c, 0))
		}
		e.applyPoll(c, &b, cmd, nil)
	case "forge":
		e.forge(c, &b)
	case "raw":
		e.raw(c, &b)
	case "config":
		c.Only(append(slices.Clone(configOptions), entryOptions...)...)
		cfg := config(c)
		res, err := e.propose(c, &raftfsm.Command{Config: &cfg})
		if err != nil {
			e.error(&b, err)
			break
		}
		b.WriteString("config applied")
		e.now(c, &b, res)
	case "cluster-version":
		c.Only(append([]string{"v"}, entryOptions...)...)
		v := byte(c.Int("v", 0))
		if _, err := e.propose(c, &raftfsm.Command{ClusterVersion: &raftfsm.SetClusterVersion{Version: v}}); err != nil {
			e.error(&b, err)
			break
		}
		n.version = v
		fmt.Fprintf(&b, "cluster version %d", n.f.ClusterVersion())
	case "took-office":
		c.Only(append([]string{"leader"}, entryOptions...)...)
		res, err := e.propose(c, &raftfsm.Command{TookOffice: &raftfsm.TookOffice{Leader: c.Str("leader", "n2")}})
		if err != nil {
			e.error(&b, err)
			break
		}
		fmt.Fprintf(&b, "extended %d", res.Count)
	case "retention":
		c.Only(append([]string{"tenant", "before"}, entryOptions...)...)
		res, err := e.propose(c, &raftfsm.Command{Retention: &raftfsm.Retention{Tenant: c.Str("tenant", "t1"), Before: t0 + int64(c.Duration("before", 0))}})
		if err != nil {
			e.error(&b, err)
			break
		}
		fmt.Fprintf(&b, "dropped %v\ncancelled %v", res.Dropped, e.aliasAll(res.Cancelled))
	case "operator":
		e.operator(c, &b)
	case "policy":
		e.policy(c, &b)
	case "policies":
		ps := n.f.Policies()
		fmt.Fprintf(&b, "default: %s\n", policyString(ps.Default))
		for _, tp := range ps.Tenants {
			fmt.Fprintf(&b, "%s: %s open=%t\n", tp.Tenant, policyString(tp.Policy), tp.Open)
		}
		for _, cn := range ps.CompactNow {
			fmt.Fprintf(&b, "compact-now %+v before=%s\n", cn, e.rel(cn.Before))
		}
	case "pressure":
		st := n.f.Stats()
		for _, tp := range st.Pressure {
			fmt.Fprintf(&b, "%s: %s\n", tp.Tenant, tp.Grade)
		}
		for _, sp := range st.ShardPressure {
			fmt.Fprintf(&b, "%s shard %d: %s\n", sp.Tenant, sp.Shard, sp.Grade)
		}
		for _, a := range st.Alarms {
			fmt.Fprintf(&b, "alarm %s level %d: oldest=%s since=%s\n", a.Tenant, a.Level, e.rel(a.Oldest), e.rel(a.Since))
		}
		if len(st.Pressure)+len(st.ShardPressure)+len(st.Alarms) == 0 {
			b.WriteString("none")
		}
	case "job":
		for _, a := range c.Positional() {
			js, plan, ok := n.f.Job(e.job(c, a))
			if !ok {
				fmt.Fprintf(&b, "%s: unknown\n", a)
				continue
			}
			b.WriteString(e.state(js) + fmt.Sprintf(" sources=%d tombstones=%d", len(plan.Sources), len(plan.Tombstones)) + "\n")
			for _, ev := range js.History {
				fmt.Fprintf(&b, "  %s tok=%d w=%s at=%s %s\n", ev.Kind, ev.Token, ev.Worker, e.rel(ev.At), quote(ev.Detail))
			}
		}
	case "jobs":
		jobs, _ := n.f.Jobs(raftfsm.JobFilter{}, "", 0)
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
		fmt.Fprintf(&b, "index: %+v\n", st.Index)
		b.WriteString("skipped changes:")
		skipped := false
		for r, k := range st.SkippedChanges {
			if k != 0 {
				fmt.Fprintf(&b, " %s=%d", scheduler.Skip(r), k)
				skipped = true
			}
		}
		if !skipped {
			b.WriteString(" none")
		}
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
			job := "-" // marked by an operator
			if qb.Job != "" {
				job = e.alias(qb.Job)
			}
			fmt.Fprintf(&b, "%s job=%s %q\n", qb.ID, job, qb.Reason)
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
			e.error(&b, err)
			break
		}
		n.f = f
		fmt.Fprintf(&b, "restored; same snapshot: %t", bytes.Equal(snap, n.snapshot()))
	case "mark":
		if c.Has("capture") {
			capt, err := n.f.Capture()
			if err != nil {
				c.Fatalf("%v", err)
			}
			e.marks[e.pos(c, 0)] = func() []byte {
				var b bytes.Buffer
				if err := capt.Snapshot(&b); err != nil {
					c.Fatalf("%v", err)
				}
				return b.Bytes()
			}
			break
		}
		snap := n.snapshot()
		e.marks[e.pos(c, 0)] = func() []byte { return snap }
	case "unchanged":
		if bytes.Equal(e.mark(c, e.pos(c, 0)), n.snapshot()) {
			b.WriteString("unchanged")
		} else {
			b.WriteString("changed")
		}
	case "same":
		if bytes.Equal(e.mark(c, e.pos(c, 0)), e.mark(c, e.pos(c, 1))) {
			b.WriteString("same")
		} else {
			b.WriteString("different")
		}
	case "replica":
		e.replica(c, &b)
	case "compare":
		e.compare(&b)
	default:
		c.Fatalf("unknown command")
	}
	return b.String()
}

func (e *fsmEnv) mark(c *transcript.Command, name string) []byte {
	m, ok := e.marks[name]
	if !ok {
		c.Fatalf("no mark %s", name)
	}
	return m()
}

// sentinels are the errors an error line names when the error wraps them.
var sentinels = []struct {
	name string
	err  error
}{
	{"ErrInvalidConfig", raftfsm.ErrInvalidConfig},
	{"ErrInvalidCommand", raftfsm.ErrInvalidCommand},
	{"ErrStaleRequest", raftfsm.ErrStaleRequest},
	{"ErrInvalidRequest", raftfsm.ErrInvalidRequest},
	{"ErrOperator", raftfsm.ErrOperator},
	{"ErrClusterVersion", raftfsm.ErrClusterVersion},
	{"ErrCorrupt", raftfsm.ErrCorrupt},
	{"ErrLimit", raftfsm.ErrLimit},
	{"ErrClock", raftfsm.ErrClock},
	{"scheduler.ErrUnknownJob", scheduler.ErrUnknownJob},
	{"scheduler.ErrNotExcluded", scheduler.ErrNotExcluded},
	{"ck.ErrMalformed", ck.ErrMalformed},
	{"ck.ErrChecksum", ck.ErrChecksum},
	{"ck.ErrUnknownVersion", ck.ErrUnknownVersion},
	{"ck.ErrInconsistent", ck.ErrInconsistent},
	{"ck.ErrMissingOutputs", ck.ErrMissingOutputs},
	{"ck.ErrInvalidID", ck.ErrInvalidID},
	{"ck.ErrEmptyID", ck.ErrEmptyID},
	{"policy.ErrInvalid", policy.ErrInvalid},
	{"policy.ErrNeverOpens", policy.ErrNeverOpens},
}

// error prints err and the sentinels it wraps.
func (e *fsmEnv) error(b *strings.Builder, err error) {
	fmt.Fprintf(b, "error: %v\nis:", err)
	none := true
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			fmt.Fprintf(b, " %s", s.name)
			none = false
		}
	}
	if none {
		b.WriteString(" none of the sentinels")
	}
}

// now prints the log time an entry was applied at, for a command with
// entry options.
func (e *fsmEnv) now(c *transcript.Command, b *strings.Builder, res *raftfsm.Result) {
	if slices.ContainsFunc(entryOptions, c.Has) {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteString("\n")
		}
		fmt.Fprintf(b, "now=%s", e.rel(res.Now))
	}
}

// entry is one entry of the log, as the replicas receive it.
type entry struct {
	data []byte
	time int64
	at   bool // applied by ApplyAt
}

// propose appends cmd to the log as the next entry, with the entry options
// of c, and applies it to the state machine and the replicas. An entry
// refused with an error changed nothing, and its index is used again.
func (e *fsmEnv) propose(c *transcript.Command, cmd *raftfsm.Command) (*raftfsm.Result, error) {
	n := e.n
	data, err := e.encodeOn(c, n.f, cmd)
	if err != nil {
		return nil, err
	}
	ent := entry{data: data, time: n.now, at: c.Has("apply-at")}
	if e.noEntryTime {
		ent.time = 0
	}
	if c.Has("entry-time") {
		ent.time = 0
		if c.Str("entry-time", "") != "none" {
			ent.time = t0 + int64(c.Duration("entry-time", 0))
		}
	}
	return e.append(ent)
}

// encodeOn encodes cmd as the leader f would, with the entry options of c:
// by f's Encode at the clock (plus encode=D), or by MarshalVersion at the
// version the transcript set, stamped with the clock (plus stamp=D).
func (e *fsmEnv) encodeOn(c *transcript.Command, f *raftfsm.FSM, cmd *raftfsm.Command) ([]byte, error) {
	n := e.n
	if c.Has("stamp") {
		cmd.Time = n.now + int64(c.Duration("stamp", 0))
	}
	switch {
	case e.encode || c.Has("encode"):
		return f.Encode(cmd, n.now+int64(c.Duration("encode", 0)))
	case n.version == 0:
		if cmd.Time == 0 {
			cmd.Time = n.now
		}
		return cmd.MarshalBinary()
	default:
		if cmd.Time == 0 {
			cmd.Time = n.now
		}
		return cmd.MarshalVersion(n.version)
	}
}

// append applies ent as the next entry, and to the replicas if it is
// applied.
func (e *fsmEnv) append(ent entry) (*raftfsm.Result, error) {
	n := e.n
	res, err := apply(n.f, ck.Entry{Index: n.index + 1, Term: 1, Time: ent.time}, ent)
	if err != nil {
		return nil, err
	}
	n.index++
	n.log = append(n.log, ent.data)
	e.log = append(e.log, ent)
	e.follow(res)
	return res, nil
}

func apply(f *raftfsm.FSM, en ck.Entry, ent entry) (*raftfsm.Result, error) {
	if ent.at {
		return f.ApplyAt(en, ent.data)
	}
	return f.Apply(en, ent.data)
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
		s += " last=" + quote(js.LastFailure)
	}
	if js.FailedAt != 0 {
		s += " at=" + e.rel(js.FailedAt)
	}
	return s
}

// quote quotes s, or for a long s gives its length and its start.
func quote(s string) string {
	if len(s) <= 64 {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("(%d bytes)%q...", len(s), string([]rune(s)[:16]))
}

func (e *fsmEnv) request(c *transcript.Command) *ck.PollRequest {
	c.Only(append([]string{"seq", "slots", "report", "reason", "reason-repeat", "at", "as"}, entryOptions...)...)
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
		u := ck.StatusUpdate{Job: reply.Job, Token: reply.Token, Status: st,
			Reason: strings.Repeat(c.Str("reason", ""), int(c.Int("reason-repeat", 1)))}
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
		if _, err := e.propose(c, &raftfsm.Command{PreparePoll: &raftfsm.PreparePoll{WorkerID: req.WorkerID, Seq: req.Seq}}); err != nil {
			c.Fatalf("prepare entry: %v", err)
		}
		tokenIndex = n.index
		fmt.Fprintf(b, "prepare entry %d\n", tokenIndex)
	}
	at := n.now + int64(c.Duration("at", 0))
	cmd, err := n.f.Prepare(req, at)
	if err != nil {
		e.error(b, err)
		return
	}
	e.seq[req.WorkerID] = max(e.seq[req.WorkerID], req.Seq)
	if c.Name == "prepare" {
		if c.Has("as") {
			e.prepared[c.Str("as", "")] = cmd
		}
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
	var own map[*replica]*raftfsm.Command
	if c.Has("everywhere") {
		// Each replica prepares the request on its own state, as if it
		// were the leader.
		own = map[*replica]*raftfsm.Command{}
		for _, r := range e.replicas {
			rc, err := r.f.Prepare(req, at)
			if err != nil {
				e.notes = append(e.notes, fmt.Sprintf("%s: prepare: %v", r.name, err))
				continue
			}
			if tokenIndex != 0 {
				rc.Poll.Update.TokenIndex = tokenIndex
			}
			own[r] = rc
		}
	}
	e.applyPoll(c, b, cmd, own)
}

// applyPoll applies a poll command and prints what it did. Replicas with a
// command in own apply theirs instead of the log's, and say whether it was
// the same.
func (e *fsmEnv) applyPoll(c *transcript.Command, b *strings.Builder, cmd *raftfsm.Command, own map[*replica]*raftfsm.Command) {
	e.own = own
	res, err := e.propose(c, cmd)
	e.own = nil
	if err != nil {
		e.error(b, err)
		return
	}
	if res.Replayed {
		b.WriteString("replayed\n")
	}
	for _, ch := range res.Changes {
		if !ch.Applied {
			fmt.Fprintf(b, "skipped %s %s: %s\n", ch.Kind, e.alias(ch.Job), ch.Why())
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

// policyString formats a policy for transcripts.
func policyString(p policy.Tenant) string {
	s := fmt.Sprintf("class=%s cap=%d", p.Class, p.MaxInProgress)
	if p.MaxInProgressPerShard > 0 {
		s += fmt.Sprintf(" shard-cap=%d", p.MaxInProgressPerShard)
	}
	for _, w := range p.Run.Windows {
		s += fmt.Sprintf(" %s=%s", p.Run.Mode, w)
	}
	if p.NotBefore != 0 {
		s += fmt.Sprintf(" not-before=%s", time.Duration(p.NotBefore-t0))
	}
	if p.Pressure != (policy.Thresholds{}) {
		s += fmt.Sprintf(" pressure=%+v", p.Pressure)
	}
	if p.ShardPressure != (policy.Thresholds{}) {
		s += fmt.Sprintf(" shard-pressure=%+v", p.ShardPressure)
	}
	if p.StaleAfter != 0 {
		s += fmt.Sprintf(" stale=%s", p.StaleAfter)
	}
	for _, l := range p.Levels {
		s += fmt.Sprintf(" level%d={blocks=%d bytes=%d age=%s cross=%s}", l.Level, l.MaxBlocks, l.MaxBytes, l.MaxAge, l.CrossShard)
	}
	for _, lr := range p.LevelRuns {
		for _, w := range lr.Run.Windows {
			s += fmt.Sprintf(" level%d-%s=%s", lr.Level, lr.Run.Mode, w)
		}
	}
	return s
}

// policy proposes a policy command:
//
//	policy set (tenant=T | all) [class=low] [cap=N] [shard-cap=N] [only-in=HH:MM-HH:MM | never-in=...]
//	    [days=Mon,Tue] [offset=MIN] [not-before=DUR] [slow=ON/OFF] [stop=ON/OFF]
//	    [slow-debt=ON/OFF] [stop-debt=ON/OFF] [stale=DUR] [shard-slow=ON/OFF] [shard-stop=ON/OFF]
//	    [levels=L:blocks=N,bytes=N,age=DUR,cross=on|off;L:...]
//	    [level-only-in=L:HH:MM-HH:MM | level-never-in=L:HH:MM-HH:MM] (every day, UTC)
//	policy clear (tenant=T | all)
//	policy compact-now (tenant=T | all) [level=L]
func (e *fsmEnv) policy(c *transcript.Command, b *strings.Builder) {
	c.Only(append([]string{"tenant", "all", "level", "by", "class", "cap", "shard-cap", "only-in", "never-in", "days", "offset",
		"not-before", "slow", "stop", "slow-debt", "stop-debt", "stale", "levels", "level-only-in", "level-never-in", "shard-slow", "shard-stop"}, entryOptions...)...)
	pc := &raftfsm.PolicyCommand{Tenant: c.Str("tenant", ""), All: c.Has("all"), By: c.Str("by", "")}
	switch e.pos(c, 0) {
	case "set":
		pc.Action = raftfsm.PolicySet
		p := &policy.Tenant{MaxInProgress: uint32(c.Int("cap", 0)), MaxInProgressPerShard: uint32(c.Int("shard-cap", 0)), StaleAfter: c.Duration("stale", 0)}
		if c.Has("class") {
			class, err := policy.ParseClass(c.Str("class", ""))
			if err != nil {
				c.Fatalf("%v", err)
			}
			p.Class = class
		}
		for _, mode := range []policy.RunMode{policy.OnlyIn, policy.NeverIn} {
			if !c.Has(mode.String()) {
				continue
			}
			var h1, m1, h2, m2 uint16
			if _, err := fmt.Sscanf(c.Str(mode.String(), ""), "%d:%d-%d:%d", &h1, &m1, &h2, &m2); err != nil {
				c.Fatalf("window: %v", err)
			}
			w := policy.Window{Days: policy.EveryDay, Start: h1*60 + m1, End: h2*60 + m2, Offset: int16(c.Int("offset", 0))}
			if c.Has("days") {
				w.Days = 0
				for _, d := range strings.Split(c.Str("days", ""), ",") {
					i := slices.IndexFunc([]time.Weekday{0, 1, 2, 3, 4, 5, 6}, func(wd time.Weekday) bool { return wd.String()[:3] == d })
					if i < 0 {
						c.Fatalf("day %q", d)
					}
					w.Days |= 1 << i
				}
			}
			p.Run = policy.RunPolicy{Mode: mode, Windows: []policy.Window{w}}
		}
		if c.Has("not-before") {
			p.NotBefore = t0 + int64(c.Duration("not-before", 0))
		}
		limit := func(key string) policy.Limit {
			var l policy.Limit
			if c.Has(key) {
				if _, err := fmt.Sscanf(c.Str(key, ""), "%d/%d", &l.On, &l.Off); err != nil {
					c.Fatalf("%s: %v", key, err)
				}
			}
			return l
		}
		p.Pressure = policy.Thresholds{SlowBlocks: limit("slow"), StopBlocks: limit("stop"), SlowDebt: limit("slow-debt"), StopDebt: limit("stop-debt")}
		p.ShardPressure = policy.Thresholds{SlowBlocks: limit("shard-slow"), StopBlocks: limit("shard-stop")}
		if c.Has("levels") {
			p.Levels = parseLevels(c, c.Str("levels", ""))
		}
		for _, mode := range []policy.RunMode{policy.OnlyIn, policy.NeverIn} {
			key := "level-" + mode.String()
			if !c.Has(key) {
				continue
			}
			var l, h1, m1, h2, m2 uint16
			if _, err := fmt.Sscanf(c.Str(key, ""), "%d:%d:%d-%d:%d", &l, &h1, &m1, &h2, &m2); err != nil {
				c.Fatalf("%s: %v", key, err)
			}
			p.LevelRuns = append(p.LevelRuns, policy.LevelRun{Level: uint32(l), Run: policy.RunPolicy{Mode: mode,
				Windows: []policy.Window{{Days: policy.EveryDay, Start: h1*60 + m1, End: h2*60 + m2}}}})
		}
		pc.Policy = p
	case "clear":
		pc.Action = raftfsm.PolicyClear
	case "compact-now":
		pc.Action = raftfsm.PolicyCompactNow
		if c.Has("level") {
			l := uint32(c.Int("level", 0))
			pc.Level = &l
		}
	default:
		c.Fatalf("policy set|clear|compact-now")
	}
	res, err := e.propose(c, &raftfsm.Command{Policy: pc})
	if err != nil {
		e.error(b, err)
		return
	}
	fmt.Fprintf(b, "count %d", res.Count)
	e.now(c, b, res)
}

// parseLevels parses "L:blocks=N,bytes=N,age=DUR,cross=on|off;L:..." as
// level overrides, in the order given, as the admin API takes them
// (unchecked: the state machine checks them).
func parseLevels(c *transcript.Command, s string) []policy.Level {
	var p admin.Policy
	for _, part := range strings.Split(s, ";") {
		o, err := admin.ParseLevelOverride(part)
		if err != nil {
			c.Fatalf("levels: %v", err)
		}
		p.Levels = append(p.Levels, o)
	}
	t, err := p.Tenant()
	if err != nil {
		c.Fatalf("levels: %v", err)
	}
	return t.Levels
}

func (e *fsmEnv) operator(c *transcript.Command, b *strings.Builder) {
	c.Only(append([]string{"tenant", "all", "level", "by", "reason"}, entryOptions...)...)
	op := &raftfsm.Operator{Tenant: c.Str("tenant", ""), All: c.Has("all"), By: c.Str("by", ""), Reason: c.Str("reason", "")}
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
		// operator requeue [ID...]: the blocks named, or every quarantined one.
		op.Blocks = args[1:]
		if len(op.Blocks) == 0 {
			q, _ := e.n.f.Quarantined("", 0)
			for _, qb := range q {
				op.Blocks = append(op.Blocks, qb.ID)
			}
		}
		op.Action = raftfsm.OpRequeue
	case "mark":
		// operator mark ID... [reason=...] [by=...]
		op.Action, op.Blocks = raftfsm.OpMark, args[1:]
	default:
		c.Fatalf("unknown operator action %s", args[0])
	}
	res, err := e.propose(c, &raftfsm.Command{Operator: op})
	if err != nil {
		e.error(b, err)
		return
	}
	fmt.Fprintf(b, "count %d", res.Count)
}
