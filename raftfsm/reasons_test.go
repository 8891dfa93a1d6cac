package raftfsm_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/raftfsm"
)

// TestFailureReasonNeedsVersion3: a version-2 command cannot carry a
// failure reason, in either direction: it is not written, and version-3
// bytes under a version-2 header do not decode. (The scenario, records
// kept from cluster version 3, is the transcript failure-reasons.txt.)
func TestFailureReasonNeedsVersion3(t *testing.T) {
	fail := &raftfsm.Command{Time: t0, Poll: &raftfsm.Poll{WorkerID: "w1", Seq: 99, Update: ck.PlanUpdate{
		Changes: []ck.Change{{Kind: ck.ChangeFail, Job: "j", Version: 1, Token: 1, Worker: "w1", Reason: "x"}}}}}
	_, err := fail.MarshalVersion(2)
	require.ErrorIs(t, err, raftfsm.ErrClusterVersion)
	v3, err := fail.MarshalVersion(3)
	require.NoError(t, err)
	_, err = raftfsm.DecodeCommand(v3)
	require.NoError(t, err)
	v3[3] = 2 // the header's version byte (magic, kind, version)
	_, err = raftfsm.DecodeCommand(v3)
	require.Error(t, err)
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
