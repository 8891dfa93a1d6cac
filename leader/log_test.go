package leader_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/raftfsm"
)

// TestServiceLogsOutcomes: the leader logs a failure, an exclusion and a
// refusal once each, with structured attributes; a retried poll logs
// nothing more.
func TestServiceLogsOutcomes(t *testing.T) {
	cfg := raftfsm.DefaultConfig()
	cfg.Planner.Levels[0].MaxBlocks = 2
	cfg.Scheduler.MaxFailures = 2
	fsm, err := raftfsm.New(cfg)
	require.NoError(t, err)
	var buf bytes.Buffer
	svc := leader.New(leadertest.NewMemLog(fsm), fsm, leader.WithLogger(slog.New(slog.NewJSONHandler(&buf, nil))))
	ctx := context.Background()
	_, err = svc.AddBlocks(ctx, []ck.BlockMeta{leadertest.Block("seg-1", "acme", 0, 0), leadertest.Block("seg-2", "acme", 0, 1e9)})
	require.NoError(t, err)

	seq := uint64(0)
	fail := func() {
		seq++
		resp, err := svc.Poll(ctx, &ck.PollRequest{WorkerID: "w1", Seq: seq, FreeSlots: 1})
		require.NoError(t, err)
		require.Len(t, resp.Jobs, 1)
		j := resp.Jobs[0]
		seq++
		req := &ck.PollRequest{WorkerID: "w1", Seq: seq, Updates: []ck.StatusUpdate{{Job: j.Job, Token: j.Token, Status: ck.ReportFailure, Reason: "disk full"}}}
		_, err = svc.Poll(ctx, req)
		require.NoError(t, err)
		_, err = svc.Poll(ctx, req) // a retry: answered from the poll log
		require.NoError(t, err)
	}
	fail()
	fail()
	_, err = svc.Poll(ctx, &ck.PollRequest{WorkerID: "w1", Seq: seq + 1, Updates: []ck.StatusUpdate{{Job: "a-job", Token: 0, Status: ck.ReportSuccess}}})
	require.Error(t, err)

	var msgs []string
	for _, line := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		var rec map[string]any
		require.NoError(t, json.Unmarshal(line, &rec))
		msg := rec["msg"].(string)
		switch msg {
		case "leader: took office":
			continue
		case "leader: poll refused":
			require.Equal(t, "WARN", rec["level"])
		default:
			require.Equal(t, "disk full", rec["reason"], msg)
			require.Equal(t, ck.PublicWorkerName("w1"), rec["worker"], "workers are logged by public name")
			require.NotEmpty(t, rec["job"])
		}
		msgs = append(msgs, msg)
	}
	require.Equal(t, []string{
		"leader: job failed; it will be retried",
		"leader: job excluded at its failure limit; it runs again only when an operator retries it",
		"leader: poll refused",
	}, msgs)
}
