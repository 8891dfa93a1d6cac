package raftfsm_test

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/raftfsm"
)

// applyAt applies cmd, stamped with the node's clock, as the next entry
// with the given entry time (what the host's log says, which the state
// machine must not use as a second clock).
func (n *node) applyAt(cmd *raftfsm.Command, entryTime int64) *raftfsm.Result {
	n.t.Helper()
	if cmd.Time == 0 {
		cmd.Time = n.now
	}
	data, err := cmd.MarshalBinary()
	require.NoError(n.t, err)
	n.index++
	n.log = append(n.log, data)
	res, err := n.f.Apply(ck.Entry{Index: n.index, Term: 1, Time: entryTime}, data)
	require.NoError(n.t, err)
	return res
}

// Replicas that apply the same commands under different entry times (a
// host whose entries carry no time, another whose entries do) reach the
// same state.
func TestEntryTimeDoesNotDivergeReplicas(t *testing.T) {
	a := newNode(t, testConfig())
	b := newNode(t, testConfig())
	for i, bs := range [][]ck.BlockMeta{blocks("a", "t1", 1, 3, t0), blocks("b", "t1", 2, 2, t0)} {
		a.applyAt(addBlocks(bs), 0)
		b.applyAt(addBlocks(bs), t0+int64(i)*int64(time.Hour))
		a.advance(time.Second)
		b.advance(time.Second)
	}
	require.Equal(t, a.snapshot(), b.snapshot())
}

// Flipping any single bit of a command must never be applied silently:
// a replica that reads a damaged entry stops, and changes nothing.
func TestBitFlipsNeverApplySilently(t *testing.T) {
	cmd := addBlocks(blocks("a", "t1", 1, 3, t0))
	cmd.Time = t0
	data, err := cmd.MarshalBinary()
	require.NoError(t, err)
	fresh := newNode(t, testConfig()).snapshot()
	silent := 0
	for i := range len(data) * 8 {
		n := newNode(t, testConfig())
		flipped := bytes.Clone(data)
		flipped[i/8] ^= 1 << (i % 8)
		_, err := n.f.Apply(ck.Entry{Index: 1, Term: 1, Time: t0}, flipped)
		if err == nil {
			silent++
			continue
		}
		require.ErrorIs(t, err, raftfsm.ErrCorrupt, "bit %d", i)
		require.Equal(t, fresh, n.snapshot(), "bit %d", i)
	}
	require.Zero(t, silent, "%d of %d single-bit flips applied without error", silent, len(data)*8)
}

// A replica that reads a damaged entry stops: every later Apply and
// Prepare fails with ErrCorrupt, the stats say so, and restoring a
// healthy replica's snapshot brings it back.
func TestCorruptEntryStopsReplica(t *testing.T) {
	for name, damage := range map[string]func([]byte) []byte{
		"checksum":        func(b []byte) []byte { b[len(b)/2] ^= 0x10; return b },
		"unknown version": func(b []byte) []byte { b[3] = raftfsm.CommandVersion + 1; return b },
		"not a command":   func([]byte) []byte { return []byte("garbage") },
		"truncated":       func(b []byte) []byte { return b[:len(b)-1] },
	} {
		t.Run(name, func(t *testing.T) {
			healthy := newNode(t, testConfig())
			healthy.mustApply(addBlocks(blocks("a", "t1", 1, 3, t0)))
			r := newNode(t, testConfig())
			_, err := r.f.Apply(ck.Entry{Index: 1, Term: 1, Time: t0}, healthy.log[0])
			require.NoError(t, err)

			healthy.mustApply(addBlocks(blocks("b", "t1", 2, 3, t0)))
			_, err = r.f.Apply(ck.Entry{Index: 2, Term: 1, Time: t0}, damage(bytes.Clone(healthy.log[1])))
			require.ErrorIs(t, err, raftfsm.ErrCorrupt)
			require.ErrorIs(t, r.f.Stats().Failed, raftfsm.ErrCorrupt)

			healthy.mustApply(addBlocks(blocks("c", "t1", 3, 3, t0)))
			_, err = r.f.Apply(ck.Entry{Index: 3, Term: 1, Time: t0}, healthy.log[2])
			require.ErrorIs(t, err, raftfsm.ErrCorrupt, "a stopped replica applies nothing")
			_, err = r.f.Prepare(&ck.PollRequest{WorkerID: "w1", Seq: 1, FreeSlots: 1}, t0)
			require.ErrorIs(t, err, raftfsm.ErrCorrupt, "nor prepares")
			_, err = r.f.Encode(addBlocks(blocks("d", "t1", 3, 1, t0)), t0)
			require.ErrorIs(t, err, raftfsm.ErrCorrupt, "nor encodes")

			require.NoError(t, r.f.Restore(bytes.NewReader(healthy.snapshot())))
			require.NoError(t, r.f.Stats().Failed)
			healthy.mustApply(addBlocks(blocks("e", "t1", 4, 3, t0)))
			_, err = r.f.Apply(ck.Entry{Index: 4, Term: 1, Time: t0}, healthy.log[3])
			require.NoError(t, err)
			require.Equal(t, healthy.snapshot(), r.snapshot())
		})
	}
}

// A command stamped further ahead of the log's time than the replicated
// clock step is refused; the leader never stamps further than that; an
// idle log catches up one step per command.
func TestCommandTimeBounds(t *testing.T) {
	cfg := testConfig()
	cfg.MaxClockStep = time.Hour
	n := newNode(t, cfg)
	n.mustApply(addBlocks(blocks("a", "t1", 1, 2, t0)))
	before := n.snapshot()
	far := addBlocks(blocks("b", "t1", 1, 1, t0))
	far.Time = n.now + int64(2*time.Hour)
	_, err := n.apply(far)
	require.ErrorIs(t, err, raftfsm.ErrClock)
	n.index--
	n.log = n.log[:len(n.log)-1]
	require.Equal(t, before, n.snapshot(), "a refused command changes nothing")

	// The leader's clock is three hours ahead (an idle log, or a bad
	// clock): each command it stamps moves the log's time one step.
	leader := n.now + int64(3*time.Hour)
	for step := 1; step <= 4; step++ {
		cmd := addBlocks(blocks(string(rune('b'+step)), "t1", 1, 1, t0))
		cmd.Time = 42 // overwritten: only the leader's clock counts
		data, err := n.f.Encode(cmd, leader)
		require.NoError(t, err)
		n.index++
		res, err := n.f.Apply(ck.Entry{Index: n.index, Term: 1}, data)
		require.NoError(t, err)
		require.Equal(t, t0+int64(min(step, 3))*int64(time.Hour), res.Now)
	}

	// At cluster version 1 there is no bound, as in the previous release.
	cfg.MaxClockStep = 0
	cfg.StartVersion = 1
	old := newNode(t, cfg)
	old.version = 1
	old.mustApply(addBlocks(blocks("a", "t1", 1, 2, t0)))
	far = addBlocks(blocks("b", "t1", 1, 1, t0))
	far.Time = old.now + int64(2*time.Hour)
	old.mustApply(far)
	// ... and the bound cannot be set before the cluster is upgraded.
	cfg.MaxClockStep = time.Minute
	_, err = old.apply(&raftfsm.Command{Config: &cfg})
	require.ErrorIs(t, err, raftfsm.ErrClusterVersion)
}

// ApplyAt applies a command at its entry's time, whatever its proposer
// stamped: a log that times entries itself (the bucket log) has the last
// word; the state machine's time still never goes back nor jumps past the
// clock step.
func TestApplyAtEntryTime(t *testing.T) {
	cfg := testConfig()
	cfg.MaxClockStep = time.Hour
	n := newNode(t, cfg)
	n.mustApply(addBlocks(blocks("a", "t1", 1, 2, t0)))
	at := func(name string, stamp, entry int64) (*raftfsm.Result, error) {
		data, err := n.f.Encode(addBlocks(blocks(name, "t1", 1, 1, t0)), stamp)
		require.NoError(t, err)
		res, err := n.f.ApplyAt(ck.Entry{Index: n.index + 1, Term: 1, Time: entry}, data)
		if err == nil {
			n.index++
		}
		return res, err
	}
	res, err := at("b", n.now+int64(time.Minute), n.now+int64(time.Second))
	require.NoError(t, err)
	require.Equal(t, t0+int64(time.Second), res.Now, "the entry's time, not the stamp")
	res, err = at("c", n.now+int64(time.Minute), t0)
	require.NoError(t, err)
	require.Equal(t, t0+int64(time.Second), res.Now, "never back")
	before := n.snapshot()
	_, err = at("d", n.now, t0+int64(2*time.Hour))
	require.ErrorIs(t, err, raftfsm.ErrClock)
	require.Equal(t, before, n.snapshot(), "a refused command changes nothing")
}

// Encode writes the version the cluster allows: version 1 until the
// cluster version is raised, so that replicas of the previous release can
// read every entry during a rolling upgrade.
func TestEncodeFollowsClusterVersion(t *testing.T) {
	cfg := testConfig()
	cfg.StartVersion = 1
	n := newNode(t, cfg)
	cmd := addBlocks(blocks("a", "t1", 1, 2, t0))
	data, err := n.f.Encode(cmd, t0)
	require.NoError(t, err)
	require.Equal(t, byte(1), data[3], "version-1 encoding at cluster version 1")
	_, err = n.f.Apply(ck.Entry{Index: 1, Term: 1}, data)
	require.NoError(t, err)

	v2, err := addBlocks(blocks("b", "t1", 1, 2, t0)).MarshalVersion(2)
	require.NoError(t, err)
	before := n.snapshot()
	_, err = n.f.Apply(ck.Entry{Index: 2, Term: 1}, v2)
	require.ErrorIs(t, err, raftfsm.ErrClusterVersion, "a version-2 command before the upgrade is refused, as the previous release refuses it")
	require.Equal(t, before, n.snapshot())

	data, err = n.f.Encode(&raftfsm.Command{ClusterVersion: &raftfsm.SetClusterVersion{Version: 2}}, t0)
	require.NoError(t, err)
	require.Equal(t, byte(1), data[3])
	_, err = n.f.Apply(ck.Entry{Index: 2, Term: 1}, data)
	require.NoError(t, err)
	data, err = n.f.Encode(addBlocks(blocks("b", "t1", 1, 2, t0)), t0)
	require.NoError(t, err)
	require.Equal(t, byte(2), data[3], "version-2 encoding once the cluster is upgraded")
	_, err = n.f.Apply(ck.Entry{Index: 3, Term: 1}, data)
	require.NoError(t, err)
	require.Equal(t, byte(2), n.snapshot()[3], "and version-2 snapshots")
}

// A rolling upgrade: replicas of this release start at cluster version 1
// (a log begun by the previous release), one installs a snapshot
// mid-stream, the cluster version is raised mid-stream. After every entry
// the replicas are byte-identical; before the raise they write version-1
// snapshots and behave as the previous release (whose byte-exact
// behaviour TestGolden/v1 checks), after it the fixes take effect.
func TestRollingUpgrade(t *testing.T) {
	cfg := testConfig()
	cfg.StartVersion = 1
	cfg.Scheduler.MaxFailures = 1
	leader := newNode(t, cfg, raftfsm.WithCleanupAfter(time.Hour))
	leader.version = 1
	var replicas []*raftfsm.FSM
	for range 2 {
		f, err := raftfsm.New(cfg)
		require.NoError(t, err)
		replicas = append(replicas, f)
	}
	// apply stamps and encodes cmd as the leader does, with an entry time
	// of zero (a log whose entries carry none), applies it everywhere and
	// compares the replicas.
	apply := func(cmd *raftfsm.Command) *raftfsm.Result {
		t.Helper()
		data, err := leader.f.Encode(cmd, leader.now)
		require.NoError(t, err)
		leader.index++
		e := ck.Entry{Index: leader.index, Term: 1}
		res, err := leader.f.Apply(e, data)
		require.NoError(t, err)
		want := leader.snapshot()
		for i, r := range replicas {
			_, err := r.Apply(e, data)
			require.NoError(t, err)
			var got bytes.Buffer
			require.NoError(t, r.Snapshot(&got))
			require.Equal(t, want, got.Bytes(), "replica %d after entry %d", i, e.Index)
		}
		return res
	}
	poll := func(req *ck.PollRequest) *ck.PollResponse {
		t.Helper()
		cmd, err := leader.f.Prepare(req, leader.now)
		require.NoError(t, err)
		return apply(cmd).Poll
	}

	// Before the upgrade: the planner still reads the entry's time (zero
	// here), so a batch one second old is planned at once.
	apply(addBlocks(blocks("a", "t1", 1, 2, t0)))
	leader.advance(time.Second)
	a := poll(&ck.PollRequest{WorkerID: "w1", Seq: 1, FreeSlots: 1}).Jobs
	require.Len(t, a, 1, "cluster version 1 keeps the previous release's planner clock")
	require.Equal(t, byte(1), leader.snapshot()[3])

	// A replica installs the leader's (version-1) snapshot mid-stream.
	r, err := raftfsm.Restore(bytes.NewReader(leader.snapshot()))
	require.NoError(t, err)
	replicas = append(replicas, r)

	// A job fails once and is excluded, still listing its tombstones
	// (none here: the failure only matters for the count).
	poll(&ck.PollRequest{WorkerID: "w1", Seq: 2, Updates: []ck.StatusUpdate{{Job: a[0].Job, Token: a[0].Token, Status: ck.ReportFailure}}})

	apply(&raftfsm.Command{ClusterVersion: &raftfsm.SetClusterVersion{Version: 2}})
	require.Equal(t, byte(2), leader.snapshot()[3])

	// After the upgrade: one clock.
	apply(addBlocks(blocks("b", "t1", 2, 2, t0)))
	leader.advance(time.Second)
	require.Empty(t, poll(&ck.PollRequest{WorkerID: "w2", Seq: 1, FreeSlots: 1}).Jobs, "a batch one second old waits")
	leader.advance(time.Minute)
	b := poll(&ck.PollRequest{WorkerID: "w2", Seq: 2, FreeSlots: 1}).Jobs
	require.Len(t, b, 1)

	// Version 3: failures keep their reason. Before the raise a reason
	// reported is not kept (and the snapshot keeps version 2's bytes).
	cfg3 := testConfig()
	cfg3.Scheduler.MaxFailures = 3
	apply(&raftfsm.Command{Config: &cfg3})
	poll(&ck.PollRequest{WorkerID: "w2", Seq: 3, Updates: []ck.StatusUpdate{{Job: b[0].Job, Token: b[0].Token, Status: ck.ReportFailure, Reason: "disk full"}}})
	js, _, _ := leader.f.Job(b[0].Job)
	require.Empty(t, js.LastFailure)
	apply(&raftfsm.Command{ClusterVersion: &raftfsm.SetClusterVersion{Version: 3}})
	require.Equal(t, byte(3), leader.snapshot()[3])
	b = poll(&ck.PollRequest{WorkerID: "w2", Seq: 4, FreeSlots: 1}).Jobs
	require.Len(t, b, 1)
	poll(&ck.PollRequest{WorkerID: "w2", Seq: 5, Updates: []ck.StatusUpdate{{Job: b[0].Job, Token: b[0].Token, Status: ck.ReportFailure, Reason: "disk full"}}})
	js, _, _ = leader.f.Job(b[0].Job)
	require.Equal(t, "disk full", js.LastFailure, "kept on every replica (compared after each entry)")
}

// plainReader hides every method but Read, as a host's snapshot file
// reader might.
type plainReader struct{ r io.Reader }

func (p plainReader) Read(b []byte) (int, error) { return p.r.Read(b) }

// The state machine's snapshot is one section of the host's snapshot:
// Restore reads exactly its own bytes and leaves the reader after them.
func TestSnapshotIsASection(t *testing.T) {
	n := newNode(t, testConfig())
	n.mustApply(addBlocks(blocks("a", "t1", 1, 6, t0)))
	n.poll(&ck.PollRequest{WorkerID: "w1", Seq: 1, FreeSlots: 1})
	snap := n.snapshot()
	before, after := []byte("host state before"), bytes.Repeat([]byte("host state after "), 5000)
	file := append(append(append([]byte(nil), before...), snap...), after...)
	for name, wrap := range map[string]func(io.Reader) io.Reader{
		"bytes.Reader": func(r io.Reader) io.Reader { return r },
		"plain reader": func(r io.Reader) io.Reader { return plainReader{r} },
	} {
		t.Run(name, func(t *testing.T) {
			r := wrap(bytes.NewReader(file))
			head := make([]byte, len(before))
			_, err := io.ReadFull(r, head)
			require.NoError(t, err)
			f, err := raftfsm.Restore(r)
			require.NoError(t, err)
			rest, err := io.ReadAll(r)
			require.NoError(t, err)
			require.Equal(t, after, rest, "the bytes after the section are left for the host")
			var again bytes.Buffer
			require.NoError(t, f.Snapshot(&again))
			require.Equal(t, snap, again.Bytes())
		})
	}
}

// A replica restored from a snapshot answers exactly as the original:
// the same responses, not only the same snapshot bytes.
func TestRestoredReplicaAnswersEqually(t *testing.T) {
	cfg := testConfig()
	cfg.Planner.Levels[1].MaxAge = 0
	a := newNode(t, cfg, raftfsm.WithCleanupAfter(0))
	a.mustApply(addBlocks(blocks("a", "t1", 1, 4, t0)))
	j := a.poll(&ck.PollRequest{WorkerID: "w1", Seq: 1, FreeSlots: 1}).Jobs[0]
	a.poll(&ck.PollRequest{WorkerID: "w1", Seq: 2, Updates: []ck.StatusUpdate{{Job: j.Job, Token: j.Token, Status: ck.ReportSuccess, Outputs: a.outputs(j.Plan, uint64(j.Token))}}})
	a.advance(cfg.Index.CleanupDelay + time.Second)
	a.poll(&ck.PollRequest{WorkerID: "w2", Seq: 1, FreeSlots: 2})
	// A job whose lease runs out: after the restore it is reassigned from
	// the restored scheduler's record.
	a.mustApply(addBlocks(blocks("b", "t1", 2, 4, t0)))
	a.poll(&ck.PollRequest{WorkerID: "w4", Seq: 1, FreeSlots: 1})
	a.advance(time.Minute)

	f, err := raftfsm.Restore(bytes.NewReader(a.snapshot()))
	require.NoError(t, err)
	b := &node{t: t, f: f, index: a.index, now: a.now}
	// Retried polls are answered from the poll log; new polls act.
	for _, req := range []*ck.PollRequest{
		{WorkerID: "w1", Seq: 2},
		{WorkerID: "w2", Seq: 1, FreeSlots: 2},
		{WorkerID: "w3", Seq: 1, FreeSlots: 3},
	} {
		ra, rb := a.poll(req), b.poll(req)
		require.Equal(t, ra, rb, "poll %s/%d", req.WorkerID, req.Seq)
	}
	require.Equal(t, a.snapshot(), b.snapshot())
}
