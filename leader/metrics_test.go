package leader_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/raftfsm"
)

// The service measures poll latency, job duration (assignment to
// completion) and the last completion per level, by its clock.
func TestServiceMetrics(t *testing.T) {
	cfg := raftfsm.DefaultConfig()
	cfg.Planner.Levels[0].MaxBlocks = 2
	fsm, err := raftfsm.New(cfg)
	require.NoError(t, err)
	var mu sync.Mutex
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { // a second per reading
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Second)
		return now
	}
	svc := leader.New(leadertest.NewMemLog(fsm), fsm, leader.WithClock(clock))
	ctx := context.Background()
	_, err = svc.AddBlocks(ctx, []ck.BlockMeta{leadertest.Block("seg-1", "acme", 0, 0), leadertest.Block("seg-2", "acme", 0, 1e9)})
	require.NoError(t, err)
	resp, err := svc.Poll(ctx, &ck.PollRequest{WorkerID: "w1", Seq: 1, FreeSlots: 1})
	require.NoError(t, err)
	j := resp.Jobs[0]
	out := leadertest.Block(ck.OutputID(j.Job, j.Token, 0), "acme", 0, 0)
	out.Level, out.MaxTime, out.Size = 1, 2e9, 200
	out.Datasets[0].MaxTime, out.Datasets[0].Size = 2e9, 200
	resp, err = svc.Poll(ctx, &ck.PollRequest{WorkerID: "w1", Seq: 2, Updates: []ck.StatusUpdate{{Job: j.Job, Token: j.Token, Status: ck.ReportSuccess, Outputs: []ck.BlockMeta{out}}}})
	require.NoError(t, err)
	require.Equal(t, ck.OutcomeCompleted, resp.Jobs[0].Outcome)

	m := svc.Metrics()
	require.Equal(t, uint64(2), m.PollSeconds.Count)
	require.Equal(t, uint64(1), m.JobSeconds.Count)
	require.Positive(t, m.JobSeconds.Sum)
	require.Contains(t, m.LastCompletion, uint32(0))
	require.Equal(t, m.PollSeconds.Count, m.PollSeconds.Counts[len(m.PollSeconds.Counts)-1], "every poll under the largest bound")
}
