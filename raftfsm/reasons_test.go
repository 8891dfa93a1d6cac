package raftfsm_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/scheduler"
)

// failOnce assigns a job to w and reports it failed with reason; it
// returns the job's name.
func failOnce(t *testing.T, n *node, w string, seq *uint64, reason string) string {
	t.Helper()
	*seq++
	resp := n.poll(&ck.PollRequest{WorkerID: w, Seq: *seq, FreeSlots: 1})
	require.Len(t, resp.Jobs, 1)
	job := resp.Jobs[0]
	n.advance(time.Second)
	*seq++
	resp = n.poll(&ck.PollRequest{WorkerID: w, Seq: *seq, Updates: []ck.StatusUpdate{{Job: job.Job, Token: job.Token, Status: ck.ReportFailure, Reason: reason}}})
	require.Equal(t, ck.OutcomeAccepted, resp.Jobs[0].Outcome)
	return job.Job
}

// TestFailureReasonsFromClusterVersion3: below cluster version 3 a
// failure leaves no record and snapshots keep their earlier bytes; from 3
// every failed or abandoned attempt records why and when, and the record
// survives snapshots.
func TestFailureReasonsFromClusterVersion3(t *testing.T) {
	cfg := testConfig()
	cfg.StartVersion = 2
	cfg.Scheduler.MaxFailures = 10
	n := newNode(t, cfg)
	n.version = 2
	n.mustApply(addBlocks(blocks("a", "t1", 1, 4, t0)))
	var seq uint64
	name := failOnce(t, n, "w1", &seq, "disk full")
	js, _, ok := n.f.Job(name)
	require.True(t, ok)
	require.Equal(t, uint32(1), js.Failures)
	require.Empty(t, js.LastFailure, "no record at cluster version 2")
	require.Zero(t, js.FailedAt)

	// A version-2 command cannot carry a reason, in either direction.
	fail := &raftfsm.Command{Time: n.now, Poll: &raftfsm.Poll{WorkerID: "w1", Seq: 99, Update: ck.PlanUpdate{
		Changes: []ck.Change{{Kind: ck.ChangeFail, Job: name, Version: 1, Token: 1, Worker: "w1", Reason: "x"}}}}}
	_, err := fail.MarshalVersion(2)
	require.ErrorIs(t, err, raftfsm.ErrClusterVersion)
	v3, err := fail.MarshalVersion(3)
	require.NoError(t, err)
	v3[3] = 2 // the header's version byte (magic, kind, version)
	_, err = raftfsm.DecodeCommand(v3)
	require.Error(t, err)

	n.mustApply(&raftfsm.Command{ClusterVersion: &raftfsm.SetClusterVersion{Version: 3}})
	n.version = 3
	name = failOnce(t, n, "w1", &seq, "merge: disk full")
	js, _, _ = n.f.Job(name)
	require.Equal(t, "merge: disk full", js.LastFailure)
	require.Equal(t, n.now, js.FailedAt)

	// A failure without a reason, and a reason too long for the log.
	name = failOnce(t, n, "w1", &seq, "")
	js, _, _ = n.f.Job(name)
	require.Equal(t, scheduler.ReasonUnstated, js.LastFailure)
	name = failOnce(t, n, "w1", &seq, strings.Repeat("é", 1500))
	js, _, _ = n.f.Job(name)
	require.Len(t, js.LastFailure, ck.MaxReasonLen)

	// An expired lease, reassigned to another worker.
	seq++
	resp := n.poll(&ck.PollRequest{WorkerID: "w1", Seq: seq, FreeSlots: 1})
	require.Len(t, resp.Jobs, 1)
	n.advance(time.Hour)
	n.poll(&ck.PollRequest{WorkerID: "w2", Seq: 1, FreeSlots: 2})
	js, _, _ = n.f.Job(name)
	require.Equal(t, ck.PublicWorkerName("w2"), js.Worker, "reassigned")
	require.Equal(t, scheduler.ReasonLeaseExpired, js.LastFailure)
	require.Equal(t, n.now, js.FailedAt)

	// Snapshots carry the records; restored replicas show the same jobs
	// and write the same bytes.
	snap := n.snapshot()
	r, err := raftfsm.Restore(bytes.NewReader(snap))
	require.NoError(t, err)
	want, _ := n.f.Jobs(scheduler.Filter{}, "", 0)
	got, _ := r.Jobs(scheduler.Filter{}, "", 0)
	require.Equal(t, want, got)
	var again bytes.Buffer
	require.NoError(t, r.Snapshot(&again))
	require.Equal(t, snap, again.Bytes())
}

// TestEntryErrorSaysEachThingOnce: an entry's error names the package and
// the entry once and keeps its sentinel and index reachable.
func TestEntryErrorSaysEachThingOnce(t *testing.T) {
	cfg := testConfig()
	cfg.StartVersion = 2
	n := newNode(t, cfg)
	data, err := (&raftfsm.Command{Time: n.now, TookOffice: &raftfsm.TookOffice{Leader: "n1"}}).MarshalVersion(3)
	require.NoError(t, err)
	_, err = n.f.Apply(ck.Entry{Index: 14, Term: 1, Time: n.now}, data)
	require.ErrorIs(t, err, raftfsm.ErrClusterVersion)
	var ee *raftfsm.EntryError
	require.True(t, errors.As(err, &ee))
	require.Equal(t, uint64(14), ee.Index)
	require.Equal(t, 1, strings.Count(err.Error(), "raftfsm:"), err.Error())
	require.Equal(t, "raftfsm: entry 14: command version 3 above the cluster version 2: unsupported cluster version", err.Error())
}

// TestOperatorIssuer: from cluster version 3 an operator command carries
// who issued it; every replica logs it. Earlier versions neither write nor
// accept it, and a command without it keeps its earlier bytes.
func TestOperatorIssuer(t *testing.T) {
	var logs bytes.Buffer
	n := newNode(t, testConfig(), raftfsm.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
	cmd := &raftfsm.Command{Time: n.now, Operator: &raftfsm.Operator{Action: raftfsm.OpPause, Tenant: "acme", By: "alice@ops"}}
	data, err := cmd.MarshalVersion(3)
	require.NoError(t, err)
	back, err := raftfsm.DecodeCommand(data)
	require.NoError(t, err)
	require.Equal(t, "alice@ops", back.Operator.By)
	plain := &raftfsm.Command{Time: n.now, Operator: &raftfsm.Operator{Action: raftfsm.OpPause, Tenant: "acme"}}
	p3, err := plain.MarshalVersion(3)
	require.NoError(t, err)
	require.Less(t, len(p3), len(data))

	_, err = cmd.MarshalVersion(2)
	require.ErrorIs(t, err, raftfsm.ErrClusterVersion)
	v2 := append([]byte{}, data...)
	v2[3] = 2
	_, err = raftfsm.DecodeCommand(v2)
	require.Error(t, err)
	for _, by := range []string{strings.Repeat("a", raftfsm.MaxOperatorNameLen+1), "bad\nname", "\xff"} {
		bad := &raftfsm.Command{Time: n.now, Operator: &raftfsm.Operator{Action: raftfsm.OpPause, Tenant: "acme", By: by}}
		require.ErrorIs(t, bad.Validate(), raftfsm.ErrInvalidCommand, "%q", by)
	}

	n.mustApply(cmd)
	require.Contains(t, logs.String(), `"by":"alice@ops"`)
	require.Contains(t, logs.String(), `"msg":"raftfsm: operator command"`)
}
