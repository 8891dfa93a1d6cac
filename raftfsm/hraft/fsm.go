package hraft

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"

	"github.com/hashicorp/raft"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/raftfsm"
)

// FSM adapts a [raftfsm.FSM] to hashicorp/raft: it is a [raft.FSM] and a
// [raft.BatchingFSM].
//
// Every [raft.LogCommand] entry is applied as a compactkit entry whose
// Index and Term are the log's and whose Time is the log's AppendedAt (the
// leader's timestamp, used only by commands that carry no time of their
// own); every other log type (no-ops, barriers, configuration changes) is
// skipped. The value Apply returns for an entry — the one
// [raft.ApplyFuture.Response] yields on the proposing node — is the
// *[raftfsm.Result], or the error the state machine returned.
type FSM struct {
	f        *raftfsm.FSM
	log      *slog.Logger
	commands atomic.Uint64
	restores atomic.Uint64
}

var (
	_ raft.FSM         = (*FSM)(nil)
	_ raft.BatchingFSM = (*FSM)(nil)
)

// NewFSM wraps f. log receives debug records of refused commands; nil
// discards them.
func NewFSM(f *raftfsm.FSM, log *slog.Logger) *FSM {
	if log == nil {
		log = discardLogger()
	}
	return &FSM{f: f, log: log}
}

// State returns the wrapped state machine.
func (a *FSM) State() *raftfsm.FSM { return a.f }

// Commands returns the number of command entries this replica has applied
// (skipped log types not counted).
func (a *FSM) Commands() uint64 { return a.commands.Load() }

// Restores returns the number of snapshots this replica restored (at
// start, or installed by the leader).
func (a *FSM) Restores() uint64 { return a.restores.Load() }

// Apply applies one committed log entry. It is called by raft on its FSM
// goroutine.
func (a *FSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	a.commands.Add(1)
	e := ck.Entry{Index: l.Index, Term: l.Term}
	if !l.AppendedAt.IsZero() {
		e.Time = max(l.AppendedAt.UnixNano(), 0)
	}
	res, err := a.f.Apply(e, l.Data)
	if err != nil {
		a.log.Debug("hraft: command refused", "index", l.Index, "term", l.Term, "err", err)
		return err
	}
	return res
}

// ApplyBatch applies a batch of committed log entries in order; the
// response of each is what [FSM.Apply] would return for it.
func (a *FSM) ApplyBatch(logs []*raft.Log) []any {
	out := make([]any, len(logs))
	for i, l := range logs {
		out[i] = a.Apply(l)
	}
	return out
}

// Snapshot captures the state (see [raftfsm.FSM.Capture]: O(jobs), the
// planner and the index as copy-on-write views) for raft to persist in the
// background while entries keep being applied.
func (a *FSM) Snapshot() (raft.FSMSnapshot, error) {
	c, err := a.f.Capture()
	if err != nil {
		return nil, fmt.Errorf("hraft: snapshot: %w", err)
	}
	return &fsmSnapshot{c: c}, nil
}

// Restore replaces the state with the snapshot read from rc, and closes
// it. On error the previous state stays intact.
func (a *FSM) Restore(rc io.ReadCloser) error {
	// compactkit's state is the whole snapshot here: read it buffered.
	err := a.f.Restore(bufio.NewReaderSize(rc, 64<<10))
	if cerr := rc.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("hraft: restore: %w", err)
	}
	a.restores.Add(1)
	return nil
}

// fsmSnapshot is a captured state, written by raft's snapshot goroutine.
type fsmSnapshot struct {
	c *raftfsm.Capture
}

// Persist writes the captured state to the sink and closes it; on error
// the sink is cancelled.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := s.c.Snapshot(sink); err != nil {
		return errors.Join(fmt.Errorf("hraft: persist snapshot: %w", err), sink.Cancel())
	}
	if err := sink.Close(); err != nil {
		return fmt.Errorf("hraft: persist snapshot: %w", err)
	}
	return nil
}

// Release closes the capture (its copy-on-write views stop costing Apply
// copies); raft calls it once the snapshot is persisted or abandoned.
func (s *fsmSnapshot) Release() { s.c.Close() }

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
