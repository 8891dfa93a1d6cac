package crosshost_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/raftfsm/etcdraft/etcdrafttest"
	"github.com/compactkit/compactkit/raftfsm/hraft"
	"github.com/compactkit/compactkit/raftfsm/hraft/hraftnode"
)

// etcdNode is a single etcd-io/raft node in memory (etcdrafttest's
// reference host) and the leader service over it.
type etcdNode struct {
	fsm *raftfsm.FSM
	svc *leader.Service
}

// startEtcd starts a single-node etcd-io/raft cluster hosting cfg and
// waits until its service leads.
func startEtcd(t *testing.T, cfg raftfsm.Config, opts ...leader.Option) *etcdNode {
	t.Helper()
	fsm, err := raftfsm.New(cfg)
	require.NoError(t, err)
	n, err := etcdrafttest.Start(fsm, etcdrafttest.Config{ID: 1, Peers: []raft.Peer{{ID: 1}}})
	require.NoError(t, err)
	svc := leader.New(n.Adapter, fsm, opts...)
	t.Cleanup(func() {
		assert.NoError(t, n.Stop())
		_ = svc.Close()
	})
	for !n.Adapter.Leader().Leads {
		time.Sleep(10 * time.Millisecond) // an election takes ~10 ticks
	}
	return &etcdNode{fsm: fsm, svc: svc}
}

// fakeClock returns a clock that moves one second per reading.
func fakeClock() func() time.Time {
	var mu sync.Mutex
	now := time.Unix(1_700_000_000, 0)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Second)
		return now
	}
}

// oneWorker drives a service with one worker and no faults: blocks in
// batches, then polls that complete the job held (one block one level up
// spanning its sources) and take another.
func oneWorker(t *testing.T, svc *leader.Service) {
	ctx := context.Background()
	for b := 0; b < 48; b += 4 {
		var blocks []ck.BlockMeta
		for i := b; i < b+4; i++ {
			blocks = append(blocks, leadertest.Block(fmt.Sprintf("seg-%03d", i), "acme", uint32(i%2), int64(i)*int64(time.Second)))
		}
		_, err := svc.AddBlocks(ctx, blocks)
		require.NoError(t, err)
	}
	var held *ck.JobReply
	for seq := uint64(1); seq <= 60; seq++ {
		req := &ck.PollRequest{WorkerID: "w1-AAAAAAAAAAAAAAAA", Seq: seq, FreeSlots: 1}
		if held != nil {
			req.Updates = []ck.StatusUpdate{{Job: held.Job, Token: held.Token, Status: ck.ReportSuccess, Outputs: outputs(svc, held)}}
		}
		resp, err := svc.Poll(ctx, req)
		require.NoError(t, err)
		held = nil
		for i := range resp.Jobs {
			if resp.Jobs[i].Outcome == ck.OutcomeAssigned {
				held = &resp.Jobs[i]
			}
		}
	}
}

// The same workload through the same leader service on etcd-io/raft and
// on hashicorp/raft, with a fake clock: the two state machines end
// byte-identical — the hosts number their entries alike (a bootstrap
// configuration, the new leader's entry, a barrier entry at took-office)
// and compactkit's state depends only on the commands and their indexes.
func TestSameStateOnBothHosts(t *testing.T) {
	cfg := raftfsm.DefaultConfig()
	for i := range cfg.Planner.Levels {
		cfg.Planner.Levels[i].MaxBlocks = 4 // jobs at every level within the run
	}
	lead := startEtcd(t, cfg, leader.WithClock(fakeClock()))

	nd, err := hraftnode.New(hraftnode.Config{
		ID: "n1", Dir: t.TempDir(), NoSync: true, BindAddr: "127.0.0.1:0", State: &cfg,
		Service: []hraft.Option{hraft.WithLeader(leader.WithClock(fakeClock()))},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = nd.Shutdown() })
	require.NoError(t, nd.Bootstrap())
	for !nd.Service.IsLeader() {
		time.Sleep(10 * time.Millisecond) // the election of a single node
	}

	oneWorker(t, lead.svc)
	oneWorker(t, nd.Service.Service)

	var a, b bytes.Buffer
	require.NoError(t, lead.fsm.Snapshot(&a))
	require.NoError(t, nd.State.Snapshot(&b))
	ea, eb := lead.fsm.Stats(), nd.State.Stats()
	t.Logf("etcd-io/raft: applied %d, completions %d; hashicorp/raft: applied %d, completions %d",
		ea.LastApplied, ea.Scheduler.Counters.Completed, eb.LastApplied, eb.Scheduler.Counters.Completed)
	require.Positive(t, ea.Scheduler.Counters.Completed)
	require.Equal(t, a.Bytes(), b.Bytes(), "the two hosts' state machines are byte-identical")
}

// outputs is the output the test worker reports for a job.
func outputs(svc *leader.Service, j *ck.JobReply) []ck.BlockMeta {
	out, _ := leadertest.Outputs(svc.FSM(), j)
	return out
}
