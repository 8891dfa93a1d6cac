package raftfsm_test

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/raftfsm"
)

// Flipping any single bit of a command must never be applied silently:
// a replica that reads a damaged entry stops, and changes nothing.
func TestBitFlipsNeverApplySilently(t *testing.T) {
	cmd := addBlocks(blocks("a", "t1", 1, 3, t0))
	cmd.Time = t0
	data, err := cmd.MarshalVersion(raftfsm.CommandVersion)
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

// Encode writes the version the cluster allows; nothing below version 5,
// the first release's, is written, started at or read: a command with an
// older version in its header is taken for damage.
func TestVersionsStartAtFive(t *testing.T) {
	n := newNode(t, testConfig())
	require.Equal(t, raftfsm.CommandVersion, n.f.ClusterVersion())
	data, err := n.f.Encode(addBlocks(blocks("a", "t1", 1, 2, t0)), t0)
	require.NoError(t, err)
	require.Equal(t, raftfsm.CommandVersion, data[3], "the header's version byte (magic, kind, version)")
	require.Equal(t, raftfsm.SnapshotVersion, n.snapshot()[3])

	for v := byte(1); v < 5; v++ {
		_, err := addBlocks(blocks("b", "t1", 1, 2, t0)).MarshalVersion(v)
		require.ErrorIs(t, err, raftfsm.ErrClusterVersion, "version %d", v)
		cfg := testConfig()
		cfg.StartVersion = v
		_, err = raftfsm.New(cfg)
		require.ErrorIs(t, err, raftfsm.ErrClusterVersion, "start version %d", v)
		require.ErrorIs(t, (&raftfsm.Command{ClusterVersion: &raftfsm.SetClusterVersion{Version: v}}).Validate(), raftfsm.ErrClusterVersion)

		old := append([]byte(nil), data...)
		old[3] = v
		body := old[:len(old)-4]
		binary.BigEndian.PutUint32(old[len(old)-4:], crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
		_, err = raftfsm.DecodeCommand(old)
		require.ErrorIs(t, err, ck.ErrUnknownVersion, "version %d", v)
	}
	_, err = n.f.Apply(ck.Entry{Index: 1, Term: 1}, data)
	require.NoError(t, err)
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
