package raftfsm_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/policy"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/scheduler"
)

// TestCapFreedInSamePoll: ten one-slot polls, each completing the job the
// previous one started, start ten jobs under a cap of one from cluster
// version 6, as without a cap. At version 5 a completion could not start
// the capped tenant's next job in its own poll: five.
func TestCapFreedInSamePoll(t *testing.T) {
	require.Equal(t, 10, startsInTenPolls(t, 5, 0), "version 5, no cap")
	require.Equal(t, 5, startsInTenPolls(t, 5, 1), "version 5, cap 1")
	require.Equal(t, 10, startsInTenPolls(t, 6, 0), "version 6, no cap")
	require.Equal(t, 10, startsInTenPolls(t, 6, 1), "version 6, cap 1")
}

// startsInTenPolls runs ten one-slot polls of one worker at the cluster
// version, each reporting the success of the job the previous one
// started, for a tenant with the cap (0: none) and plenty of blocks, and
// returns the jobs started. The cap holds throughout.
func startsInTenPolls(t *testing.T, version byte, limit uint32) int {
	cfg := testConfig()
	cfg.StartVersion = version
	n := newNode(t, cfg)
	n.version = version
	if limit > 0 {
		n.mustApply(&raftfsm.Command{Policy: &raftfsm.PolicyCommand{Action: raftfsm.PolicySet, Tenant: "c",
			Policy: &policy.Tenant{MaxInProgress: limit}}})
	}
	n.mustApply(addBlocks(blocks("c", "c", 1, 48, t0)))
	var prev *ck.JobReply
	started := 0
	for seq := uint64(1); seq <= 10; seq++ {
		req := &ck.PollRequest{WorkerID: "w1", Seq: seq, FreeSlots: 1}
		if prev != nil {
			req.Updates = []ck.StatusUpdate{{Job: prev.Job, Token: prev.Token, Status: ck.ReportSuccess,
				Outputs: n.outputs(prev.Plan, uint64(prev.Token))}}
		}
		prev = nil
		for _, j := range n.poll(req).Jobs {
			if j.Outcome == ck.OutcomeAssigned {
				started++
				prev = &j
			}
		}
		if limit > 0 {
			jobs, _ := n.f.Jobs(scheduler.Filter{Status: ck.StatusInProgress}, "", 0)
			require.LessOrEqual(t, len(jobs), int(limit), "the cap holds")
		}
	}
	return started
}

// BenchmarkCappedTenantPoll: the steady state of a tenant at its cap of
// 4 jobs in progress with blocks queued on 64 shards: each poll (one free
// slot) completes the tenant's oldest job and is given its next, under
// FreeCaps (cluster version 6). ns/op is one poll, Prepare and Apply.
// Steady state: its cap costs no pass over its queued keys or its jobs.
func BenchmarkCappedTenantPoll(b *testing.B) {
	cfg := testConfig()
	n := newNode(b, cfg)
	n.mustApply(&raftfsm.Command{Policy: &raftfsm.PolicyCommand{Action: raftfsm.PolicySet, Tenant: "c",
		Policy: &policy.Tenant{MaxInProgress: 4}}})
	const shards, perShard = 64, 256
	for s := range uint32(shards) {
		n.mustApply(addBlocks(blocks(fmt.Sprintf("c%02d", s), "c", s, perShard, t0)))
	}
	var running []ck.JobReply
	seq := uint64(0)
	poll := func(req *ck.PollRequest) {
		seq++
		req.WorkerID, req.Seq = "w1", seq
		for _, j := range n.poll(req).Jobs {
			if j.Outcome == ck.OutcomeAssigned {
				running = append(running, j)
			}
		}
	}
	poll(&ck.PollRequest{FreeSlots: 4})
	require.Len(b, running, 4)
	for b.Loop() {
		b.StopTimer()
		done := running[0]
		running = running[1:]
		outs := n.outputs(done.Plan, uint64(done.Token))
		b.StartTimer()
		poll(&ck.PollRequest{FreeSlots: 1, Updates: []ck.StatusUpdate{{Job: done.Job, Token: done.Token,
			Status: ck.ReportSuccess, Outputs: outs}}})
		if len(running) != 4 {
			b.Fatalf("%d jobs in progress, want 4", len(running))
		}
	}
}
