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
	for _, tc := range []struct {
		version byte
		cap     uint32
		want    int
	}{
		{5, 0, 10},
		{5, 1, 5},
		{6, 0, 10},
		{6, 1, 10},
	} {
		t.Run(fmt.Sprintf("v%d/cap%d", tc.version, tc.cap), func(t *testing.T) {
			cfg := testConfig()
			cfg.StartVersion = tc.version
			n := newNode(t, cfg)
			n.version = tc.version
			if tc.cap > 0 {
				n.mustApply(&raftfsm.Command{Policy: &raftfsm.PolicyCommand{Action: raftfsm.PolicySet, Tenant: "c",
					Policy: &policy.Tenant{MaxInProgress: tc.cap}}})
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
			}
			require.Equal(t, tc.want, started)
			if tc.cap > 0 {
				jobs, _ := n.f.Jobs(scheduler.Filter{Status: ck.StatusInProgress}, "", 0)
				require.LessOrEqual(t, len(jobs), int(tc.cap), "the cap holds")
			}
		})
	}
}
