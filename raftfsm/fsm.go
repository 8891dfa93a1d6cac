package raftfsm

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/index"
	"github.com/compactkit/compactkit/internal/invariant"
	"github.com/compactkit/compactkit/planner"
	"github.com/compactkit/compactkit/policy"
	"github.com/compactkit/compactkit/scheduler"
)

// FSM is the compaction state machine: a planner, a scheduler and an index
// wired together, changed only by [FSM.Apply].
//
// Apply, Snapshot, Restore and the queries may be called from any
// goroutine; they are serialised by a mutex. [FSM.Prepare] holds the mutex
// only to open copy-on-write views (O(1)) and does its work outside it, so
// a leader prepares polls while entries are being applied.
type FSM struct {
	mu   sync.Mutex
	opts options
	st   *state
	// failed is set when the replica read an entry it cannot trust (see
	// ErrCorrupt); it is local, never replicated, and cleared by Restore.
	failed error
	// proposed holds the polls this replica encoded and has not applied
	// yet, oldest first (see proposed.go); local, never replicated.
	proposed []proposed
	// spare holds encoding buffers of applied proposals for Encode to
	// reuse (see proposed.go).
	spare [][]byte
}

// state is everything replicated. Restore builds a new one and swaps it in.
type state struct {
	cfg            Config
	planner        *planner.Planner
	sched          *scheduler.Scheduler
	index          *index.Index
	polls          *pollLog
	lastApplied    uint64
	lastTerm       uint64
	now            int64
	clusterVersion byte
	// policies are the scheduling policies.
	policies *policies
	// plannerHeld mirrors the holds the planner has of tenants at their
	// cap or closed by their policy, at every level or at some (see
	// syncHeld), for lookups: derived, rebuilt on restore.
	plannerHeld map[string]plannerHold
	// broken counts the invariants of Apply found broken (see invariant);
	// lastBroken is the latest. Local: not in snapshots.
	broken     uint64
	lastBroken error
	// skipped counts the changes of polls not applied, by reason. Local:
	// not in snapshots.
	skipped [scheduler.NumSkips]uint64
	// results is applyPoll's scratch for the scheduler's results of a
	// poll's changes, kept between polls (cleared after each) so that a
	// poll does not allocate it. Local: not in snapshots.
	results []scheduler.Result
}

// invariant reports err, which Apply believed unreachable: a panic in
// tests and under the "invariants" build tag, else counted (and logged by
// the FSM after the entry).
func (st *state) invariant(err error, what string) {
	if err == nil {
		return
	}
	err = fmt.Errorf("%s: %w", what, err)
	if invariant.Panics() {
		panic("raftfsm: invariant broken: " + err.Error())
	}
	st.broken++
	st.lastBroken = err
}

// Option tunes the local behaviour of an FSM: logging and how Prepare
// plans. Options never affect Apply.
type Option func(*options)

type options struct {
	log           *slog.Logger
	cleanupAfter  time.Duration
	cleanupUrgent time.Duration
	cleanupBatch  int
}

// WithLogger sets the logger. By default the state machine logs nothing.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.log = l
		}
	}
}

// WithCleanupAfter sets how long a released tombstone may wait for a
// compaction job to carry it before Prepare creates a cleanup-only job for
// it (default 1 minute). It tunes Prepare only.
func WithCleanupAfter(d time.Duration) Option {
	return func(o *options) {
		if d >= 0 {
			o.cleanupAfter = d
		}
	}
}

// WithCleanupUrgentAfter sets how long a released tombstone may wait
// before cleanup goes ahead of compaction (default 10 minutes): from then
// on, the first free slot of each poll gets a cleanup-only job before any
// compaction job, so that a fleet kept busy by compaction still deletes
// what it replaced. Before that, cleanup-only jobs only fill the capacity
// compaction leaves (see [WithCleanupAfter]). Values below the cleanup
// wait act as the cleanup wait. It tunes Prepare only.
func WithCleanupUrgentAfter(d time.Duration) Option {
	return func(o *options) {
		if d >= 0 {
			o.cleanupUrgent = d
		}
	}
}

// WithCleanupBatch sets how many tombstones one cleanup-only job carries
// (default 64, at most 1024: more carry 1024).
func WithCleanupBatch(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.cleanupBatch = n
		}
	}
}

func newOptions(opts []Option) options {
	o := options{log: slog.New(slog.DiscardHandler), cleanupAfter: time.Minute, cleanupUrgent: 10 * time.Minute, cleanupBatch: 64}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// New returns a state machine that has applied nothing, with the
// configuration cfg. The configuration is replicated state: every replica
// of a log must start from the same one (or apply a config command first,
// see [Command.Config]).
func New(cfg Config, opts ...Option) (*FSM, error) {
	st, err := newState(cfg)
	if err != nil {
		return nil, err
	}
	return &FSM{opts: newOptions(opts), st: st}, nil
}

func newState(cfg Config) (*state, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p, err := planner.New(cfg.Planner)
	if err != nil {
		return nil, fmt.Errorf("raftfsm: %w", err)
	}
	s, err := scheduler.New(cfg.Scheduler)
	if err != nil {
		return nil, fmt.Errorf("raftfsm: %w", err)
	}
	x, err := index.New(cfg.Index)
	if err != nil {
		return nil, fmt.Errorf("raftfsm: %w", err)
	}
	version := cfg.StartVersion
	if version == 0 {
		version = CommandVersion
	}
	cfg.StartVersion = 0 // read once, here
	st := &state{cfg: cfg, planner: p, sched: s, index: x, polls: newPollLog(), clusterVersion: version, policies: newPolicies()}
	st.installPolicies()
	return st, nil
}

// Result is what applying one entry did. For a poll, Poll is the response
// the worker gets.
type Result struct {
	// Index and Term are the entry's position in the log.
	Index, Term uint64
	// Skipped reports an entry at or below the last applied index: nothing
	// was done.
	Skipped bool
	// Now is the effective log time the entry was applied at.
	Now int64
	// Poll is the response to a poll command. Replayed reports a retried
	// poll answered from the poll log, which acted on nothing.
	Poll     *ck.PollResponse
	Replayed bool
	// Changes says, for a poll, what became of each change of its update,
	// in order.
	Changes []ChangeResult
	// Blocks says, for an add-blocks command, what became of each block,
	// in order.
	Blocks []BlockResult
	// Cancelled lists the jobs cancelled: by an operator, or because
	// retention dropped one of their sources.
	Cancelled []string
	// Dropped lists the blocks retention removed.
	Dropped []string
	// Count is the number of jobs retried (OpRetry), blocks re-queued
	// (OpRequeue) or leases extended (TookOffice).
	Count int
}

// ChangeResult is what became of one change of a poll.
type ChangeResult struct {
	Kind    ck.ChangeKind
	Job     string
	Applied bool
	// Reason says why the change was skipped (zero if it was applied),
	// and Detail explains it naming the offending values (it
	// may be empty). Why puts them together for people.
	Reason scheduler.Skip
	Detail string
	// Token is the job's token after an applied add or assign.
	Token fencing.Token
	// Excluded reports an applied change that excluded the job: a failure
	// or an expired lease at the failure limit. Quarantined is the number
	// of blocks an applied evict quarantined.
	Excluded    bool
	Quarantined int
	// Level is the level of the job's sources (applied changes).
	Level uint32
	// Replace is the index's verdict on an applied completion of a
	// compaction job (nil for cleanup-only jobs and other changes).
	Replace *index.ReplaceResult
}

// Why says why the change was skipped, for people: the reason and its
// detail ("stale version: prepared against 1, job at 2 before entry 3"), or
// "" for an applied change.
func (c *ChangeResult) Why() string {
	return (&scheduler.Result{Reason: c.Reason, Detail: c.Detail}).Why()
}

// BlockResult is what became of one block of an add-blocks command.
type BlockResult struct {
	ID string
	// Err is nil if the block entered the index, or says why it did not
	// (errors.Is(Err, index.ErrDuplicate) for a duplicate).
	Err error
	// Queued reports that the block entered the compaction queue (false
	// for a block at the final level).
	Queued bool
	// Pressure is the backpressure grade of the block's tenant after the
	// command (see policy.Thresholds), or of the block's shard if that is
	// higher (policy.Tenant.ShardPressure): advice for the host's ingest,
	// OK for a tenant without thresholds.
	Pressure policy.Grade
}

// Apply applies one log entry: the only way the state changes. data is a
// command encoded by [FSM.Encode] (or [Command.MarshalVersion]).
//
// An entry whose index is at or below the last applied index is skipped
// (Result.Skipped). A command that cannot be carried out — one that fails
// validation, of a version above the cluster version, stamped too far
// ahead of the log's time ([ErrClock]), or refused by the state (an
// operator cancelling an unknown job, a config that would strand blocks, a
// stale poll) — returns an error and changes nothing, not even the last
// applied index: every replica refuses it alike.
//
// An entry the replica cannot trust is different: a checksum mismatch, an
// unknown command version, or bytes whose header does not decode mean
// that this replica's copy is damaged, and refusing it would make the
// replica diverge from those that read it intact. The replica
// stops instead: Apply returns an error wrapping [ErrCorrupt], and so does
// every later Apply and Prepare, until a snapshot is restored. Apply never
// panics on input.
//
// The effective time of the entry is max(previous time, command time), or
// the entry's time for a command without one: the only clock every
// component sees.
func (f *FSM) Apply(e ck.Entry, data []byte) (*Result, error) {
	return f.applyData(e, data, false)
}

// ApplyAt is Apply for a log that times its entries itself: the command is
// applied at e.Time, the entry's time, instead of the time its proposer
// stamped on it. The bucket log uses it to take time from the store's
// clock. The usual rules hold: the state machine's time never goes back,
// and an e.Time more than [Config.MaxClockStep]
// ahead of the log's time is refused, so the log bounds it first.
func (f *FSM) ApplyAt(e ck.Entry, data []byte) (*Result, error) {
	return f.applyData(e, data, true)
}

func (f *FSM) applyData(e ck.Entry, data []byte, atEntryTime bool) (*Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failed != nil {
		return nil, f.failed
	}
	if err := e.Validate(); err != nil {
		return nil, fmt.Errorf("raftfsm: entry: %w", err)
	}
	if e.Index <= f.st.lastApplied {
		return &Result{Index: e.Index, Skipped: true, Now: f.st.now}, nil
	}
	cmd, version, ok := f.take(data)
	var err error
	if !ok {
		cmd, version, err = decodeCommand(data)
	}
	if err != nil {
		if f.damaged(version, err) {
			return nil, f.stop(e, err)
		}
		return nil, &entryError{Index: e.Index, Err: err}
	}
	if version > f.st.clusterVersion {
		return nil, &entryError{Index: e.Index, Err: fmt.Errorf("command version %d above the cluster version %d: %w", version, f.st.clusterVersion, ErrClusterVersion)}
	}
	if atEntryTime {
		cmd.Time = e.Time
	}
	return f.apply(e, cmd)
}

// damaged reports whether a command that failed to decode means that the
// replica's copy of the entry is damaged.
func (f *FSM) damaged(version byte, err error) bool {
	switch {
	case errors.Is(err, ck.ErrChecksum), errors.Is(err, ck.ErrUnknownVersion):
		return true
	case version != 0:
		// The checksum matched: these are the bytes the leader wrote, and
		// every replica refuses them alike.
		return false
	default:
		// The header is unreadable: leaders write only commands with
		// one, so the bytes are damaged.
		return true
	}
}

// stop marks the replica failed on entry e and returns the error it
// answers from now on.
func (f *FSM) stop(e ck.Entry, cause error) error {
	f.failed = &entryError{Index: e.Index, Err: fmt.Errorf("%w: %w", ErrCorrupt, cause)}
	f.opts.log.Error("raftfsm: replica stopped: restore a snapshot to recover", "entry", e.Index, "err", cause)
	return f.failed
}

// Encode stamps cmd with the leader's time and encodes it for proposal: the
// way a leader turns a command into the bytes of a log entry. The time is
// now (the leader's clock), but never behind the log's time, and never more than [Config.MaxClockStep] ahead of it (a
// clock further ahead is logged); whatever time cmd carried is
// overwritten. The encoding is the newest version the replicated cluster
// version allows, so replicas of the previous release can read it during a
// rolling upgrade. A command that does not validate is refused.
//
// The replica keeps a copy of the last few polls it encoded (their bytes
// and the poll as decoding gives it): applying an entry with exactly those
// bytes takes the copy instead of decoding them, which saves a leader a
// tenth of applying its own polls. cmd stays the caller's.
func (f *FSM) Encode(cmd *Command, now int64) ([]byte, error) {
	if err := cmd.Validate(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	if f.failed != nil {
		f.mu.Unlock()
		return nil, f.failed
	}
	if err := f.st.cfg.Limits.withDefaults().checkCommand(cmd); err != nil {
		f.mu.Unlock()
		return nil, fmt.Errorf("raftfsm: %w", err)
	}
	cmd.Time = f.stampLocked(now)
	version := f.st.clusterVersion
	buf := f.spareBuf()
	f.mu.Unlock()
	enc, err := cmd.appendVersion(buf, version)
	if err != nil {
		return nil, err
	}
	// The caller gets a copy: enc stays the replica's own, kept with the
	// proposal or reused.
	data := bytes.Clone(enc)
	p, ok := proposal(cmd, enc, version)
	f.mu.Lock()
	if ok {
		f.remember(p)
	} else {
		f.keepSpare(enc)
	}
	f.mu.Unlock()
	return data, nil
}

// stampLocked returns the time the leader stamps on a command at its clock
// now: max(now, log time), at most one clock step ahead of the log's time.
func (f *FSM) stampLocked(now int64) int64 {
	st := f.st
	t := max(now, st.now)
	if st.now > 0 {
		if limit := st.now + st.cfg.maxClockStep(); t > limit {
			f.opts.log.Warn("raftfsm: leader clock ahead of the log's time by more than the clock step: stamping the limit",
				"clock", time.Unix(0, now).UTC(), "log_time", time.Unix(0, st.now).UTC(), "max_clock_step", time.Duration(st.cfg.maxClockStep()))
			t = limit
		}
	}
	return t
}

func (f *FSM) apply(e ck.Entry, cmd *Command) (*Result, error) {
	st := f.st
	t := cmd.Time
	if t == 0 {
		t = e.Time
	}
	if st.now > 0 && t-st.now > st.cfg.maxClockStep() {
		return nil, &entryError{Index: e.Index, Err: fmt.Errorf("command time %s is %s ahead of the log's time, limit %s: %w",
			time.Unix(0, t).UTC().Format(time.RFC3339Nano), time.Duration(t-st.now), time.Duration(st.cfg.maxClockStep()), ErrClock)}
	}
	now := max(st.now, t)
	// One clock: the components see the state machine's time, never the
	// entry's own.
	e.Time = now
	if err := st.cfg.Limits.withDefaults().checkCommand(cmd); err != nil {
		return nil, &entryError{Index: e.Index, Err: err}
	}
	res := &Result{Index: e.Index, Term: e.Term, Now: now}
	broken := st.broken
	if now >= st.policies.edge {
		// A window edge or a not-before time passed: judged at the first
		// entry past it, before its command, on every replica alike.
		st.rejudge(now)
	}
	var err error
	switch {
	case cmd.AddBlocks != nil:
		st.applyAddBlocks(e, now, cmd.AddBlocks, res)
	case cmd.Poll != nil:
		err = st.applyPoll(e, now, cmd.Poll, res, f.opts.log)
	case cmd.Config != nil:
		if err = st.applyConfig(cmd.Config); err == nil {
			st.regradeAll(now)
		}
	case cmd.TookOffice != nil:
		res.Count = st.sched.ExtendLeases(e, now)
	case cmd.Retention != nil:
		st.applyRetention(e, now, cmd.Retention, res)
	case cmd.Watermark != nil:
		st.index.SetWatermark(now, cmd.Watermark.OldestReader)
	case cmd.Operator != nil:
		err = st.applyOperator(e, now, cmd.Operator, res)
		if err == nil {
			o := cmd.Operator
			f.opts.log.Info("raftfsm: operator command", "entry", e.Index, "action", o.Action.String(), "by", o.By,
				"tenant", o.Tenant, "job", o.Job, "blocks", len(o.Blocks))
		}
	case cmd.Policy != nil:
		err = st.applyPolicy(e, now, cmd.Policy, res)
		if err == nil {
			p := cmd.Policy
			f.opts.log.Info("raftfsm: policy command", "entry", e.Index, "action", p.Action.String(), "by", p.By, "tenant", p.Tenant, "all", p.All)
		}
	case cmd.PreparePoll != nil:
		// Only the clock moves: the entry's index is the token of the
		// assignments of the poll update that follows.
	case cmd.ClusterVersion != nil:
		if cmd.ClusterVersion.Version < st.clusterVersion {
			err = fmt.Errorf("raftfsm: cluster version %d below the current %d: %w", cmd.ClusterVersion.Version, st.clusterVersion, ErrClusterVersion)
		} else {
			prev := st.clusterVersion
			st.raiseVersion(cmd.ClusterVersion.Version)
			if prev < policyGradesVersion && st.clusterVersion >= policyGradesVersion {
				// Every grade is judged again under version 6's rules.
				st.regradeAll(now)
			}
		}
	}
	if err != nil {
		return nil, &entryError{Index: e.Index, Err: err}
	}
	if st.broken != broken {
		f.opts.log.Error("raftfsm: an invariant of Apply broke; the state may be inconsistent: report it", "entry", e.Index, "count", st.broken, "err", st.lastBroken)
	}
	st.now = now
	st.lastApplied = e.Index
	st.lastTerm = e.Term
	st.sched.Expire(now)
	st.index.Expire(now)
	st.polls.expire(now - int64(st.cfg.pollLogTTL()))
	return res, nil
}

// raiseVersion moves the cluster version to v (not below the current). A
// version whose Apply would have made something else of the state brings
// the state to it here, on every replica at the same entry.
func (st *state) raiseVersion(v byte) {
	st.clusterVersion = v
}

func (st *state) applyAddBlocks(e ck.Entry, now int64, a *AddBlocks, res *Result) {
	res.Blocks = make([]BlockResult, len(a.Blocks))
	for i := range a.Blocks {
		b := &a.Blocks[i]
		br := &res.Blocks[i]
		br.ID = b.ID
		if br.Err = st.index.Add(e, now, b); br.Err != nil {
			continue
		}
		br.Queued, br.Err = st.planner.Enqueue(e, b)
	}
	if !st.policies.configured() {
		return
	}
	st.holdArrivals(a.Blocks)
	// Grade the backpressure of the tenants and shards the blocks went to,
	// once each, in the order they first appear (deterministic). A block
	// queued under a cross-shard key counts for that key's shard.
	var seen []string
	var shards []tenantShard
	for i := range a.Blocks {
		b := &a.Blocks[i]
		if !slices.Contains(seen, b.Tenant) {
			seen = append(seen, b.Tenant)
			st.regrade(b.Tenant, now)
		}
		if k := st.shardOf(b); !slices.Contains(shards, k) {
			shards = append(shards, k)
			st.regradeShard(k.tenant, k.shard, now)
		}
	}
	for i := range res.Blocks {
		b := &a.Blocks[i]
		res.Blocks[i].Pressure = max(st.policies.grades[b.Tenant], st.policies.shardGrades[st.shardOf(b)])
	}
}

// shardOf returns the tenant's shard a block is graded in: its shard, or
// the cross-shard keys' if the planner queues its level across shards.
func (st *state) shardOf(b *ck.BlockMeta) tenantShard {
	k := tenantShard{tenant: b.Tenant, shard: b.Shard}
	if lc, ok := st.planner.LevelConfig(b.Tenant, b.Level); ok && lc.CrossShard {
		k.shard = ck.AnyShard
	}
	return k
}

func (st *state) applyConfig(cfg *Config) error {
	// Every component validates first, so that the only refusal left is
	// the planner's (lowering the final level below queued blocks), which
	// comes first and changes nothing on error.
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := st.planner.SetConfig(cfg.Planner); err != nil {
		return err
	}
	if err := st.sched.SetConfig(cfg.Scheduler); err != nil {
		return err // unreachable: validated above
	}
	if err := st.index.SetConfig(cfg.Index); err != nil {
		return err // unreachable: validated above
	}
	st.cfg = *cfg
	st.cfg.StartVersion = 0
	return nil
}

// orphan tombstones the output prefix of an attempt that ended without
// being committed.
func (st *state) orphan(now int64, job string, token fencing.Token) {
	if token == 0 {
		return
	}
	// A live block under the prefix means the attempt was committed:
	// then there is nothing to delete.
	if err := st.index.AddOrphan(now, ck.AttemptPrefix(job, token)); !errors.Is(err, index.ErrLiveUnderPrefix) {
		st.invariant(err, "orphan of "+job)
	}
}

// release ends the claim of a removed job: its sources that are still
// live go back to the queue, its tombstones back to the pool, and the
// outputs of an attempt in progress become orphans (pass 0 for a
// cleanup-only job, whose attempts write nothing).
func (st *state) release(now int64, job string, prevToken fencing.Token) {
	if srcs, ok := st.planner.Claimed(job); ok {
		keep := make([]string, 0, len(srcs))
		iv := st.index.View()
		for _, id := range srcs {
			if iv.Live(id) {
				keep = append(keep, id)
			}
		}
		iv.Close()
		st.invariant(st.planner.Return(job, keep), "return of "+job) // keep ⊆ the job's sources
	}
	st.index.Detach(job)
	st.orphan(now, job, prevToken)
}

func (st *state) applyRetention(e ck.Entry, now int64, r *Retention, res *Result) {
	dropped := st.index.DropBefore(e, now, r.Tenant, r.All, r.Before)
	for _, b := range dropped {
		res.Dropped = append(res.Dropped, b.ID)
	}
	var qc queueChanges
	st.addBlocks(&qc, dropped)
	for _, job := range st.planner.Drop(dropped) {
		var prev fencing.Token
		sr, err := st.sched.Cancel(e, now, job)
		if err == nil && !sr.Plan.CleanupOnly() {
			prev = sr.PrevToken
		}
		st.release(now, job, prev)
		res.Cancelled = append(res.Cancelled, job)
		if err == nil {
			st.syncHeld(sr.Plan.Tenant)
			st.addJob(&qc, sr.Plan)
		}
	}
	st.regradeChanged(now, &qc)
}

func (st *state) applyOperator(e ck.Entry, now int64, o *Operator, res *Result) error {
	switch o.Action {
	case OpPause, OpResume:
		rule := scheduler.PauseRule{Tenant: o.Tenant, AllTenants: o.All, AllLevels: o.Level == nil}
		if o.Level != nil {
			rule.Level = *o.Level
		}
		st.sched.SetPause(rule, o.Action == OpPause)
	case OpRetry:
		n, err := st.sched.Retry(e, now, o.Job, o.By)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrOperator, err)
		}
		res.Count = n
	case OpSetMaxFailures:
		cfg := st.cfg
		cfg.Scheduler.MaxFailures = o.MaxFailures
		if err := st.sched.SetConfig(cfg.Scheduler); err != nil {
			return fmt.Errorf("%w: %w", ErrOperator, err)
		}
		st.cfg = cfg
	case OpCancel:
		sr, err := st.sched.Cancel(e, now, o.Job)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrOperator, err)
		}
		prev := sr.PrevToken
		if sr.Plan.CleanupOnly() {
			prev = 0
		}
		st.release(now, o.Job, prev)
		res.Cancelled = append(res.Cancelled, o.Job)
		st.syncHeld(sr.Plan.Tenant)
		var qc queueChanges
		st.addJob(&qc, sr.Plan)
		st.regradeChanged(now, &qc)
	case OpRequeue:
		n, err := st.planner.Requeue(o.Blocks)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrOperator, err)
		}
		res.Count = n
		st.regradeIDs(now, o.Blocks)
	case OpMark:
		// The planner finds a block under its key: the index's metadata
		// says which. A block that is not live is refused.
		metas := make([]ck.BlockMeta, len(o.Blocks))
		iv := st.index.View()
		for i, id := range o.Blocks {
			m, ok := iv.Lookup(id)
			if !ok {
				iv.Close()
				return fmt.Errorf("%w: mark %s: not a live block", ErrOperator, id)
			}
			metas[i] = m
		}
		iv.Close()
		reason := cmp.Or(o.Reason, "no reason given")
		if o.By != "" {
			reason = "marked by " + o.By + ": " + reason
		} else {
			reason = "marked: " + reason
		}
		n, err := st.planner.Mark(e, metas, reason)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrOperator, err)
		}
		res.Count = n
		st.regradeBlocks(now, metas)
	}
	return nil
}
