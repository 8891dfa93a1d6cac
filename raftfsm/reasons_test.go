package raftfsm_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/raftfsm"
)

// TestEntryErrorSaysEachThingOnce: an entry's error names the package and
// the entry once and keeps its sentinel reachable.
func TestEntryErrorSaysEachThingOnce(t *testing.T) {
	n := newNode(t, testConfig())
	data, err := (&raftfsm.Command{Time: n.now, Operator: &raftfsm.Operator{Action: raftfsm.OpCancel, Job: "nope"}}).MarshalVersion(raftfsm.CommandVersion)
	require.NoError(t, err)
	_, err = n.f.Apply(ck.Entry{Index: 14, Term: 1, Time: n.now}, data)
	require.ErrorIs(t, err, raftfsm.ErrOperator)
	require.Equal(t, 1, strings.Count(err.Error(), "raftfsm:"), err.Error())
	require.True(t, strings.HasPrefix(err.Error(), "raftfsm: entry 14: "), err.Error())
}

// TestOperatorIssuer: an operator command carries who issued it; every
// replica logs it. A command without it is shorter by the missing item.
func TestOperatorIssuer(t *testing.T) {
	var logs bytes.Buffer
	n := newNode(t, testConfig(), raftfsm.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
	cmd := &raftfsm.Command{Time: n.now, Operator: &raftfsm.Operator{Action: raftfsm.OpPause, Tenant: "acme", By: "alice@ops"}}
	data, err := cmd.MarshalVersion(raftfsm.CommandVersion)
	require.NoError(t, err)
	back, err := raftfsm.DecodeCommand(data)
	require.NoError(t, err)
	require.Equal(t, "alice@ops", back.Operator.By)
	plain := &raftfsm.Command{Time: n.now, Operator: &raftfsm.Operator{Action: raftfsm.OpPause, Tenant: "acme"}}
	p, err := plain.MarshalVersion(raftfsm.CommandVersion)
	require.NoError(t, err)
	require.Less(t, len(p), len(data))

	for _, by := range []string{strings.Repeat("a", 129), "bad\nname", "\xff"} {
		bad := &raftfsm.Command{Time: n.now, Operator: &raftfsm.Operator{Action: raftfsm.OpPause, Tenant: "acme", By: by}}
		require.ErrorIs(t, bad.Validate(), raftfsm.ErrInvalidCommand, "%q", by)
	}

	n.mustApply(cmd)
	require.Contains(t, logs.String(), `"by":"alice@ops"`)
	require.Contains(t, logs.String(), `"msg":"raftfsm: operator command"`)
}
