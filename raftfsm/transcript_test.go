package raftfsm_test

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/internal/ident"
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

// transcriptVersion is the cluster version a transcript starts at unless
// it says version=N: the behaviour of later versions is in transcripts
// that say so (policy-v6-*.txt), beside the unchanged ones.
const transcriptVersion = 5

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
	cfg.StartVersion = byte(c.Int("version", int64(transcriptVersion)))
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
	cfg.StartVersion = transcriptVersion
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
	case "add-blocks", "config", "cluster-version", "took-office", "retention", "operator", "policy":
		e.runLog(c, &b)
	case "poll", "prepare", "apply", "forge", "raw":
		e.runPoll(c, &b)
	case "policies", "pressure", "job", "jobs", "stats", "index", "quarantined", "tenants", "recorded":
		e.runQuery(c, &b)
	case "restore", "mark", "unchanged", "same", "replica", "compare":
		e.runState(c, &b)
	default:
		c.Fatalf("unknown command")
	}
	return b.String()
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
	{"ck.ErrInconsistent", ident.ErrInconsistent},
	{"ck.ErrMissingOutputs", ident.ErrMissingOutputs},
	{"ck.ErrInvalidID", ident.ErrInvalidID},
	{"ck.ErrEmptyID", ident.ErrEmptyID},
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
		return cmd.MarshalVersion(raftfsm.CommandVersion)
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
