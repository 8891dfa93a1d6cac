package raftfsm_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/scheduler"
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
// re-encodes, in the version it was found in and in the newest, to a
// command that decodes to the same encoding.
func FuzzDecodeCommand(f *testing.F) {
	goldenSeeds(f, "command-*.bin")
	f.Fuzz(func(t *testing.T, data []byte) {
		cmd, err := raftfsm.DecodeCommand(data)
		if err != nil {
			return
		}
		for _, version := range []byte{data[3], raftfsm.CommandVersion} { // the header's version byte
			re, err := cmd.MarshalVersion(version)
			require.NoError(t, err)
			cmd2, err := raftfsm.DecodeCommand(re)
			require.NoError(t, err)
			re2, err := cmd2.MarshalVersion(version)
			require.NoError(t, err)
			require.Equal(t, re, re2)
		}
	})
}

// A command's body has the form of its version: version 6 every field,
// version 5 the optional ones only when set. A body under the other
// version's header is malformed.
func TestDecodeCommandForms(t *testing.T) {
	for _, name := range []string{"pause", "mark", "policy-set", "poll-failure"} {
		for from, to := range map[byte]byte{5: 6, 6: 5} {
			data, err := os.ReadFile(filepath.Join("testdata", "golden", fmt.Sprintf("v%d", from), "command-"+name+".bin"))
			require.NoError(t, err)
			_, err = raftfsm.DecodeCommand(data)
			require.NoError(t, err)
			body := append([]byte(nil), data[:len(data)-4]...)
			body[3] = to
			_, err = raftfsm.DecodeCommand(binary.BigEndian.AppendUint32(body, crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli))))
			require.ErrorIs(t, err, ck.ErrMalformed, "%s: version %d's body under version %d", name, from, to)
		}
	}
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

// FuzzPollPath: a worker's request in its wire form, through the whole
// poll path — decode, Prepare on the leader, Apply on the replica — on a
// state with jobs in progress. Nothing panics; a request refused at any
// step changes nothing; an applied one answers with a valid response that
// speaks only of the jobs it reported and of new assignments.
func FuzzPollPath(f *testing.F) {
	n := pollPathState(f)
	jobs, _ := n.f.Jobs(scheduler.Filter{Status: ck.StatusInProgress}, "", 100)
	require.NotEmpty(f, jobs)
	seed := func(req *ck.PollRequest) {
		data, err := req.MarshalBinary()
		require.NoError(f, err)
		f.Add(data)
	}
	seed(&ck.PollRequest{WorkerID: "w1", Seq: 4, FreeSlots: 2})
	seed(&ck.PollRequest{WorkerID: "w9", Seq: 1, FreeSlots: 1})
	for _, js := range jobs {
		_, plan, _ := n.f.Job(js.Name)
		for _, u := range []ck.StatusUpdate{
			{Job: js.Name, Token: js.Token, Status: ck.ReportInProgress},
			{Job: js.Name, Token: js.Token, Status: ck.ReportFailure, Reason: "disk full"},
			{Job: js.Name, Token: js.Token, Status: ck.ReportReleased},
			{Job: js.Name, Token: js.Token, Status: ck.ReportSuccess, Outputs: n.outputs(&plan, uint64(js.Token))},
			{Job: js.Name, Token: js.Token + 1, Status: ck.ReportInProgress},
		} {
			for _, w := range []string{js.Worker, "w1", "w2"} { // the public name, the holder, another
				seed(&ck.PollRequest{WorkerID: w, Seq: 4, FreeSlots: 1, Updates: []ck.StatusUpdate{u}})
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var req ck.PollRequest
		if err := req.UnmarshalBinary(data); err != nil {
			return
		}
		n := pollPathState(t)
		before := n.snapshot()
		cmd, err := n.f.Prepare(&req, n.now)
		if err != nil {
			require.Equal(t, before, n.snapshot(), "a refused request changed the state")
			return
		}
		res, err := n.apply(cmd)
		if err != nil {
			require.Equal(t, before, n.snapshot(), "a refused entry changed the state")
			return
		}
		require.NotNil(t, res.Poll)
		require.NoError(t, res.Poll.Validate())
		reported := map[string]bool{}
		for _, u := range req.Updates {
			reported[u.Job] = true
		}
		for _, r := range res.Poll.Jobs {
			if r.Outcome != ck.OutcomeAssigned {
				require.True(t, reported[r.Job], "a reply about %s, not reported", r.Job)
			}
		}
	})
}

// pollPathState is the golden scenario with more blocks, and jobs in
// progress for workers w1 and w2.
func pollPathState(t tb) *node {
	n, _ := goldenScenario(t, raftfsm.CommandVersion)
	n.mustApply(addBlocks(blocks("c", "t1", 3, 8, t0)))
	n.poll(&ck.PollRequest{WorkerID: "w1", Seq: 3, FreeSlots: 1})
	n.poll(&ck.PollRequest{WorkerID: "w2", Seq: 1, FreeSlots: 1})
	return n
}
