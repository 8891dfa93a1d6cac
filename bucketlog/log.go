package bucketlog

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/raftfsm"
)

// Errors of the log.
var (
	// ErrNoConditionalPut reports a store that cannot create an object
	// only if it is absent.
	ErrNoConditionalPut = errors.New("bucketlog: the store has no conditional put")
	// ErrCorrupt reports an entry or checkpoint that breaks the chain or
	// does not decode: the replica stops rather than skip it.
	ErrCorrupt = errors.New("bucketlog: corrupt log")
)

// DefaultCheckpointEvery is the default checkpoint interval, in entries.
const DefaultCheckpointEvery = 256

// Option configures a [Log].
type Option func(*Log)

// WithCheckpointEvery sets the checkpoint interval in entries (default
// [DefaultCheckpointEvery]; 0 writes none).
func WithCheckpointEvery(n uint64) Option { return func(l *Log) { l.every = n } }

// WithObserver calls fn for every entry the log applies, in log order,
// with the command's bytes and how it was applied — for a host that audits
// or indexes the log. fn runs while the log is locked: it must not call
// the log.
func WithObserver(fn func(cmd []byte, a leader.Applied)) Option {
	return func(l *Log) { l.observe = fn }
}

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
type Log struct {
	store   blockmerge.Store
	cond    blockmerge.ConditionalPutter
	prefix  string
	fsm     *raftfsm.FSM
	id      string
	every   uint64
	log     *slog.Logger
	observe func(cmd []byte, a leader.Applied)

	mu      sync.Mutex // serialises catch-up and appends
	applied uint64     // the last entry applied
	hash    [32]byte   // its hash
	seq     uint64     // this coordinator's proposals, for nonces
	failed  error
	stats   Stats
}

// Stats counts what a coordinator's log did.
type Stats struct {
	// Appended counts the entries this coordinator created; Conflicts the
	// appends it lost to another coordinator (or refused because the log
	// moved on after the command was prepared); Read the entries it read
	// and applied, its own included.
	Appended, Conflicts, Read uint64
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
		return nil, fmt.Errorf("%w: %T", ErrNoConditionalPut, store)
	}
	if err := blockmerge.ValidatePrefix(prefix + "/"); err != nil || strings.HasSuffix(prefix, "/") {
		return nil, fmt.Errorf("bucketlog: prefix %q: want a key prefix without a trailing '/'", prefix)
	}
	if id == "" || strings.ContainsAny(id, "\n/") {
		return nil, fmt.Errorf("bucketlog: coordinator ID %q", id)
	}
	l := &Log{store: store, cond: cond, prefix: prefix, fsm: fsm, id: id, every: DefaultCheckpointEvery, log: slog.New(slog.DiscardHandler)}
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

// Applied returns the index of the last entry applied.
func (l *Log) Applied() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.applied
}

// entry is one log object.
type entry struct {
	index uint64
	prev  [32]byte
	nonce string
	cmd   []byte
}

const magic = "ckbl\x01"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encode: magic, index, previous hash, nonce (uvarint length), command,
// CRC-32C of everything before it.
func (e *entry) encode() []byte {
	b := append([]byte(magic), make([]byte, 8)...)
	binary.BigEndian.PutUint64(b[len(magic):], e.index)
	b = append(b, e.prev[:]...)
	b = binary.AppendUvarint(b, uint64(len(e.nonce)))
	b = append(b, e.nonce...)
	b = append(b, e.cmd...)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func decodeEntry(data []byte) (*entry, error) {
	if len(data) < len(magic)+8+32+1+4 || string(data[:len(magic)]) != magic {
		return nil, fmt.Errorf("%w: not a log entry (version or magic)", ErrCorrupt)
	}
	body, sum := data[:len(data)-4], data[len(data)-4:]
	if binary.BigEndian.Uint32(sum) != crc32.Checksum(body, castagnoli) {
		return nil, fmt.Errorf("%w: entry checksum", ErrCorrupt)
	}
	e := &entry{index: binary.BigEndian.Uint64(body[len(magic):])}
	rest := body[len(magic)+8:]
	copy(e.prev[:], rest[:32])
	rest = rest[32:]
	n, k := binary.Uvarint(rest)
	if k <= 0 || uint64(len(rest)-k) < n {
		return nil, fmt.Errorf("%w: entry nonce", ErrCorrupt)
	}
	e.nonce = string(rest[k : k+int(n)])
	e.cmd = rest[k+int(n):]
	return e, nil
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
// It returns the result of applying the last entry if that entry is
// nonce's.
func (l *Log) catchUp(ctx context.Context) error {
	_, err := l.catchUpFor(ctx, "")
	return err
}

func (l *Log) catchUpFor(ctx context.Context, nonce string) (*leader.Applied, error) {
	var mine *leader.Applied
	for {
		if l.failed != nil {
			return nil, l.failed
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
		a, err := l.apply(n, data)
		if err != nil {
			return mine, err
		}
		if nonce != "" && a.nonce == nonce {
			mine = &a.Applied
		}
	}
}

// applied is the outcome of applying one entry.
type appliedEntry struct {
	leader.Applied
	nonce string
}

// apply checks entry n's place in the chain and applies it.
func (l *Log) apply(n uint64, data []byte) (appliedEntry, error) {
	e, err := decodeEntry(data)
	if err == nil && (e.index != n || e.prev != l.hash) {
		err = fmt.Errorf("%w: entry %d claims index %d and a previous hash that does not match entry %d", ErrCorrupt, n, e.index, n-1)
	}
	if err != nil {
		l.failed = fmt.Errorf("bucketlog: entry %d: %w", n, err)
		l.log.Error("bucketlog: replica stopped: the log is corrupt", "entry", n, "err", err)
		return appliedEntry{}, l.failed
	}
	res, aerr := l.fsm.Apply(ck.Entry{Index: n, Term: 1}, e.cmd)
	if errors.Is(aerr, raftfsm.ErrCorrupt) {
		l.failed = aerr
		return appliedEntry{}, aerr
	}
	l.applied, l.hash = n, sha256.Sum256(data)
	l.stats.Read++
	a := appliedEntry{Applied: leader.Applied{Index: n, Term: 1, Result: res, Err: aerr}, nonce: e.nonce}
	if l.observe != nil {
		l.observe(e.cmd, a.Applied)
	}
	return a, nil
}

// maxAppendTries bounds the appends of a command that does not depend on
// the state (preparedAt 0), each lost to another coordinator.
const maxAppendTries = 64

// Propose appends cmd as the next entry. preparedAt is the last entry
// applied when cmd was prepared: if the log has moved on since (another
// coordinator appended), or another coordinator wins the race for the
// next index, nothing is appended and the error wraps leader.ErrConflict
// after the log caught up, for the service to prepare again. A command
// that does not depend on the state (preparedAt 0: new blocks, a took-office
// or configuration command) is appended again at the next index instead,
// with a short backoff, up to a bound.
func (l *Log) Propose(ctx context.Context, cmd []byte, preparedAt uint64) (leader.Applied, error) {
	for try := 1; ; try++ {
		a, err := l.propose(ctx, cmd, preparedAt)
		if preparedAt != 0 || !errors.Is(err, leader.ErrConflict) || try == maxAppendTries {
			return a, err
		}
		select {
		case <-time.After(time.Duration(try%8+1) * time.Millisecond):
		case <-ctx.Done():
			return leader.Applied{}, fmt.Errorf("bucketlog: append: %w: %w", leader.ErrOutcomeUnknown, ctx.Err())
		}
	}
}

func (l *Log) propose(ctx context.Context, cmd []byte, preparedAt uint64) (leader.Applied, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.catchUp(ctx); err != nil {
		return leader.Applied{}, err
	}
	// The state moved on since cmd was prepared if the state machine
	// applied anything since (an entry it refused changed nothing: the
	// command is still valid on top of it).
	if last, _, _ := l.fsm.LastApplied(); preparedAt != 0 && preparedAt != last {
		l.stats.Conflicts++
		return leader.Applied{}, fmt.Errorf("bucketlog: prepared at entry %d, the state is at %d: %w", preparedAt, last, leader.ErrConflict)
	}
	l.seq++
	n := l.applied + 1
	e := &entry{index: n, prev: l.hash, nonce: l.id + "/" + strconv.FormatUint(l.seq, 10), cmd: cmd}
	data := e.encode()
	err := l.cond.PutIfAbsent(ctx, l.entryKey(n), bytes.NewReader(data))
	switch {
	case err == nil:
		l.stats.Appended++
		a, err := l.apply(n, data)
		if err != nil {
			return leader.Applied{}, err
		}
		l.checkpoint(ctx, n)
		return a.Applied, nil
	case errors.Is(err, blockmerge.ErrExists):
		// Lost the race: apply the winner's entry (and whatever followed).
		l.stats.Conflicts++
		if err := l.catchUp(ctx); err != nil {
			return leader.Applied{}, err
		}
		return leader.Applied{}, fmt.Errorf("bucketlog: entry %d was appended by another coordinator: %w", n, leader.ErrConflict)
	default:
		// The create may have succeeded: read back whose entry n is.
		mine, cerr := l.catchUpFor(context.WithoutCancel(ctx), e.nonce)
		switch {
		case mine != nil:
			l.checkpoint(ctx, n)
			return *mine, nil
		case cerr == nil && l.applied >= n:
			return leader.Applied{}, fmt.Errorf("bucketlog: entry %d was appended by another coordinator: %w", n, leader.ErrConflict)
		default:
			return leader.Applied{}, fmt.Errorf("bucketlog: append entry %d: %w: %w", n, leader.ErrOutcomeUnknown, err)
		}
	}
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
