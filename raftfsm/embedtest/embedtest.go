package embedtest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"pgregory.net/rapid"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/compactkittest"
	"github.com/compactkit/compactkit/planner"
	"github.com/compactkit/compactkit/raftfsm"
)

// Replica is one replica of the host's state machine.
type Replica interface {
	// Apply applies the log entry at index, of term, appended at time
	// (unix nanoseconds): a compactkit command in the host's envelope, or
	// one of the host's own entries. An entry the replica refuses returns
	// an error.
	Apply(index, term uint64, time int64, data []byte) error
	// Snapshot writes the replica's whole state: its own and compactkit's.
	Snapshot(w io.Writer) error
	// Restore replaces the replica's whole state by the snapshot r holds.
	Restore(r io.Reader) error
	// Compaction returns the replica's compactkit state machine.
	Compaction() *raftfsm.FSM
}

// Host is the host's side of the check.
type Host struct {
	// New returns a fresh replica whose compactkit state machine is made
	// with cfg.
	New func(cfg raftfsm.Config) (Replica, error)
	// Envelope wraps a compactkit command into the host's entry (as the
	// host's service does when it proposes it); nil leaves it as it is.
	Envelope func(cmd []byte) []byte
	// Own generates the host's own entries; nil: the history has none.
	Own *rapid.Generator[[]byte]
	// Equal reports how the own states of two replicas differ, nil if
	// they do not.
	Equal func(a, b Replica) error
}

// History is a history to replay: entries (compactkit's and the host's
// own), snapshots and restores. Its String says what it holds.
type History struct {
	steps []step
}

type stepKind uint8

const (
	applyStep stepKind = iota
	snapshotStep
	restoreStep
)

type step struct {
	kind stepKind
	e    ck.Entry
	data []byte
	own  bool
	// replay, for a restore: how many entries at or below the snapshot's
	// index are delivered again.
	replay int
}

// String summarises the history: its steps, one a line.
func (h History) String() string {
	var b strings.Builder
	for _, s := range h.steps {
		switch s.kind {
		case applyStep:
			who := "compactkit"
			if s.own {
				who = "own"
			}
			fmt.Fprintf(&b, "apply %d/%d at %d: %s, %d bytes\n", s.e.Index, s.e.Term, s.e.Time, who, len(s.data))
		case snapshotStep:
			b.WriteString("snapshot\n")
		case restoreStep:
			fmt.Fprintf(&b, "restore the latest snapshot, %d entries delivered again\n", s.replay)
		}
	}
	return b.String()
}

// config is the state machine's configuration: small jobs, so that a
// short history completes some.
func config() raftfsm.Config {
	cfg := raftfsm.DefaultConfig()
	cfg.Planner.Levels = []planner.LevelConfig{{MaxBlocks: 3, MaxAge: time.Minute, MaxSpan: 3 * time.Hour, AgingThreshold: 4 * time.Minute}}
	cfg.Planner.FinalLevel = 1
	cfg.Index.CleanupDelay = time.Minute
	return cfg
}

// Histories generates histories for the host: 1 to 60 compactkit
// commands, the host's own entries between them, snapshots and restores.
func Histories(h Host) *rapid.Generator[History] {
	return rapid.Custom(func(t *rapid.T) History {
		cmds := compactkittest.History(config(), 1, 60).Draw(t, "commands")
		var out History
		var index, term uint64 = 0, 1
		snapshots := 0
		for _, c := range cmds {
			// The host's own entries in the indexes before the command,
			// and maybe a snapshot or a restore.
			for index+1 < c.Index {
				index++
				if h.Own != nil {
					out.steps = append(out.steps, step{kind: applyStep, e: ck.Entry{Index: index, Term: term, Time: c.Time}, data: h.Own.Draw(t, "entry"), own: true})
				}
			}
			switch rapid.IntRange(0, 9).Draw(t, "snapshot") {
			case 0:
				out.steps = append(out.steps, step{kind: snapshotStep})
				snapshots++
			case 1:
				if snapshots > 0 {
					out.steps = append(out.steps, step{kind: restoreStep, replay: rapid.IntRange(0, 3).Draw(t, "replay")})
				}
			}
			index, term = c.Index, c.Term
			out.steps = append(out.steps, step{kind: applyStep, e: c.Entry, data: c.Data})
		}
		// Every history ends in a snapshot restored.
		out.steps = append(out.steps, step{kind: snapshotStep}, step{kind: restoreStep, replay: rapid.IntRange(0, 3).Draw(t, "replay")})
		return out
	})
}

// Check draws a history with [Histories] and replays it, failing t with
// what broke.
func Check(t *rapid.T, h Host) {
	if err := Replay(h, Histories(h).Draw(t, "history")); err != nil {
		t.Fatal(err)
	}
}

// ErrBroken is wrapped by every error of [Replay] that reports a broken
// property (rather than a replica that could not be made).
var ErrBroken = errors.New("embedtest: embedding broken")

// Replay drives the history through replicas of the host and through a
// reference state machine, and returns an error wrapping [ErrBroken] at
// the first broken property.
func Replay(h Host, hist History) error {
	cfg := config()
	ref, err := raftfsm.New(cfg)
	if err != nil {
		return err
	}
	live, err := h.New(cfg)
	if err != nil {
		return fmt.Errorf("embedtest: new replica: %w", err)
	}
	var (
		applied []step // every entry applied, in order
		snap    []byte // the latest snapshot
		snapAt  int    // len(applied) when it was taken
	)
	wrap := h.Envelope
	if wrap == nil {
		wrap = func(cmd []byte) []byte { return cmd }
	}
	deliver := func(r Replica, s step) error {
		if s.own {
			return r.Apply(s.e.Index, s.e.Term, s.e.Time, s.data)
		}
		return r.Apply(s.e.Index, s.e.Term, s.e.Time, wrap(s.data))
	}
	for _, s := range hist.steps {
		switch s.kind {
		case applyStep:
			err := deliver(live, s)
			if !s.own {
				_, rerr := ref.Apply(s.e, s.data)
				if rerr == nil && err != nil {
					return fmt.Errorf("%w: the replica refused compactkit's entry %v, which the reference applied: %v", ErrBroken, s.e, err)
				}
				if err := sameSection(live, ref, fmt.Sprintf("after entry %v", s.e)); err != nil {
					return err
				}
			}
			applied = append(applied, s)
		case snapshotStep:
			var b bytes.Buffer
			if err := live.Snapshot(&b); err != nil {
				return fmt.Errorf("%w: snapshot after entry %d: %v", ErrBroken, len(applied), err)
			}
			snap, snapAt = b.Bytes(), len(applied)
		case restoreStep:
			fresh, err := h.New(cfg)
			if err != nil {
				return fmt.Errorf("embedtest: new replica: %w", err)
			}
			if err := fresh.Restore(bytes.NewReader(snap)); err != nil {
				return fmt.Errorf("%w: restore the snapshot taken after %d entries: %v", ErrBroken, snapAt, err)
			}
			for _, e := range applied[max(0, snapAt-s.replay):] {
				_ = deliver(fresh, e) // the live replica's answer was checked
			}
			what := fmt.Sprintf("restored from the snapshot taken after %d entries, %d delivered again and %d after it", snapAt, min(snapAt, s.replay), len(applied)-snapAt)
			if err := h.Equal(live, fresh); err != nil {
				return fmt.Errorf("%w: the host's own state, %s, differs: %v", ErrBroken, what, err)
			}
			if err := sameSection(fresh, ref, what); err != nil {
				return err
			}
			live = fresh
		}
	}
	return nil
}

// sameSection reports an error unless the replica's compactkit state
// writes the reference's snapshot bytes.
func sameSection(r Replica, ref *raftfsm.FSM, when string) error {
	var got, want bytes.Buffer
	if err := r.Compaction().Snapshot(&got); err != nil {
		return fmt.Errorf("%w: compactkit's snapshot %s: %v", ErrBroken, when, err)
	}
	if err := ref.Snapshot(&want); err != nil {
		return fmt.Errorf("embedtest: the reference's snapshot: %w", err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		gi, gt, gnow := r.Compaction().LastApplied()
		wi, wt, wnow := ref.LastApplied()
		return fmt.Errorf("%w: compactkit's section %s differs from the reference's (%d bytes, last applied %d/%d at %d; the reference %d bytes, %d/%d at %d)",
			ErrBroken, when, got.Len(), gi, gt, gnow, want.Len(), wi, wt, wnow)
	}
	return nil
}
