package raftfsm_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/raftfsm"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// goldenScenario builds a small state that exercises every component and
// every command kind, and returns the node and the commands by name.
func goldenScenario(t tb) (*node, map[string][]byte) {
	n := newNode(t, testConfig())
	cmds := map[string]*raftfsm.Command{}
	run := func(name string, cmd *raftfsm.Command) *raftfsm.Result {
		cmds[name] = cmd
		return n.mustApply(cmd)
	}
	lvl := uint32(1)
	run("config", &raftfsm.Command{Config: ptr(testConfig())})
	run("cluster-version", &raftfsm.Command{ClusterVersion: &raftfsm.SetClusterVersion{Version: 1}})
	run("add-blocks", addBlocks(append(blocks("a", "t1", 1, 6, t0), blocks("b", "t2", 2, 4, t0)...)))
	run("took-office", &raftfsm.Command{TookOffice: &raftfsm.TookOffice{Leader: "n1"}})
	res := n.poll(&ck.PollRequest{WorkerID: "w1", Seq: 1, FreeSlots: 2})
	job := res.Jobs[0]
	n.advance(time.Second)
	n.mustApply(&raftfsm.Command{PreparePoll: &raftfsm.PreparePoll{WorkerID: "w1", Seq: 2}})
	cmds["prepare-poll"] = &raftfsm.Command{PreparePoll: &raftfsm.PreparePoll{WorkerID: "w1", Seq: 2}, Time: n.now}
	cmd, err := n.f.Prepare(&ck.PollRequest{WorkerID: "w1", Seq: 2, Updates: []ck.StatusUpdate{
		{Job: job.Job, Token: job.Token, Status: ck.ReportSuccess, Outputs: n.outputs(job.Plan, uint64(job.Token))},
	}, FreeSlots: 1}, n.now)
	require.NoError(t, err)
	cmd.Poll.Update.TokenIndex = n.index
	run("poll", cmd)
	run("watermark", &raftfsm.Command{Watermark: &raftfsm.Watermark{OldestReader: n.now}})
	run("pause", &raftfsm.Command{Operator: &raftfsm.Operator{Action: raftfsm.OpPause, Tenant: "t2", Level: &lvl}})
	run("max-failures", &raftfsm.Command{Operator: &raftfsm.Operator{Action: raftfsm.OpSetMaxFailures, MaxFailures: 5}})
	run("retry", &raftfsm.Command{Operator: &raftfsm.Operator{Action: raftfsm.OpRetry}})
	run("retention", &raftfsm.Command{Retention: &raftfsm.Retention{Tenant: "t2", Before: t0 + int64(2*time.Second)}})
	out := map[string][]byte{}
	for name, c := range cmds {
		data, err := c.MarshalBinary()
		require.NoError(t, err)
		out[name] = data
	}
	return n, out
}

func ptr[T any](v T) *T { return &v }

// TestGolden checks that this release reads the snapshots and commands of
// every earlier one (DESIGN.md §5.8): the files in testdata/golden decode,
// re-encode to the same bytes, and a restored snapshot re-snapshots to the
// same bytes. Run with -update only when the format changes on purpose,
// and then keep the old files next to the new ones.
func TestGolden(t *testing.T) {
	n, cmds := goldenScenario(t)
	dir := filepath.Join("testdata", "golden", "v1")
	snap := n.snapshot()
	if *update {
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "snapshot.bin"), snap, 0o644))
		for name, data := range cmds {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "command-"+name+".bin"), data, 0o644))
		}
	}
	golden, err := os.ReadFile(filepath.Join(dir, "snapshot.bin"))
	require.NoError(t, err)
	f, err := raftfsm.Restore(bytes.NewReader(golden))
	require.NoError(t, err)
	var again bytes.Buffer
	require.NoError(t, f.Snapshot(&again))
	require.Equal(t, golden, again.Bytes(), "golden snapshot re-snapshots to the same bytes")
	require.Equal(t, snap, golden, "this release writes the golden snapshot for the golden scenario")

	files, err := filepath.Glob(filepath.Join(dir, "command-*.bin"))
	require.NoError(t, err)
	require.Len(t, files, len(cmds))
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		cmd, err := raftfsm.DecodeCommand(data)
		require.NoError(t, err, file)
		re, err := cmd.MarshalBinary()
		require.NoError(t, err)
		require.Equal(t, data, re, file)
	}
}
