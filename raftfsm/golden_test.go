package raftfsm_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/policy"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/scheduler"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// goldenScenario builds a small state that exercises every component and
// every command kind at the given cluster version, with commands encoded
// in that version, and returns the node and the commands by name.
func goldenScenario(t tb, version byte) (*node, map[string][]byte) {
	cfg := testConfig()
	cfg.StartVersion = version
	n := newNode(t, cfg)
	n.version = version
	cmds := map[string]*raftfsm.Command{}
	run := func(name string, cmd *raftfsm.Command) *raftfsm.Result {
		cmds[name] = cmd
		return n.mustApply(cmd)
	}
	lvl := uint32(1)
	run("config", &raftfsm.Command{Config: ptr(testConfig())})
	run("cluster-version", &raftfsm.Command{ClusterVersion: &raftfsm.SetClusterVersion{Version: version}})
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
	// A failure with its reason, kept with the job.
	run("add-blocks-t3", addBlocks(blocks("c", "t3", 3, 4, t0)))
	job = n.poll(&ck.PollRequest{WorkerID: "w3", Seq: 1, FreeSlots: 1}).Jobs[0]
	n.advance(time.Second)
	cmd, err = n.f.Prepare(&ck.PollRequest{WorkerID: "w3", Seq: 2, Updates: []ck.StatusUpdate{
		{Job: job.Job, Token: job.Token, Status: ck.ReportFailure, Reason: "merge: disk full"},
	}}, n.now)
	require.NoError(t, err)
	require.Equal(t, "merge: disk full", cmd.Poll.Update.Changes[0].Reason)
	fr := run("poll-failure", cmd)
	require.True(t, fr.Changes[0].Applied, fr.Changes[0].Reason)
	// Level-1 blocks with AnyShard, as a cross-shard job writes them:
	// queued.
	bs := blocks("d", "t4", ck.AnyShard, 2, t0)
	for i := range bs {
		bs[i].Level = 1
	}
	r := run("add-blocks-any-shard", addBlocks(bs))
	for _, br := range r.Blocks {
		require.NoError(t, br.Err)
		require.True(t, br.Queued, br.ID)
	}
	// An operator's mark: a quarantined block without a job.
	r = run("mark", &raftfsm.Command{Operator: &raftfsm.Operator{Action: raftfsm.OpMark, Blocks: []string{bs[0].ID},
		Reason: "legal hold", By: "alice"}})
	require.Equal(t, 1, r.Count)
	// Scheduling policies: a tenant's own, the default, a compact-now
	// request and a backpressure grade, all in the snapshot.
	run("policy-set", &raftfsm.Command{Policy: &raftfsm.PolicyCommand{Action: raftfsm.PolicySet, Tenant: "t1", By: "alice",
		Policy: &policy.Tenant{Class: policy.Low, MaxInProgress: 2, NotBefore: t0,
			Run:        policy.RunPolicy{Mode: policy.NeverIn, Windows: []policy.Window{{Days: policy.Days(time.Monday, time.Tuesday, time.Wednesday, time.Thursday, time.Friday), Start: 9 * 60, End: 17 * 60, Offset: 60}}},
			Pressure:   policy.Thresholds{SlowBlocks: policy.Limit{On: 2, Off: 1}, StopReadyBatches: policy.Limit{On: 1 << 20, Off: 1 << 19}},
			StaleAfter: time.Hour}}})
	run("policy-default", &raftfsm.Command{Policy: &raftfsm.PolicyCommand{Action: raftfsm.PolicySet, All: true,
		Policy: &policy.Tenant{Class: policy.High}}})
	run("compact-now", &raftfsm.Command{Policy: &raftfsm.PolicyCommand{Action: raftfsm.PolicyCompactNow, Tenant: "t5", Level: &lvl}})
	// Every tenant said with All, and the empty tenant by itself.
	run("pause-all", &raftfsm.Command{Operator: &raftfsm.Operator{Action: raftfsm.OpPause, All: true, Level: ptr(uint32(2))}})
	run("pause-empty-tenant", &raftfsm.Command{Operator: &raftfsm.Operator{Action: raftfsm.OpPause}})
	r = run("add-blocks-t1", addBlocks(blocks("e", "t1", 5, 3, t0)))
	require.Equal(t, policy.Slow, r.Blocks[0].Pressure)
	out := map[string][]byte{}
	for name, c := range cmds {
		data, err := c.MarshalVersion(version)
		require.NoError(t, err)
		out[name] = data
	}
	return n, out
}

func ptr[T any](v T) *T { return &v }

// TestGolden checks that this release reads the snapshots and commands of
// every cluster version from the first release's (5) on: the files in
// testdata/golden/vN decode, re-encode to the same bytes, and a restored
// snapshot re-snapshots to the same bytes. It also checks that at cluster
// version N this release writes exactly what the release that wrote the
// files did, so that a replica of this one at cluster version N behaves
// byte for byte as that release. Run with -update only when the newest
// format changes on purpose; never rewrite an older release's files.
func TestGolden(t *testing.T) {
	for version := raftfsm.OldestVersion; version <= raftfsm.CommandVersion; version++ {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) { testGolden(t, version) })
	}
}

func testGolden(t *testing.T, version byte) {
	n, cmds := goldenScenario(t, version)
	dir := filepath.Join("testdata", "golden", fmt.Sprintf("v%d", version))
	snap := n.snapshot()
	if *update && version == raftfsm.CommandVersion {
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
	jobs, _ := f.Jobs(scheduler.Filter{}, "", 0)
	var reasons []string
	for _, js := range jobs {
		if js.LastFailure != "" {
			reasons = append(reasons, js.LastFailure)
		}
	}
	require.Equal(t, []string{"merge: disk full"}, reasons, "the failure record survives the snapshot")

	files, err := filepath.Glob(filepath.Join(dir, "command-*.bin"))
	require.NoError(t, err)
	require.Len(t, files, len(cmds))
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		cmd, err := raftfsm.DecodeCommand(data)
		require.NoError(t, err, file)
		re, err := cmd.MarshalVersion(version)
		require.NoError(t, err)
		require.Equal(t, data, re, file)
	}
}

// goldenUpgradeScenario upgrades a cluster from version 5 to 6 in the
// middle of cleanup: a replacement applied at 5 leaves one tombstone per
// source, two applied at 6 leave one record each, and a cleanup-only job
// then holds the old tombstones and the first record side by side while
// the second record waits.
func goldenUpgradeScenario(t tb) *node {
	cfg := testConfig()
	cfg.StartVersion = 5
	n := newNode(t, cfg, raftfsm.WithCleanupBatch(6))
	n.version = 5
	n.mustApply(addBlocks(blocks("a", "t1", 1, 12, t0)))
	n.mustApply(&raftfsm.Command{TookOffice: &raftfsm.TookOffice{Leader: "n1"}})
	jobs := n.poll(&ck.PollRequest{WorkerID: "w1", Seq: 1, FreeSlots: 3}).Jobs
	require.Len(t, jobs, 3)
	complete := func(seq uint64, j ck.JobReply) {
		n.advance(time.Second)
		res := n.poll(&ck.PollRequest{WorkerID: "w1", Seq: seq, Updates: []ck.StatusUpdate{
			{Job: j.Job, Token: j.Token, Status: ck.ReportSuccess, Outputs: n.outputs(j.Plan, uint64(j.Token))},
		}})
		require.Equal(t, ck.OutcomeCompleted, res.Jobs[0].Outcome)
	}
	complete(2, jobs[0])
	n.mustApply(&raftfsm.Command{ClusterVersion: &raftfsm.SetClusterVersion{Version: 6}})
	n.version = 6
	complete(3, jobs[1])
	complete(4, jobs[2])
	n.advance(time.Hour)
	res := n.poll(&ck.PollRequest{WorkerID: "w2", Seq: 1, FreeSlots: 1})
	require.Len(t, res.Jobs, 1)
	require.True(t, res.Jobs[0].Plan.CleanupOnly())
	// A batch of 6 objects: the 4 tombstones of version 5, then the first
	// record, attached whole.
	require.Len(t, res.Jobs[0].Plan.Tombstones, 8)
	return n
}

// TestGoldenUpgrade pins a state of cluster version 6 that holds
// tombstones made at version 5 and records side by side: it restores and
// re-snapshots to the same bytes, and this release writes it for the
// scenario.
func TestGoldenUpgrade(t *testing.T) {
	n := goldenUpgradeScenario(t)
	path := filepath.Join("testdata", "golden", "v6", "upgrade.bin")
	snap := n.snapshot()
	if *update {
		require.NoError(t, os.WriteFile(path, snap, 0o644))
	}
	golden, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, snap, golden, "this release writes the golden snapshot for the upgrade scenario")
	f, err := raftfsm.Restore(bytes.NewReader(golden))
	require.NoError(t, err)
	var again bytes.Buffer
	require.NoError(t, f.Snapshot(&again))
	require.Equal(t, golden, again.Bytes(), "golden snapshot re-snapshots to the same bytes")

	// One job holds the four tombstones of version 5 and the four sources
	// of the first record; the second record's four wait.
	byEntry := map[uint64][]string{}
	for _, ti := range f.Index().Tombstones(ck.Tombstone{}, 0) {
		byEntry[ti.Index] = append(byEntry[ti.Index], ti.Job)
	}
	require.Len(t, byEntry, 3)
	var held, waiting int
	for _, jobs := range byEntry {
		require.Len(t, jobs, 4)
		for _, j := range jobs[1:] {
			require.Equal(t, jobs[0], j, "the sources of one replacement have one holder")
		}
		if jobs[0] == "" {
			waiting++
		} else {
			held++
		}
	}
	require.Equal(t, 2, held)
	require.Equal(t, 1, waiting)
}
