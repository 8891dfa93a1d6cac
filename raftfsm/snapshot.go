package raftfsm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/index"
	"github.com/compactkit/compactkit/internal/codec"
	"github.com/compactkit/compactkit/internal/ident"
	"github.com/compactkit/compactkit/planner"
	"github.com/compactkit/compactkit/scheduler"
)

// SnapshotVersion is the newest version of the snapshot stream this
// release writes. Restore reads every version from the first release's, 4
// (written at cluster version 5), up to it. A state machine writes the
// version of its cluster version (version 4 at cluster version 5, version
// 5 at cluster version 6), so that a replica of the previous release can
// install its leader's snapshot during a rolling upgrade. Version 4 writes
// its messages' optional trailing fields only when they are set (the
// compact form of package internal/codec); version 5 writes every field.
// Its
// sections may be in versions of their own (the scheduler's failure
// records, the planner's marks). The header is followed by the counts of
// the scheduling policies, the poll log, then the policies' frames: the
// tenants' policies, the compact-now requests and the backpressure grades.
const SnapshotVersion byte = 5

// oldestSnapshotVersion is the oldest snapshot version this release
// reads: the one the first release writes, at cluster version 5.
const oldestSnapshotVersion byte = 4

// snapshotVersionOf returns the snapshot version written at a cluster
// version.
func snapshotVersionOf(clusterVersion byte) byte {
	return clusterVersion - oldestVersion + oldestSnapshotVersion
}

// pollsPerFrame bounds the poll-log records of one snapshot frame.
const pollsPerFrame = 256

// snapshotHeader is the first frame of a snapshot.
type snapshotHeader struct {
	_              struct{} `cbor:",toarray"`
	LastApplied    uint64
	LastTerm       uint64
	Now            int64
	ClusterVersion byte
	PollLogTTL     int64
	Workers        int
	MaxClockStep   int64
	Limits         [4]int // MaxReports, MaxBlocks, MaxDatasets, MaxOutputs
}

// snapshotPolicies is the second part of the header: the default
// policy and the counts of the policy frames that follow the poll log. In
// version 4's compact form, the count of shard grades is written only when
// there are some: a state without keeps the bytes of the first release
// with policies.
type snapshotPolicies struct {
	_           struct{} `cbor:",toarray"`
	Default     policyRec
	Tenants     int
	Compact     int
	Grades      int
	ShardGrades int `codec:"optional"`
}

// tenantPolicyRec is a tenant's own policy in a snapshot.
type tenantPolicyRec struct {
	_      struct{} `cbor:",toarray"`
	Tenant string
	Policy policyRec
}

// compactRec is a compact-now request in a snapshot.
type compactRec struct {
	_         struct{} `cbor:",toarray"`
	Tenant    string
	All       bool
	Level     uint32
	AllLevels bool
	Before    int64
}

// shardGradeRec is a shard's backpressure grade (not OK) in a snapshot.
type shardGradeRec struct {
	_      struct{} `cbor:",toarray"`
	Tenant string
	Shard  uint32
	Grade  uint8
}

// gradeRec is a tenant's backpressure grade (not OK) in a snapshot.
type gradeRec struct {
	_      struct{} `cbor:",toarray"`
	Tenant string
	Grade  uint8
}

// Snapshot writes the whole state to w: a stream of kind snapshot holding
// the state machine's header and its poll log, followed by the planner's,
// the scheduler's and the index's sections, each a framed stream with its
// own checksum. Replicas that applied the same entries write identical
// bytes, whatever their local configuration.
//
// Snapshot holds the state machine's lock while it writes; hosts that
// persist snapshots in the background use [FSM.Capture].
func (f *FSM) Snapshot(w io.Writer) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.st.writeHeader(w); err != nil {
		return err
	}
	pv := f.st.planner.View()
	defer pv.Close()
	if err := pv.Snapshot(w); err != nil {
		return fmt.Errorf("raftfsm: snapshot: %w", err)
	}
	if err := f.st.sched.Snapshot(w); err != nil {
		return fmt.Errorf("raftfsm: snapshot: %w", err)
	}
	iv := f.st.index.View()
	defer iv.Close()
	if err := iv.Snapshot(w); err != nil {
		return fmt.Errorf("raftfsm: snapshot: %w", err)
	}
	return nil
}

func (st *state) writeHeader(w io.Writer) error {
	sw, err := codec.NewWriter(w, codecOf(codec.Snapshot, st.clusterVersion), codec.KindSnapshot, snapshotVersionOf(st.clusterVersion))
	if err != nil {
		return fmt.Errorf("raftfsm: snapshot: %w", err)
	}
	recs := st.polls.records()
	h := snapshotHeader{
		LastApplied: st.lastApplied, LastTerm: st.lastTerm, Now: st.now,
		ClusterVersion: st.clusterVersion, PollLogTTL: int64(st.cfg.PollLogTTL), Workers: len(recs),
		MaxClockStep: int64(st.cfg.MaxClockStep),
		Limits:       [4]int{st.cfg.Limits.MaxReports, st.cfg.Limits.MaxBlocks, st.cfg.Limits.MaxDatasets, st.cfg.Limits.MaxOutputs},
	}
	if err := sw.Encode(&h); err != nil {
		return fmt.Errorf("raftfsm: snapshot: %w", err)
	}
	ps := st.policies
	ph := snapshotPolicies{Default: recordPolicy(&ps.def), Tenants: len(ps.names), Compact: len(ps.compact), Grades: len(ps.grades),
		ShardGrades: len(ps.shardGrades)}
	if err := sw.Encode(&ph); err != nil {
		return fmt.Errorf("raftfsm: snapshot: %w", err)
	}
	for len(recs) > 0 {
		n := min(len(recs), pollsPerFrame)
		if err := sw.Encode(recs[:n]); err != nil {
			return fmt.Errorf("raftfsm: snapshot: %w", err)
		}
		recs = recs[n:]
	}
	if err := st.policies.writeFrames(sw); err != nil {
		return fmt.Errorf("raftfsm: snapshot: %w", err)
	}
	if err := sw.Close(); err != nil {
		return fmt.Errorf("raftfsm: snapshot: %w", err)
	}
	return nil
}

// Capture is a point-in-time copy of the state, taken in O(jobs) under the
// state machine's lock (the planner and the index are captured as O(1)
// copy-on-write views; the scheduler, bounded by its queue limit, is
// serialised), and written later, on any goroutine, while Apply goes on.
// It is what a Raft adapter's snapshot persistence needs.
type Capture struct {
	// Index and Term are the last applied index and term of the captured
	// state.
	Index, Term uint64

	header  []byte
	planner *planner.View
	sched   []byte
	ix      *index.View
}

// Capture captures the current state for a later [Capture.Snapshot].
func (f *FSM) Capture() (*Capture, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var hb, sb bytes.Buffer
	if err := f.st.writeHeader(&hb); err != nil {
		return nil, err
	}
	if err := f.st.sched.Snapshot(&sb); err != nil {
		return nil, fmt.Errorf("raftfsm: snapshot: %w", err)
	}
	return &Capture{
		Index: f.st.lastApplied, Term: f.st.lastTerm,
		header: hb.Bytes(), planner: f.st.planner.View(), sched: sb.Bytes(), ix: f.st.index.View(),
	}, nil
}

// Close releases the capture's views; the capture must not be written
// afterwards. Closing is optional (an unclosed capture only keeps the
// planner and the index copying what they change until the capture is
// garbage) and idempotent.
func (c *Capture) Close() {
	c.planner.Close()
	c.ix.Close()
}

// Snapshot writes the captured state to w, in the format of
// [FSM.Snapshot], byte for byte.
func (c *Capture) Snapshot(w io.Writer) error {
	if _, err := w.Write(c.header); err != nil {
		return fmt.Errorf("raftfsm: snapshot: %w", err)
	}
	if err := c.planner.Snapshot(w); err != nil {
		return fmt.Errorf("raftfsm: snapshot: %w", err)
	}
	if _, err := w.Write(c.sched); err != nil {
		return fmt.Errorf("raftfsm: snapshot: %w", err)
	}
	if err := c.ix.Snapshot(w); err != nil {
		return fmt.Errorf("raftfsm: snapshot: %w", err)
	}
	return nil
}

// Restore reads a snapshot written by [FSM.Snapshot] and returns the state
// machine it describes, with the given local options. A malformed,
// truncated or corrupt snapshot returns an error wrapping
// compactkit.ErrMalformed, ErrTruncated, ErrChecksum, ErrUnknownVersion or
// ErrTooLarge.
//
// The snapshot may be one section of the host's own snapshot: Restore
// reads exactly its bytes and leaves r right after them, for the host to
// read what follows. It reads single bytes from r where r can (an
// [io.ByteReader] such as a *bufio.Reader); a reader that cannot is read
// without reading ahead, which costs a small read per frame. Hosts whose
// snapshot holds nothing after compactkit's section pass a *bufio.Reader.
func Restore(r io.Reader, opts ...Option) (*FSM, error) {
	st, err := readState(r)
	if err != nil {
		return nil, err
	}
	return &FSM{opts: newOptions(opts), st: st}, nil
}

// Restore replaces the state with the snapshot read from r, as [Restore]
// reads it. On error the previous state stays intact. A replica that
// stopped on a corrupt entry ([ErrCorrupt]) applies again after a
// successful Restore.
func (f *FSM) Restore(r io.Reader) error {
	st, err := readState(r)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.st = st
	f.failed = nil
	f.mu.Unlock()
	return nil
}

func readState(r io.Reader) (*state, error) {
	br := codec.Exact(r)
	sr, err := codec.NewReader(br, codec.Snapshot, codec.KindSnapshot)
	if err != nil {
		return nil, fmt.Errorf("raftfsm: restore: %w", err)
	}
	version := sr.Version()
	if version < oldestSnapshotVersion || version > SnapshotVersion {
		return nil, fmt.Errorf("raftfsm: restore: snapshot version %d, this release reads %d to %d: %w", version, oldestSnapshotVersion, SnapshotVersion, ck.ErrUnknownVersion)
	}
	if version < snapshotVersionOf(fullFormVersion) {
		sr.Compact()
	}
	var h snapshotHeader
	if err := sr.Decode(&h); err != nil {
		return nil, fmt.Errorf("raftfsm: restore: header: %w", restoreErr(err))
	}
	if h.ClusterVersion < oldestVersion || h.ClusterVersion > CommandVersion || snapshotVersionOf(h.ClusterVersion) != version ||
		h.PollLogTTL < 0 || h.Workers < 0 || h.Now < 0 || h.MaxClockStep < 0 {
		return nil, fmt.Errorf("raftfsm: restore: header %+v of a version %d snapshot: %w", h, version, ck.ErrMalformed)
	}
	var ph snapshotPolicies
	if err := sr.Decode(&ph); err != nil {
		return nil, fmt.Errorf("raftfsm: restore: policies: %w", restoreErr(err))
	}
	polls := newPollLog()
	prev := ""
	for polls.len() < h.Workers {
		var recs []pollRecord
		if err := sr.Decode(&recs); err != nil {
			return nil, fmt.Errorf("raftfsm: restore: poll log: %w", restoreErr(err))
		}
		if len(recs) == 0 || len(recs) > pollsPerFrame || polls.len()+len(recs) > h.Workers {
			return nil, fmt.Errorf("raftfsm: restore: poll log frame of %d records: %w", len(recs), ck.ErrMalformed)
		}
		for i := range recs {
			rec := &recs[i]
			if err := ident.ValidateWorkerID(rec.Worker); err != nil || rec.Worker <= prev || rec.Seq == 0 || rec.LastSeen > h.Now {
				return nil, fmt.Errorf("raftfsm: restore: poll log record %q: %w", rec.Worker, ck.ErrMalformed)
			}
			if err := rec.Response.Validate(); err != nil {
				return nil, fmt.Errorf("raftfsm: restore: poll log record %q: %w: %w", rec.Worker, ck.ErrMalformed, err)
			}
			prev = rec.Worker
			polls.record(rec.Worker, rec.Seq, rec.LastSeen, rec.Response)
		}
	}
	ps := newPolicies()
	if err := ps.readFrames(sr, &ph); err != nil {
		return nil, fmt.Errorf("raftfsm: restore: policies: %w", restoreErr(err))
	}
	if err := sr.Finish(); err != nil {
		return nil, fmt.Errorf("raftfsm: restore: %w", restoreErr(err))
	}
	p, err := planner.Restore(br)
	if err != nil {
		return nil, fmt.Errorf("raftfsm: restore: %w", err)
	}
	s, err := scheduler.Restore(br)
	if err != nil {
		return nil, fmt.Errorf("raftfsm: restore: %w", err)
	}
	x, err := index.Restore(br)
	if err != nil {
		return nil, fmt.Errorf("raftfsm: restore: %w", err)
	}
	iv := x.View()
	icfg := iv.Config()
	iv.Close()
	cfg := Config{
		Planner: p.Config(), Scheduler: s.Config(), Index: icfg,
		PollLogTTL: time.Duration(h.PollLogTTL), MaxClockStep: time.Duration(h.MaxClockStep),
		Limits: Limits{MaxReports: h.Limits[0], MaxBlocks: h.Limits[1], MaxDatasets: h.Limits[2], MaxOutputs: h.Limits[3]},
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("raftfsm: restore: %w: %w", ck.ErrMalformed, err)
	}
	st := &state{
		cfg:     cfg,
		planner: p, sched: s, index: x, polls: polls,
		lastApplied: h.LastApplied, lastTerm: h.LastTerm, now: h.Now, clusterVersion: h.ClusterVersion,
		policies: ps,
	}
	st.installPolicies()
	return st, nil
}

// restoreErr turns an unexpected end of stream into a truncation.
func restoreErr(err error) error {
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("unexpected end of stream: %w", ck.ErrTruncated)
	}
	return err
}
