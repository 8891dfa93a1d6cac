package bucketlog

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/raftfsm"
)

// Errors of the log.
var (
	// ErrUnsupportedStore reports a store that lacks what the log needs:
	// a create-if-absent ([blockmerge.ConditionalPutter]), or, to read an
	// entry timed by the store, the objects' modification times
	// ([blockmerge.Timestamper]); the replica stops rather than time such
	// an entry differently.
	ErrUnsupportedStore = errors.New("bucketlog: unsupported store")
	// ErrCorrupt reports an entry or checkpoint that breaks the chain or
	// does not decode: the replica stops rather than skip it.
	ErrCorrupt = errors.New("bucketlog: corrupt log")
)

// defaultCheckpointEvery is the default checkpoint interval, in entries.
const defaultCheckpointEvery = 256

// Option configures a [Log].
type Option func(*Log)

// WithCheckpointEvery sets the checkpoint interval in entries (default
// 256; 0 writes none).
func WithCheckpointEvery(n uint64) Option { return func(l *Log) { l.every = n } }

// WithObserver calls fn for every entry the log applies, in log order,
// with the command's bytes and how it was applied — for a host that audits
// or indexes the log. fn runs while the log is locked: it must not call
// the log.
func WithObserver(fn func(cmd []byte, a leader.Applied)) Option {
	return func(l *Log) { l.observe = fn }
}

// WithClock sets the clock the log stamps its entries with (default
// time.Now): a test or a simulation gives it a fake one. See [Log] for
// how the stamp and the store's time make an entry's time.
func WithClock(clock func() time.Time) Option {
	return func(l *Log) {
		if clock != nil {
			l.clock = clock
		}
	}
}

// WithoutStoreTime makes the entries this coordinator appends take their
// time from its stamp alone, even on a store that reports modification
// times ([blockmerge.Timestamper]). It saves one request per entry read (a
// HEAD on S3) at the price of trusting the proposers' clocks to within the
// clock step. Each entry records how it is timed, so every replica times
// it alike whatever its own options.
func WithoutStoreTime() Option { return func(l *Log) { l.stampOnly = true } }

// WithCatchUpLimit bounds what a replica far behind reads: after reading
// n entries in one catch-up it looks for a newer checkpoint (one LIST) and,
// if there is one, restores it instead of reading the rest. A serverless
// worker, which reads every other worker's polls, pays at most about n
// reads, a LIST, one checkpoint and the entries after it per catch-up,
// however large the fleet (0, the default: no limit).
func WithCatchUpLimit(n int) Option { return func(l *Log) { l.jumpAfter = n } }

// WithTruncateGrace sets the time between raising the low-water mark over
// an entry and deleting it (default a minute); see
// [Log.Truncate]. Give every coordinator of a log the same: an append that
// stalled for half of it checks the mark again. 0 deletes at once (and
// checks the mark after every append): for tests.
func WithTruncateGrace(d time.Duration) Option { return func(l *Log) { l.grace = max(d, 0) } }

// WithLogger sets the log's logger (default: discard).
func WithLogger(lg *slog.Logger) Option {
	return func(l *Log) {
		if lg != nil {
			l.log = lg
		}
	}
}

// Log is one coordinator's view of a bucket log: it implements
// [leader.Log] over its own replica of the state machine.
//
// Concurrent proposals are batched: whichever caller holds the append
// lock writes every command waiting for it (up to 64 commands and
// 8 MiB) as one entry, so a coordinator serving ingest and polls
// at once pays one conditional create for many commands.
type Log struct {
	store blockmerge.Store
	cond  blockmerge.ConditionalPutter
	timer blockmerge.Timestamper // nil: the store reports no times
	// stampOnly: the entries this coordinator appends are timed by their
	// stamp (WithoutStoreTime).
	stampOnly bool
	clock     func() time.Time
	// offset is the store's time less this coordinator's clock, as the
	// last entry it appended measured it (see [Log.Now]).
	offset  atomic.Int64
	prefix  string
	fsm     *raftfsm.FSM
	id      string
	every   uint64
	log     *slog.Logger
	observe func(cmd []byte, a leader.Applied)

	mu      sync.Mutex // serialises catch-up and appends
	applied uint64     // the last entry applied
	index   uint64     // the log index of its last command
	hash    [32]byte   // its hash
	seq     uint64     // this coordinator's proposals, for nonces
	failed  error
	stats   Stats
	// contended: the last append lost a race; the next reads the tip
	// before it creates.
	contended bool
	jumpAfter int           // WithCatchUpLimit
	grace     time.Duration // WithTruncateGrace
	clear     uint64        // the last entry found above the mark,
	clearAt   time.Time     // when (see checkedClear)

	qmu   sync.Mutex
	queue []*proposal // waiting for the append lock, oldest first
}

// proposal is one command waiting to be appended; the fields below cmd
// are set, under Log.mu, by whichever caller appended it.
type proposal struct {
	cmd        []byte
	preparedAt uint64
	done       bool
	a          leader.Applied
	err        error
}

// Batching bounds: one entry carries at most maxBatch commands and, beyond
// its first command, at most maxEntryBytes of them.
const (
	maxBatch      = 64
	maxEntryBytes = 8 << 20
)

// Stats counts what a coordinator's log did.
type Stats struct {
	// Appended counts the entries this coordinator created and Commands
	// the commands in them; Conflicts the commands it could not append
	// because another coordinator won the race for an index (or the log
	// moved on after the command was prepared); Read the entries it read
	// and applied, its own included; Extensions the leases extensions the
	// log applied before an entry whose time stepped more than one lease.
	Appended, Commands, Conflicts, Read, Extensions uint64
	// Jumps counts the checkpoints restored to skip entries
	// (WithCatchUpLimit).
	Jumps uint64
}

// Stats returns the log's counters.
func (l *Log) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stats
}

var _ leader.Log = (*Log)(nil)

// Open returns coordinator id's view of the log under prefix in store,
// whose state machine is fsm (a new one: Open restores it from the newest
// readable checkpoint and replays the entries after it). id must be
// unique among the coordinators of the log and across their restarts
// (e.g. a name and a start time): it makes proposals' nonces unique.
func Open(ctx context.Context, store blockmerge.Store, prefix string, fsm *raftfsm.FSM, id string, opts ...Option) (*Log, error) {
	cond, ok := store.(blockmerge.ConditionalPutter)
	if !ok {
		return nil, fmt.Errorf("%w: %T has no conditional put", ErrUnsupportedStore, store)
	}
	if err := blockmerge.ValidateKey(prefix); err != nil || strings.HasSuffix(prefix, "/") {
		return nil, fmt.Errorf("bucketlog: prefix %q: want a key prefix without a trailing '/'", prefix)
	}
	if id == "" || strings.ContainsAny(id, "\n/") {
		return nil, fmt.Errorf("bucketlog: coordinator ID %q", id)
	}
	l := &Log{store: store, cond: cond, prefix: prefix, fsm: fsm, id: id, every: defaultCheckpointEvery,
		clock: time.Now, grace: defaultTruncateGrace, log: slog.New(slog.DiscardHandler)}
	l.timer, _ = store.(blockmerge.Timestamper)
	for _, o := range opts {
		o(l)
	}
	if err := l.restore(ctx); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.catchUp(ctx); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *Log) entryKey(n uint64) string { return fmt.Sprintf("%s/log/%020d", l.prefix, n) }
func (l *Log) checkpointKey(n uint64) string {
	return fmt.Sprintf("%s/checkpoint/%020d", l.prefix, n)
}

// Index returns the log index of the last command applied (refused or
// not; the state machine's [raftfsm.FSM.LastApplied] is that of the last
// one it did not refuse).
func (l *Log) Index() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.index
}

// Applied returns the number of the last entry applied.
func (l *Log) Applied() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.applied
}

// read returns entry n, or nil if it does not exist.
func (l *Log) read(ctx context.Context, key string) ([]byte, error) {
	rc, err := l.store.Get(ctx, key)
	if errors.Is(err, blockmerge.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// catchUp applies every entry after the last applied one, up to the tip.
func (l *Log) catchUp(ctx context.Context) error {
	_, err := l.catchUpFor(ctx, "")
	return err
}

// catchUpFor is catchUp, returning what applying the commands of the entry
// carrying nonce returned, if it read that entry (the next one: the entry
// the caller tried to create). A jump (WithCatchUpLimit) waits until that
// entry was read.
func (l *Log) catchUpFor(ctx context.Context, nonce string) ([]leader.Applied, error) {
	var mine []leader.Applied
	next := l.applied + 1
	for read := 0; ; read++ {
		if l.failed != nil {
			return nil, l.failed
		}
		if l.jumpAfter > 0 && read == l.jumpAfter && (nonce == "" || l.applied >= next) {
			if err := l.jump(ctx); err != nil {
				return mine, err
			}
		}
		n := l.applied + 1
		data, err := l.read(ctx, l.entryKey(n))
		if err != nil {
			return mine, fmt.Errorf("bucketlog: read entry %d: %w", n, err)
		}
		if data == nil {
			// The tip, or an entry truncated behind this replica.
			if restored, err := l.behindMark(ctx, n); err != nil || !restored {
				return mine, err
			}
			continue
		}
		as, entryNonce, err := l.apply(ctx, n, data)
		if errors.Is(err, errEntryGone) {
			// Deleted between its read and its time's: truncated.
			if restored, err := l.behindMark(ctx, n); err != nil || !restored {
				return mine, fmt.Errorf("bucketlog: entry %d vanished and is not below the low-water mark: %w", n, ErrCorrupt)
			}
			continue
		}
		if err != nil {
			return mine, err
		}
		if nonce != "" && entryNonce == nonce {
			mine = as
		}
	}
}

// apply checks entry n's place in the chain and applies its commands at
// the entry's time (see [Log.entryTime]), after extending the leases in
// progress if that time steps more than one lease past the log's. It
// returns what applying each command returned, and the entry's nonce.
func (l *Log) apply(ctx context.Context, n uint64, data []byte) ([]leader.Applied, string, error) {
	e, err := decodeEntry(data)
	if err == nil && (e.number != n || e.prev != l.hash || e.first != l.index+1) {
		err = fmt.Errorf("%w: entry %d claims number %d, first index %d (want %d) and a previous hash that does not match entry %d",
			ErrCorrupt, n, e.number, e.first, l.index+1, n-1)
	}
	if err != nil {
		l.failed = fmt.Errorf("bucketlog: entry %d: %w", n, err)
		l.log.Error("bucketlog: replica stopped: the log is corrupt", "entry", n, "err", err)
		return nil, "", l.failed
	}
	index := e.first
	applyOne := func(cmd []byte, t int64, v1 bool) (leader.Applied, error) {
		ent := ck.Entry{Index: index, Term: 1, Time: t}
		var res *raftfsm.Result
		var aerr error
		if v1 {
			res, aerr = l.fsm.Apply(ent, cmd)
		} else {
			res, aerr = l.fsm.ApplyAt(ent, cmd)
		}
		if errors.Is(aerr, raftfsm.ErrCorrupt) {
			l.failed = aerr
			return leader.Applied{}, aerr
		}
		a := leader.Applied{Index: index, Term: 1, Result: res, Err: aerr}
		if l.observe != nil {
			l.observe(cmd, a)
		}
		index++
		return a, nil
	}
	var t int64
	if !e.v1 {
		if t, err = l.entryTime(ctx, n, e); err != nil {
			return nil, "", err
		}
		if ext, err := l.extension(t); err != nil {
			return nil, "", err
		} else if ext != nil {
			// Not one of the entry's commands: every replica derives it
			// from the same entry and state, and it takes the first index.
			if _, err := applyOne(ext, t, false); err != nil {
				return nil, "", err
			}
			l.stats.Extensions++
		}
	}
	as := make([]leader.Applied, 0, len(e.cmds))
	for _, cmd := range e.cmds {
		a, err := applyOne(cmd, t, e.v1)
		if err != nil {
			return nil, "", err
		}
		as = append(as, a)
	}
	l.applied, l.index, l.hash = n, index-1, sha256.Sum256(data)
	l.stats.Read++
	if !e.v1 && strings.HasPrefix(e.nonce, l.id+"/") {
		// This coordinator's own entry: its time less its stamp is how
		// far the log's time is from this coordinator's clock.
		l.offset.Store(t - e.stamp)
	}
	return as, e.nonce, nil
}

// Now is the log's time as this coordinator can tell it: its clock,
// corrected by how far the last entry it appended was timed from its
// stamp (the store's clock against its own, within the clock step). A
// leader service over the log prepares polls with it
// (leader.WithClock(log.Now); [OpenNode] does so), so that a coordinator
// whose clock is off by more than a lease judges leases as Apply will:
// with its own clock it would take healthy jobs' leases for expired,
// propose reassignments that Apply refuses, and leave its workers
// without work while the error lasts.
func (l *Log) Now() time.Time { return l.clock().Add(time.Duration(l.offset.Load())) }

// entryTime is the time entry n is applied at: the store's time of the
// object, bounded to within the clock step ([raftfsm.Config.MaxClockStep],
// replicated) of the proposer's stamp — or the stamp alone if the store
// keeps no times — and then to the state machine's rule: never before the
// log's time, at most one clock step after it. Every replica computes the
// same time from the same object and state.
func (l *Log) entryTime(ctx context.Context, n uint64, e *entry) (int64, error) {
	step := int64(l.fsm.Config().MaxClockStep)
	if step <= 0 {
		step = int64(raftfsm.DefaultMaxClockStep)
	}
	t := e.stamp
	if e.stored {
		if l.timer == nil {
			// Timing it by the stamp would fork this replica.
			l.failed = fmt.Errorf("bucketlog: entry %d is timed by the store, and this store (%T) reports no modification times: %w", n, l.store, ErrUnsupportedStore)
			return 0, l.failed
		}
		mod, err := l.timer.ModTime(ctx, l.entryKey(n))
		if errors.Is(err, blockmerge.ErrNotFound) {
			return 0, errEntryGone
		}
		if err != nil {
			return 0, fmt.Errorf("bucketlog: time of entry %d: %w", n, err)
		}
		t = min(max(mod.UnixNano(), e.stamp-step), e.stamp+step)
	}
	if _, _, now := l.fsm.LastApplied(); now > 0 {
		t = min(max(t, now), now+step)
	}
	return t, nil
}

// extension returns the command that extends the leases in progress when
// time t steps more than one lease past the log's time (a coordinator
// outage, or one fast clock), as a new Raft leader's took-office does, so
// that healthy jobs are not charged a failure for time nobody could renew
// in; nil otherwise.
func (l *Log) extension(t int64) ([]byte, error) {
	_, _, now := l.fsm.LastApplied()
	if now == 0 || t-now <= int64(l.fsm.Config().Scheduler.LeaseDuration) {
		return nil, nil
	}
	cmd := &raftfsm.Command{TookOffice: &raftfsm.TookOffice{Leader: "bucketlog: time step"}, Time: t}
	return cmd.MarshalVersion(l.fsm.ClusterVersion())
}

// errEntryGone: an entry read was deleted before its time was.
var errEntryGone = errors.New("bucketlog: entry deleted while read")

// maxAppendTries bounds the appends of a command that does not depend on
// the state (preparedAt 0), each lost to another coordinator.
const maxAppendTries = 64

// Propose appends cmd, in an entry with whatever other commands are
// waiting (see [Log]). preparedAt is the last log index applied when cmd
// was prepared: if the log has moved on since (another coordinator
// appended), or another coordinator wins the race for the next entry,
// cmd is not appended and the error wraps leader.ErrConflict after the
// log caught up, for the service to prepare again. A command that does
// not depend on the state (preparedAt 0: new blocks, a took-office or
// configuration command) is appended again at the next entry instead,
// with a short backoff, up to a bound.
func (l *Log) Propose(ctx context.Context, cmd []byte, preparedAt uint64) (leader.Applied, error) {
	for try := 1; ; try++ {
		a, err := l.propose(ctx, cmd, preparedAt)
		if preparedAt != 0 || !errors.Is(err, leader.ErrConflict) || try == maxAppendTries {
			return a, err
		}
		// Jittered, so that coordinators that lost to each other do not
		// retry in step.
		select {
		case <-time.After(time.Duration(1+rand.IntN(1<<min(try, 5))) * time.Millisecond):
		case <-ctx.Done():
			return leader.Applied{}, fmt.Errorf("bucketlog: append: %w: %w", leader.ErrOutcomeUnknown, ctx.Err())
		}
	}
}

// propose queues cmd and appends batches until one carried it.
func (l *Log) propose(ctx context.Context, cmd []byte, preparedAt uint64) (leader.Applied, error) {
	out := l.ProposeBatch(ctx, []Proposal{{Cmd: cmd, PreparedAt: preparedAt}})
	return out[0].Applied, out[0].Err
}

// Proposal is one command given to [Log.ProposeBatch], with the log index
// its state was prepared at (0 if it does not depend on the state), and,
// once it returns, its outcome.
type Proposal struct {
	Cmd        []byte
	PreparedAt uint64
	// Applied and Err are what Propose would have returned for Cmd.
	Applied leader.Applied
	Err     error
}

// ProposeBatch appends the commands of ps together with whatever else is
// waiting, in as few entries as the batch bounds allow, and returns ps with
// each outcome filled in. Unlike Propose it does not append again a
// command that lost a race: its Err wraps leader.ErrConflict.
func (l *Log) ProposeBatch(ctx context.Context, ps []Proposal) []Proposal {
	mine := make([]*proposal, len(ps))
	l.qmu.Lock()
	for i := range ps {
		mine[i] = &proposal{cmd: ps[i].Cmd, preparedAt: ps[i].PreparedAt}
		l.queue = append(l.queue, mine[i])
	}
	l.qmu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range mine {
		for !p.done {
			l.appendBatch(ctx, l.take())
		}
	}
	for i, p := range mine {
		ps[i].Applied, ps[i].Err = p.a, p.err
	}
	return ps
}

// take removes the next batch from the queue.
func (l *Log) take() []*proposal {
	l.qmu.Lock()
	defer l.qmu.Unlock()
	n, size := 1, len(l.queue[0].cmd)
	for n < len(l.queue) && n < maxBatch && size+len(l.queue[n].cmd) <= maxEntryBytes {
		size += len(l.queue[n].cmd)
		n++
	}
	batch := slices.Clone(l.queue[:n])
	l.queue = slices.Delete(l.queue, 0, n)
	return batch
}

// appendBatch appends the proposals of batch still valid on the state as
// one entry and settles every proposal of batch.
func (l *Log) appendBatch(ctx context.Context, batch []*proposal) {
	start, quiet, err := l.readyTip(ctx)
	if err != nil {
		settle(batch, err)
		return
	}
	ps := l.admit(batch)
	if len(ps) == 0 {
		return
	}
	l.seq++
	n := l.applied + 1
	e := &entry{number: n, first: l.index + 1, prev: l.hash, stamp: l.clock().UnixNano(), stored: l.timer != nil && !l.stampOnly,
		nonce: l.id + "/" + strconv.FormatUint(l.seq, 10), cmds: make([][]byte, len(ps))}
	for i, p := range ps {
		e.cmds[i] = p.cmd
	}
	data := e.encode()
	err = l.cond.PutIfAbsent(ctx, l.entryKey(n), bytes.NewReader(data))
	switch {
	case err == nil && l.stalled(ctx, start, n):
		l.takeBack(ctx, n, ps)
	case err == nil:
		l.contended = l.contended && !quiet
		as, _, err := l.apply(ctx, n, data)
		if err != nil {
			// Appended, not applied here yet (a failed read of the
			// store's time): the outcome is known to the log only.
			settle(ps, fmt.Errorf("bucketlog: entry %d appended, not applied: %w: %w", n, leader.ErrOutcomeUnknown, err))
			return
		}
		l.won(ctx, n, ps, as)
	default:
		l.resolve(ctx, e, ps, start, err)
	}
}

// resolve settles ps after the create of entry e answered err: whose entry
// it is, its nonce says. "Exists" is not proof of a lost race: the store
// may have applied this very create and lost its answer, and the client's
// retry found the object (S3: 412 Precondition Failed). A failure in
// transport leaves the outcome unknown. Either way the log catches up
// reading entry e.number; if it carries e's nonce the append succeeded.
func (l *Log) resolve(ctx context.Context, e *entry, ps []*proposal, start time.Time, err error) {
	n := e.number
	exists := errors.Is(err, blockmerge.ErrExists)
	if l.stalled(ctx, start, n) {
		// Below the low-water mark: if this create made entry n, it
		// re-created a deleted index.
		if mine, rerr := l.created(ctx, n, e.nonce); rerr == nil && mine {
			l.takeBack(ctx, n, ps)
			return
		}
	}
	mine, cerr := l.catchUpFor(context.WithoutCancel(ctx), e.nonce)
	switch {
	case mine != nil:
		if exists {
			l.log.Debug("bucketlog: a create answered \"exists\" made the entry: its answer was lost", "entry", n)
		}
		l.won(ctx, n, ps, mine)
	case cerr == nil && l.applied >= n:
		// Lost the race: the winner's entry, and whatever followed up to
		// the tip, is applied.
		l.contended = true
		l.lost(n, ps)
	default:
		settle(ps, fmt.Errorf("bucketlog: append entry %d: %w: %w", n, leader.ErrOutcomeUnknown, errors.Join(err, cerr)))
	}
}

// created reports whether entry n, as stored, carries nonce.
func (l *Log) created(ctx context.Context, n uint64, nonce string) (bool, error) {
	data, err := l.read(ctx, l.entryKey(n))
	if err != nil || data == nil {
		return false, err
	}
	e, err := decodeEntry(data)
	if err != nil {
		return false, err
	}
	return e.nonce == nonce, nil
}

// settle gives every proposal of ps the error err.
func settle(ps []*proposal, err error) {
	for _, p := range ps {
		p.done, p.err = true, err
	}
}

// readyTip makes sure the next entry may be created: not below the
// low-water mark (where it may have been deleted, and a create would
// succeed), and — after a lost race — at the tip. It returns when the
// mark was checked (from then on a stall counts against the truncation
// grace) and whether no other coordinator appended since this one's last
// entry.
//
// Uncontended, the tip is not read first: the create finds out whether
// another coordinator appended (ErrExists), and then the log catches up.
// Once a race was lost, the tip is read first (a GET that finds the next
// entry missing) until an append finds that nobody else appended
// meanwhile: under contention a read is cheaper than a create that fails,
// it keeps the window between reading the tip and creating the entry
// short, and every contender pays the same.
func (l *Log) readyTip(ctx context.Context) (start time.Time, quiet bool, err error) {
	quiet = true
	if l.contended {
		before := l.applied
		err = l.catchUp(ctx) // checks the mark when the entry is missing
		quiet = l.applied == before
	} else if _, ok := l.checkedClear(l.applied + 1); !ok {
		behind, terr := l.truncated(ctx, l.applied+1)
		if err = terr; err == nil && behind {
			err = l.catchUp(ctx)
		}
	}
	if err != nil {
		return time.Time{}, quiet, err
	}
	start, ok := l.checkedClear(l.applied + 1)
	if !ok {
		start = time.Now() // the check was part of a catch-up just now
	}
	return start, quiet, nil
}

// admit returns the proposals of batch that may go into the next entry,
// prepared ones first, and settles the others: a prepared command whose
// state moved on since is refused (an entry the state machine refused
// changed nothing: the command is still valid on top of it).
func (l *Log) admit(batch []*proposal) []*proposal {
	last, _, _ := l.fsm.LastApplied()
	var ps []*proposal
	for _, p := range batch {
		if p.preparedAt != 0 && p.preparedAt != last {
			l.stats.Conflicts++
			settle([]*proposal{p}, fmt.Errorf("bucketlog: prepared at index %d, the state is at %d: %w", p.preparedAt, last, leader.ErrConflict))
			continue
		}
		ps = append(ps, p)
	}
	slices.SortStableFunc(ps, func(a, b *proposal) int { return cmp.Compare(min(b.preparedAt, 1), min(a.preparedAt, 1)) })
	return ps
}

// won settles ps with what applying entry n, this coordinator's, returned.
func (l *Log) won(ctx context.Context, n uint64, ps []*proposal, as []leader.Applied) {
	l.stats.Appended++
	l.stats.Commands += uint64(len(ps))
	for i, p := range ps {
		p.done, p.a = true, as[i]
	}
	l.checkpoint(ctx, n)
}

// lost settles ps after another coordinator's entry n won; the log has
// caught up to the tip.
func (l *Log) lost(n uint64, ps []*proposal) {
	l.stats.Conflicts += uint64(len(ps))
	settle(ps, fmt.Errorf("bucketlog: entry %d was appended by another coordinator: %w", n, leader.ErrConflict))
}

// takeBack deletes entry n, which this coordinator created after stalling
// past the truncation grace below the low-water mark — it may re-create a
// deleted index — and restores the checkpoint instead.
func (l *Log) takeBack(ctx context.Context, n uint64, ps []*proposal) {
	if err := l.store.Delete(ctx, l.entryKey(n)); err != nil {
		l.failed = fmt.Errorf("bucketlog: entry %d was created below the low-water mark and cannot be deleted: %w: %w", n, ErrCorrupt, err)
		settle(ps, l.failed)
		return
	}
	l.log.Warn("bucketlog: an append stalled past the truncation grace and landed below the low-water mark: taken back", "entry", n)
	if err := l.catchUp(ctx); err != nil {
		settle(ps, err)
		return
	}
	settle(ps, fmt.Errorf("bucketlog: entry %d is below the low-water mark: %w", n, leader.ErrConflict))
}

// stalled reports whether the append of entry n, begun at start, took half
// the truncation grace or more and entry n is now at or below the
// low-water mark (with no grace, it checks every append).
func (l *Log) stalled(ctx context.Context, start time.Time, n uint64) bool {
	if l.grace > 0 && time.Since(start) < l.grace/2 {
		return false
	}
	behind, err := l.truncated(ctx, n)
	return err == nil && behind
}

// Leader reports that this coordinator may append: a bucket log has no
// election, every coordinator leads (one term).
func (l *Log) Leader() leader.Leadership {
	return leader.Leadership{Leads: true, Term: 1, LeaderID: l.id}
}

// Barrier applies everything appended before the call.
func (l *Log) Barrier(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.catchUp(ctx)
}
