package raftfsm_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/raftfsm"
)

func goldenSeeds(f *testing.F, pattern string) {
	files, _ := filepath.Glob(filepath.Join("testdata", "golden", "v*", pattern))
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(f, err)
		f.Add(data)
	}
}

// FuzzDecodeCommand: decoding never panics, and a command that decodes
// re-encodes to a command that decodes to the same encoding.
func FuzzDecodeCommand(f *testing.F) {
	goldenSeeds(f, "command-*.bin")
	f.Fuzz(func(t *testing.T, data []byte) {
		cmd, err := raftfsm.DecodeCommand(data)
		if err != nil {
			return
		}
		re, err := cmd.MarshalBinary()
		require.NoError(t, err)
		cmd2, err := raftfsm.DecodeCommand(re)
		require.NoError(t, err)
		re2, err := cmd2.MarshalBinary()
		require.NoError(t, err)
		require.Equal(t, re, re2)
	})
}

// FuzzApply: applying arbitrary bytes to a state machine never panics, and
// an entry that fails changes nothing.
func FuzzApply(f *testing.F) {
	goldenSeeds(f, "command-*.bin")
	f.Fuzz(func(t *testing.T, data []byte) {
		n, _ := goldenScenario(t, raftfsm.CommandVersion)
		before := n.snapshot()
		_, err := n.f.Apply(ck.Entry{Index: n.index + 1, Term: 1, Time: n.now}, data)
		if err != nil {
			require.Equal(t, before, n.snapshot())
		}
	})
}

// FuzzRestore: restoring arbitrary bytes never panics; a snapshot that
// restores re-snapshots to a snapshot that restores to the same bytes.
func FuzzRestore(f *testing.F) {
	goldenSeeds(f, "snapshot.bin")
	f.Fuzz(func(t *testing.T, data []byte) {
		fsm, err := raftfsm.Restore(bytes.NewReader(data))
		if err != nil {
			return
		}
		var a bytes.Buffer
		require.NoError(t, fsm.Snapshot(&a))
		fsm2, err := raftfsm.Restore(bytes.NewReader(a.Bytes()))
		require.NoError(t, err)
		var b bytes.Buffer
		require.NoError(t, fsm2.Snapshot(&b))
		require.Equal(t, a.Bytes(), b.Bytes())
	})
}
