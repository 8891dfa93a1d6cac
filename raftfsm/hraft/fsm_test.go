package hraft_test

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/raftfsm/hraft"
	"github.com/compactkit/compactkit/raftfsm/hraft/internal/hrafttest"
)

func newTestFSM(t testing.TB) *hraft.FSM {
	t.Helper()
	f, err := raftfsm.New(hrafttest.State())
	require.NoError(t, err)
	return hraft.NewFSM(f, nil)
}

func encode(t testing.TB, cmd *raftfsm.Command) []byte {
	t.Helper()
	data, err := cmd.MarshalVersion(raftfsm.CommandVersion)
	require.NoError(t, err)
	return data
}

// memSink is a raft.SnapshotSink in memory.
type memSink struct {
	bytes.Buffer
	closed, cancelled bool
	failAfter         int // fail writes once this many bytes were written (0: never)
}

func (s *memSink) Write(p []byte) (int, error) {
	if s.failAfter > 0 && s.Len()+len(p) > s.failAfter {
		return 0, errors.New("disk full")
	}
	return s.Buffer.Write(p)
}
func (s *memSink) ID() string     { return "mem" }
func (s *memSink) Cancel() error  { s.cancelled = true; return nil }
func (s *memSink) Close() error   { s.closed = true; return nil }
func (s *memSink) String() string { return "memSink" }

func TestFSMApply(t *testing.T) {
	a := newTestFSM(t)
	w := hrafttest.NewWorkload(t, 0)
	at := time.Unix(0, hrafttest.T0)
	add := encode(t, &raftfsm.Command{AddBlocks: &raftfsm.AddBlocks{Blocks: w.NewBlocks(4)}})

	// Non-command entries are skipped; commands become entries with the
	// log's index, term and (for commands without time) AppendedAt.
	resps := a.ApplyBatch([]*raft.Log{
		{Index: 1, Term: 1, Type: raft.LogNoop},
		{Index: 2, Term: 1, Type: raft.LogConfiguration, Data: []byte("not a command")},
		{Index: 3, Term: 2, Type: raft.LogCommand, Data: add, AppendedAt: at},
		{Index: 4, Term: 2, Type: raft.LogBarrier},
		{Index: 5, Term: 2, Type: raft.LogCommand, Data: []byte("garbage")},
	})
	require.Len(t, resps, 5)
	require.Nil(t, resps[0])
	require.Nil(t, resps[1])
	res, ok := resps[2].(*raftfsm.Result)
	require.True(t, ok, "%T", resps[2])
	require.Equal(t, uint64(3), res.Index)
	require.Equal(t, hrafttest.T0, res.Now)
	require.Len(t, res.Blocks, 4)
	require.Nil(t, resps[3])
	err, ok := resps[4].(error)
	require.True(t, ok, "%T", resps[4])
	require.ErrorIs(t, err, ck.ErrMalformed)
	require.ErrorIs(t, err, raftfsm.ErrCorrupt, "a replica that reads bytes it cannot decode stops")
	require.Equal(t, uint64(2), a.Commands())

	idx, term, now := a.State().LastApplied()
	require.Equal(t, uint64(3), idx)
	require.Equal(t, uint64(2), term)
	require.Equal(t, hrafttest.T0, now)

	// A stopped replica answers every entry with the error.
	err, ok = a.Apply(&raft.Log{Index: 6, Term: 2, Type: raft.LogCommand, Data: add}).(error)
	require.True(t, ok)
	require.ErrorIs(t, err, raftfsm.ErrCorrupt)

	// On a healthy replica, re-applying an old entry is a no-op.
	b := newTestFSM(t)
	_, ok = b.Apply(&raft.Log{Index: 3, Term: 2, Type: raft.LogCommand, Data: add}).(*raftfsm.Result)
	require.True(t, ok)
	res, ok = b.Apply(&raft.Log{Index: 3, Term: 2, Type: raft.LogCommand, Data: add}).(*raftfsm.Result)
	require.True(t, ok)
	require.True(t, res.Skipped)
}

func TestFSMSnapshotRestore(t *testing.T) {
	a := newTestFSM(t)
	w := hrafttest.NewWorkload(t, 0)
	add := encode(t, &raftfsm.Command{Time: hrafttest.T0, AddBlocks: &raftfsm.AddBlocks{Blocks: w.NewBlocks(10)}})
	_, ok := a.Apply(&raft.Log{Index: 1, Term: 1, Type: raft.LogCommand, Data: add}).(*raftfsm.Result)
	require.True(t, ok)

	snap, err := a.Snapshot()
	require.NoError(t, err)
	// Entries applied after the capture are not in it.
	more := encode(t, &raftfsm.Command{Time: hrafttest.T0, AddBlocks: &raftfsm.AddBlocks{Blocks: w.NewBlocks(1)}})
	_, ok = a.Apply(&raft.Log{Index: 2, Term: 1, Type: raft.LogCommand, Data: more}).(*raftfsm.Result)
	require.True(t, ok)

	sink := &memSink{}
	require.NoError(t, snap.Persist(sink))
	snap.Release()
	require.True(t, sink.closed)
	require.False(t, sink.cancelled)

	b := newTestFSM(t)
	require.NoError(t, b.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))))
	idx, _, _ := b.State().LastApplied()
	require.Equal(t, uint64(1), idx)
	require.Equal(t, 10, b.State().Index().Len())
	require.Equal(t, sink.Bytes(), hrafttest.SnapshotBytes(t, b.State()), "restore re-snapshots to the same bytes")

	// A failing sink is cancelled.
	snap, err = a.Snapshot()
	require.NoError(t, err)
	bad := &memSink{failAfter: 16}
	require.Error(t, snap.Persist(bad))
	require.True(t, bad.cancelled)
	require.False(t, bad.closed)
	snap.Release()
	snap.Release() // idempotent

	// A corrupt snapshot is refused and the state stays as it was.
	corrupt := bytes.Clone(sink.Bytes())
	corrupt[len(corrupt)/2] ^= 0xff
	require.Error(t, b.Restore(io.NopCloser(bytes.NewReader(corrupt))))
	require.Error(t, b.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()[:len(sink.Bytes())/2]))))
	require.Equal(t, sink.Bytes(), hrafttest.SnapshotBytes(t, b.State()))
}

// FuzzFSMApply feeds arbitrary log entries to the adapter: it never
// panics, and a refused command changes nothing.
func FuzzFSMApply(f *testing.F) {
	w := hrafttest.NewWorkload(f, 0)
	f.Add(uint8(raft.LogCommand), encode(f, &raftfsm.Command{Time: hrafttest.T0, AddBlocks: &raftfsm.AddBlocks{Blocks: w.NewBlocks(2)}}))
	f.Add(uint8(raft.LogCommand), encode(f, &raftfsm.Command{Time: hrafttest.T0, TookOffice: &raftfsm.TookOffice{Leader: "n1"}}))
	f.Add(uint8(raft.LogNoop), []byte{})
	f.Add(uint8(raft.LogCommand), []byte("garbage"))
	f.Fuzz(func(t *testing.T, typ uint8, data []byte) {
		a := newTestFSM(t)
		before := hrafttest.SnapshotBytes(t, a.State())
		resp := a.Apply(&raft.Log{Index: 1, Term: 1, Type: raft.LogType(typ), Data: data, AppendedAt: time.Unix(0, hrafttest.T0)})
		switch v := resp.(type) {
		case nil:
			require.NotEqual(t, raft.LogCommand, raft.LogType(typ))
		case error:
			require.Equal(t, before, hrafttest.SnapshotBytes(t, a.State()))
		case *raftfsm.Result:
			require.Equal(t, uint64(1), v.Index)
		default:
			t.Fatalf("response %T", v)
		}
	})
}
