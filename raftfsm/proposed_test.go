package raftfsm_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/raftfsm"
)

// A leader applies the polls it encoded without decoding them: its results
// and state must be those of a follower that decodes the same entries,
// whatever the caller does to the command after encoding it. The bytes
// Encode returns are the caller's: a later Encode, which reuses the
// replica's buffers, leaves them as they were, and what the caller writes
// to them once applied changes nothing either.
func TestProposedPollsApplyAsDecoded(t *testing.T) {
	leader, follower := newNode(t, testConfig()), newNode(t, testConfig())
	var index uint64
	apply := func(data []byte) *raftfsm.Result {
		t.Helper()
		index++
		e := ck.Entry{Index: index, Term: 1, Time: leader.now}
		lr, err := leader.f.Apply(e, data)
		require.NoError(t, err)
		fr, err := follower.f.Apply(e, data)
		require.NoError(t, err)
		require.Equal(t, fr, lr, "entry %d", index)
		require.Equal(t, follower.snapshot(), leader.snapshot(), "entry %d", index)
		return lr
	}
	encode := func(cmd *raftfsm.Command) []byte {
		t.Helper()
		data, err := leader.f.Encode(cmd, leader.now)
		require.NoError(t, err)
		return data
	}
	for i, tenant := range []string{"t1", "t2"} {
		apply(encode(addBlocks(blocks("b"+tenant, tenant, uint32(i), 12, t0))))
	}
	var (
		held           []ck.JobReply
		completions    int
		prev, prevCopy []byte // the previous poll's entry, and a copy
	)
	for seq := uint64(1); seq <= 8; seq++ {
		leader.advance(1e9)
		req := &ck.PollRequest{WorkerID: "w1", Seq: seq, FreeSlots: 2}
		for _, j := range held {
			req.Updates = append(req.Updates, ck.StatusUpdate{Job: j.Job, Token: j.Token, Status: ck.ReportSuccess, Outputs: leader.outputs(j.Plan, uint64(j.Token))})
		}
		completions += len(req.Updates)
		cmd, err := leader.f.Prepare(req, leader.now)
		require.NoError(t, err)
		data := encode(cmd)
		require.Equal(t, 1, raftfsm.Proposed(leader.f), "the leader keeps the poll it encoded")
		require.Equal(t, prevCopy, prev, "poll %d: encoding changed the previous poll's bytes", seq)
		// What the caller does to the command after Encode changes nothing.
		for k := range cmd.Poll.Update.Changes {
			c := &cmd.Poll.Update.Changes[k]
			c.Job = "scribbled"
			if c.Plan != nil && len(c.Plan.Sources) > 0 {
				c.Plan.Sources[0] = "scribbled"
			}
		}
		cmd.Poll.Reports = nil
		res := apply(data)
		require.Zero(t, raftfsm.Proposed(leader.f), "and takes it to apply it")
		prev, prevCopy = data, bytes.Clone(data)
		if seq%2 == 0 {
			clear(prev) // the caller's to reuse once applied
			prevCopy = bytes.Clone(prev)
		}
		held = held[:0]
		for _, r := range res.Poll.Jobs {
			if r.Outcome == ck.OutcomeAssigned {
				held = append(held, r)
			}
		}
	}
	require.GreaterOrEqual(t, completions, 4, "the polls completed jobs")
}
