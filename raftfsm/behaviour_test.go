package raftfsm_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/index"
	"github.com/compactkit/compactkit/internal/snaptest"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/scheduler"
)

func addBlocks(bs []ck.BlockMeta) *raftfsm.Command {
	return &raftfsm.Command{AddBlocks: &raftfsm.AddBlocks{Blocks: bs}}
}

func TestDuplicateBlocksRefused(t *testing.T) {
	n := newNode(t, testConfig())
	bs := blocks("a", "t1", 1, 2, t0)
	n.mustApply(addBlocks(bs))
	res := n.mustApply(addBlocks(bs))
	for _, b := range res.Blocks {
		require.ErrorIs(t, b.Err, index.ErrDuplicate)
		require.False(t, b.Queued)
	}
	require.Equal(t, 2, n.f.Stats().Planner.Queued)
}

func TestMalformedCommandsChangeNothing(t *testing.T) {
	// At cluster version 1, undecodable bytes are refused and the replica
	// goes on, as the previous release did. (From cluster version 2 they
	// stop the replica: TestCorruptEntryStopsReplica.)
	cfg := testConfig()
	cfg.StartVersion = 1
	v1 := newNode(t, cfg)
	v1.version = 1
	v1.mustApply(addBlocks(blocks("a", "t1", 1, 3, t0)))
	before := v1.snapshot()
	for i, data := range [][]byte{nil, {0xff}, []byte("ckC\x01"), []byte("ckC\x01\x80")} {
		_, err := v1.f.Apply(ck.Entry{Index: v1.index + 1 + uint64(i), Time: v1.now}, data)
		require.Error(t, err)
		require.NotErrorIs(t, err, raftfsm.ErrCorrupt)
	}
	require.Equal(t, before, v1.snapshot())
	v1.mustApply(addBlocks(blocks("b", "t1", 1, 1, t0)))

	n := newNode(t, testConfig())
	n.mustApply(addBlocks(blocks("a", "t1", 1, 3, t0)))
	before = n.snapshot()
	// Structurally valid but ill-formed commands.
	for _, cmd := range []*raftfsm.Command{
		{},
		{AddBlocks: &raftfsm.AddBlocks{}, TookOffice: &raftfsm.TookOffice{}},
		{AddBlocks: &raftfsm.AddBlocks{Blocks: []ck.BlockMeta{{ID: "../x"}}}},
		{Retention: &raftfsm.Retention{}},
		{Operator: &raftfsm.Operator{Action: 99}},
		{Operator: &raftfsm.Operator{Action: raftfsm.OpCancel, Job: "nope"}},
		{Operator: &raftfsm.Operator{Action: raftfsm.OpRetry, Job: "nope"}},
		{Poll: &raftfsm.Poll{WorkerID: "", Seq: 1}},
		{ClusterVersion: &raftfsm.SetClusterVersion{Version: 200}},
	} {
		_, err := n.apply(cmd)
		require.Error(t, err)
		n.index-- // the entry changed nothing; reuse its index
		n.log = n.log[:len(n.log)-1]
	}
	require.Equal(t, before, n.snapshot())
	_, err := n.apply(&raftfsm.Command{Operator: &raftfsm.Operator{Action: raftfsm.OpCancel, Job: "nope"}})
	require.ErrorIs(t, err, raftfsm.ErrOperator)
	require.ErrorIs(t, err, scheduler.ErrUnknownJob)
}

func TestEntriesAppliedOnce(t *testing.T) {
	n := newNode(t, testConfig())
	cmd := addBlocks(blocks("a", "t1", 1, 3, t0))
	n.mustApply(cmd)
	before := n.snapshot()
	data, err := cmd.MarshalBinary()
	require.NoError(t, err)
	res, err := n.f.Apply(ck.Entry{Index: n.index, Time: n.now}, data)
	require.NoError(t, err)
	require.True(t, res.Skipped)
	require.Equal(t, before, n.snapshot())
	_, err = n.f.Apply(ck.Entry{Index: 0}, data)
	require.Error(t, err)
}

func TestExpiredLeaseReassignedAndOrphaned(t *testing.T) {
	n := newNode(t, testConfig())
	n.mustApply(addBlocks(blocks("a", "t1", 1, 4, t0)))
	first := n.poll(&ck.PollRequest{WorkerID: "w1", Seq: 1, FreeSlots: 1}).Jobs[0]
	n.advance(20 * time.Second) // lease of 15 s expired
	second := n.poll(&ck.PollRequest{WorkerID: "w2", Seq: 1, FreeSlots: 1}).Jobs[0]
	require.Equal(t, first.Job, second.Job)
	require.Greater(t, second.Token, first.Token)
	js, _, ok := n.f.Job(first.Job)
	require.True(t, ok)
	require.Equal(t, uint32(1), js.Failures)
	_, ok = n.f.Index().Tombstone(ck.Tombstone{Kind: ck.TombstonePrefix, Target: ck.AttemptPrefix(first.Job, first.Token)})
	require.True(t, ok, "the abandoned attempt's prefix is tombstoned")

	// The slow first worker reports late: no lease, and its success is not committed.
	outs := n.outputs(first.Plan, uint64(first.Token))
	resp := n.poll(&ck.PollRequest{WorkerID: "w1", Seq: 2, Updates: []ck.StatusUpdate{{Job: first.Job, Token: first.Token, Status: ck.ReportSuccess, Outputs: outs}}})
	require.Equal(t, ck.OutcomeNoLease, resp.Jobs[0].Outcome)
	require.False(t, n.f.Index().Live(outs[0].ID))
	require.Equal(t, 4, n.f.Index().Len())
}

func TestLeaderChangeExtendsLeases(t *testing.T) {
	n := newNode(t, testConfig())
	n.mustApply(addBlocks(blocks("a", "t1", 1, 4, t0)))
	job := n.poll(&ck.PollRequest{WorkerID: "w1", Seq: 1, FreeSlots: 1}).Jobs[0]
	n.advance(14 * time.Second)
	res := n.mustApply(&raftfsm.Command{TookOffice: &raftfsm.TookOffice{Leader: "n2"}})
	require.Equal(t, 1, res.Count)
	n.advance(10 * time.Second) // past the original deadline, within the extension
	resp := n.poll(&ck.PollRequest{WorkerID: "w1", Seq: 2, Updates: []ck.StatusUpdate{{Job: job.Job, Token: job.Token, Status: ck.ReportInProgress}}})
	require.Equal(t, ck.OutcomeRenewed, resp.Jobs[0].Outcome)
}

func TestRetentionCancelsClaimingJob(t *testing.T) {
	n := newNode(t, testConfig())
	bs := blocks("a", "t1", 1, 4, t0)
	n.mustApply(addBlocks(bs))
	job := n.poll(&ck.PollRequest{WorkerID: "w1", Seq: 1, FreeSlots: 1}).Jobs[0]
	// Drop the first two blocks (they end before t0 + 2.5 s).
	res := n.mustApply(&raftfsm.Command{Retention: &raftfsm.Retention{Tenant: "t1", Before: t0 + int64(2500*time.Millisecond)}})
	require.Equal(t, []string{"a-000", "a-001"}, res.Dropped)
	require.Equal(t, []string{job.Job}, res.Cancelled)
	_, _, ok := n.f.Job(job.Job)
	require.False(t, ok)
	st := n.f.Stats()
	require.Equal(t, 2, st.Planner.Queued, "survivors returned to the queue")
	_, ok = n.f.Index().Tombstone(ck.Tombstone{Kind: ck.TombstonePrefix, Target: ck.AttemptPrefix(job.Job, job.Token)})
	require.True(t, ok, "the cancelled attempt's outputs are orphans")
	// The worker's late success resurrects nothing.
	outs := n.outputs(&ck.JobPlan{Name: job.Plan.Name, Tenant: "t1", Shard: 1, Sources: job.Plan.Sources[2:]}, uint64(job.Token))
	resp := n.poll(&ck.PollRequest{WorkerID: "w1", Seq: 2, Updates: []ck.StatusUpdate{{Job: job.Job, Token: job.Token, Status: ck.ReportSuccess, Outputs: outs}}})
	require.Equal(t, ck.OutcomeNoLease, resp.Jobs[0].Outcome)
	require.Equal(t, 2, n.f.Index().Len())
}

func TestRefusedCompletionReturnsSurvivors(t *testing.T) {
	n := newNode(t, testConfig())
	n.mustApply(addBlocks(blocks("a", "t1", 1, 4, t0)))
	job := n.poll(&ck.PollRequest{WorkerID: "w1", Seq: 1, FreeSlots: 1}).Jobs[0]
	outs := n.outputs(job.Plan, uint64(job.Token))
	outs[0].ID = "elsewhere/x" // not under the attempt's prefix: the index refuses it
	cmd, err := n.f.Prepare(&ck.PollRequest{WorkerID: "w1", Seq: 2, Updates: []ck.StatusUpdate{{Job: job.Job, Token: job.Token, Status: ck.ReportSuccess, Outputs: outs}}}, n.now)
	require.NoError(t, err)
	res := n.mustApply(cmd)
	require.Equal(t, ck.OutcomeCompleted, res.Poll.Jobs[0].Outcome)
	require.NotNil(t, res.Changes[0].Replace)
	require.False(t, res.Changes[0].Replace.Applied)
	require.Equal(t, 4, n.f.Stats().Planner.Queued, "sources back in the queue")
	require.Equal(t, 4, n.f.Index().Len())
	require.False(t, n.f.Index().Live("elsewhere/x"))
}

func TestInvalidSuccessRefusedAtPrepare(t *testing.T) {
	n := newNode(t, testConfig())
	n.mustApply(addBlocks(blocks("a", "t1", 1, 4, t0)))
	job := n.poll(&ck.PollRequest{WorkerID: "w1", Seq: 1, FreeSlots: 1}).Jobs[0]
	_, err := n.f.Prepare(&ck.PollRequest{WorkerID: "w1", Seq: 2, Updates: []ck.StatusUpdate{{Job: job.Job, Token: job.Token, Status: ck.ReportSuccess}}}, n.now)
	require.ErrorIs(t, err, raftfsm.ErrInvalidRequest)
	outs := n.outputs(job.Plan, uint64(job.Token))
	outs[0].Level = 0
	_, err = n.f.Prepare(&ck.PollRequest{WorkerID: "w1", Seq: 2, Updates: []ck.StatusUpdate{{Job: job.Job, Token: job.Token, Status: ck.ReportSuccess, Outputs: outs}}}, n.now)
	require.ErrorIs(t, err, raftfsm.ErrInvalidRequest)
	_, err = n.f.Prepare(&ck.PollRequest{WorkerID: "w1", Seq: 0}, n.now)
	require.ErrorIs(t, err, raftfsm.ErrInvalidRequest)
}

func TestFailuresExcludeEvictQuarantineRequeue(t *testing.T) {
	cfg := testConfig()
	cfg.Scheduler.MaxFailures = 2
	cfg.Scheduler.MaxQueueSize = 1
	n := newNode(t, cfg)
	n.mustApply(addBlocks(blocks("a", "t1", 1, 4, t0)))
	n.mustApply(addBlocks(blocks("b", "t1", 2, 4, t0)))
	seq := uint64(0)
	pollW := func(updates ...ck.StatusUpdate) *ck.PollResponse {
		seq++
		return n.poll(&ck.PollRequest{WorkerID: "w1", Seq: seq, FreeSlots: 1, Updates: updates})
	}
	var job ck.JobReply
	var resp *ck.PollResponse
	for range 2 {
		resp = pollW()
		require.Len(t, resp.Jobs, 1)
		job = resp.Jobs[0]
		seq++
		resp = n.poll(&ck.PollRequest{WorkerID: "w1", Seq: seq, FreeSlots: 1, Updates: []ck.StatusUpdate{{Job: job.Job, Token: job.Token, Status: ck.ReportFailure, Reason: "boom"}}})
		require.Equal(t, ck.OutcomeAccepted, resp.Jobs[0].Outcome)
	}
	// The second failure reached the limit: the job was excluded, and the
	// slot it freed went to the other shard's job, which needed room in the
	// queue (limit 1): the excluded job was evicted, in the same poll.
	require.Len(t, resp.Jobs, 2)
	require.Equal(t, ck.OutcomeAssigned, resp.Jobs[1].Outcome)
	require.NotEqual(t, job.Job, resp.Jobs[1].Job)
	_, _, ok := n.f.Job(job.Job)
	require.False(t, ok)
	require.Equal(t, uint64(1), n.f.Stats().Scheduler.Counters.Evicted)
	q, _ := n.f.Quarantined("", 0)
	require.Len(t, q, 4)
	require.Equal(t, "excluded after 2 failures (last: boom), evicted from a full queue", q[0].Reason)
	ids := make([]string, len(q))
	for i := range q {
		ids[i] = q[i].ID
	}
	res := n.mustApply(&raftfsm.Command{Operator: &raftfsm.Operator{Action: raftfsm.OpRequeue, Blocks: ids}})
	require.Equal(t, 4, res.Count)
	q, _ = n.f.Quarantined("", 0)
	require.Empty(t, q)
}

func TestPauseAndResume(t *testing.T) {
	n := newNode(t, testConfig())
	n.mustApply(&raftfsm.Command{Operator: &raftfsm.Operator{Action: raftfsm.OpPause, Tenant: "t1"}})
	n.mustApply(addBlocks(blocks("a", "t1", 1, 4, t0)))
	n.mustApply(addBlocks(blocks("b", "t2", 1, 4, t0)))
	resp := n.poll(&ck.PollRequest{WorkerID: "w1", Seq: 1, FreeSlots: 4})
	require.Len(t, resp.Jobs, 1)
	require.Equal(t, "t2", resp.Jobs[0].Plan.Tenant)
	n.mustApply(&raftfsm.Command{Operator: &raftfsm.Operator{Action: raftfsm.OpResume, Tenant: "t1"}})
	resp = n.poll(&ck.PollRequest{WorkerID: "w1", Seq: 2, FreeSlots: 4})
	require.Len(t, resp.Jobs, 1)
	require.Equal(t, "t1", resp.Jobs[0].Plan.Tenant)
}

func TestTwoCommitMode(t *testing.T) {
	n := newNode(t, testConfig())
	n.mustApply(addBlocks(blocks("a", "t1", 1, 4, t0)))
	n.mustApply(&raftfsm.Command{PreparePoll: &raftfsm.PreparePoll{WorkerID: "w1", Seq: 1}})
	prepIndex := n.index
	cmd, err := n.f.Prepare(&ck.PollRequest{WorkerID: "w1", Seq: 1, FreeSlots: 1}, n.now)
	require.NoError(t, err)
	cmd.Poll.Update.TokenIndex = prepIndex
	res := n.mustApply(cmd)
	require.Len(t, res.Poll.Jobs, 1)
	require.Equal(t, prepIndex, uint64(res.Poll.Jobs[0].Token))
}

func TestSnapshotRestore(t *testing.T) {
	n := newNode(t, testConfig())
	n.mustApply(addBlocks(blocks("a", "t1", 1, 6, t0)))
	n.poll(&ck.PollRequest{WorkerID: "w1", Seq: 1, FreeSlots: 1})
	snap := n.snapshot()

	r, err := raftfsm.Restore(bytes.NewReader(snap))
	require.NoError(t, err)
	var again bytes.Buffer
	require.NoError(t, r.Snapshot(&again))
	require.Equal(t, snap, again.Bytes())

	capt, err := n.f.Capture()
	require.NoError(t, err)
	n.mustApply(addBlocks(blocks("b", "t1", 1, 3, t0))) // after the capture
	var cb bytes.Buffer
	require.NoError(t, capt.Snapshot(&cb))
	require.Equal(t, snap, cb.Bytes(), "a capture writes the state it was taken on")

	// A restored replica applies the rest of the log like the original.
	m := &node{t: t, f: r, index: n.index - 1, now: n.now}
	_, err = m.f.Apply(ck.Entry{Index: n.index, Term: 1, Time: n.now}, n.log[len(n.log)-1])
	require.NoError(t, err)
	require.Equal(t, n.snapshot(), m.snapshot())

	// Corrupt or truncated snapshots are refused and leave the state intact.
	cur := n.snapshot()
	snaptest.RejectsDamage(t, snap, 7, n.f.Restore)
	require.Equal(t, cur, n.snapshot())
}

// Replicas with different local options apply the same entries to the same
// bytes.
func TestVersionSkewLocalOptions(t *testing.T) {
	a := newNode(t, testConfig())
	b := newNode(t, testConfig(), raftfsm.WithCleanupAfter(time.Hour), raftfsm.WithCleanupBatch(1))
	a.mustApply(addBlocks(blocks("a", "t1", 1, 8, t0)))
	a.poll(&ck.PollRequest{WorkerID: "w1", Seq: 1, FreeSlots: 3})
	a.advance(time.Minute)
	a.mustApply(&raftfsm.Command{TookOffice: &raftfsm.TookOffice{}})
	for i, data := range a.log {
		_, err := b.f.Apply(ck.Entry{Index: uint64(i + 1), Term: 1, Time: t0}, data)
		require.NoError(t, err)
	}
	require.Equal(t, a.snapshot(), b.snapshot())
}

func TestExcludedJobReturnsTombstones(t *testing.T) {
	cfg := testConfig()
	cfg.Scheduler.MaxFailures = 1
	n := newNode(t, cfg, raftfsm.WithCleanupAfter(time.Hour))
	n.mustApply(addBlocks(blocks("a", "t1", 1, 4, t0)))
	a := n.poll(&ck.PollRequest{WorkerID: "w1", Seq: 1, FreeSlots: 1}).Jobs[0]
	n.poll(&ck.PollRequest{WorkerID: "w1", Seq: 2, Updates: []ck.StatusUpdate{{Job: a.Job, Token: a.Token, Status: ck.ReportSuccess, Outputs: n.outputs(a.Plan, uint64(a.Token))}}})
	n.advance(cfg.Index.CleanupDelay + time.Second)
	n.mustApply(addBlocks(blocks("b", "t1", 2, 4, t0)))
	b := n.poll(&ck.PollRequest{WorkerID: "w1", Seq: 3, FreeSlots: 1}).Jobs[0]
	require.Len(t, b.Plan.Tombstones, cfg.Planner.TombstonesPerJob, "the new job carries released tombstones")
	view := n.f.Index()
	require.Len(t, view.Held(b.Job), cfg.Planner.TombstonesPerJob)
	view.Close()
	resp := n.poll(&ck.PollRequest{WorkerID: "w1", Seq: 4, Updates: []ck.StatusUpdate{{Job: b.Job, Token: b.Token, Status: ck.ReportFailure}}})
	require.Equal(t, ck.OutcomeAccepted, resp.Jobs[0].Outcome)
	js, _, ok := n.f.Job(b.Job)
	require.True(t, ok)
	require.Equal(t, ck.StatusExcluded, js.Status)
	view = n.f.Index()
	defer view.Close()
	require.Empty(t, view.Held(b.Job), "an excluded job holds no tombstones")
	for _, ts := range b.Plan.Tombstones {
		info, ok := view.Tombstone(ts)
		require.True(t, ok)
		require.Empty(t, info.Job)
	}
}

// A cleanup-only attempt writes nothing, so ending it orphans nothing: no
// self-feeding chain of prefix tombstones.
func TestCleanupOnlyAttemptLeavesNoOrphan(t *testing.T) {
	cfg := testConfig()
	cfg.Planner.TombstonesPerJob = 0
	cfg.Planner.Levels[1].MaxAge = 0
	n := newNode(t, cfg, raftfsm.WithCleanupAfter(0))
	n.mustApply(addBlocks(blocks("a", "t1", 1, 4, t0)))
	a := n.poll(&ck.PollRequest{WorkerID: "w1", Seq: 1, FreeSlots: 1}).Jobs[0]
	n.poll(&ck.PollRequest{WorkerID: "w1", Seq: 2, Updates: []ck.StatusUpdate{{Job: a.Job, Token: a.Token, Status: ck.ReportSuccess, Outputs: n.outputs(a.Plan, uint64(a.Token))}}})
	n.advance(cfg.Index.CleanupDelay + time.Second)
	c := n.poll(&ck.PollRequest{WorkerID: "w2", Seq: 1, FreeSlots: 1}).Jobs[0]
	require.True(t, c.Plan.CleanupOnly())
	n.advance(time.Minute) // the lease expires; the job is reassigned
	c2 := n.poll(&ck.PollRequest{WorkerID: "w3", Seq: 1, FreeSlots: 1}).Jobs[0]
	require.Equal(t, c.Job, c2.Job)
	view := n.f.Index()
	defer view.Close()
	for _, ti := range view.Tombstones(ck.Tombstone{}, 0) {
		require.Equal(t, ck.TombstoneBlock, ti.Kind, "unexpected %s", ti.Tombstone)
	}
}

// Regression test of simulation finding F3: a cleanup-only job's name
// depends on when it was planned, so the same tombstones planned again
// later (after an earlier job for them was forgotten) get a new name.
func TestCleanupNamesDoNotRecur(t *testing.T) {
	cfg := testConfig()
	cfg.Planner.TombstonesPerJob = 0
	cfg.Planner.Levels[1].MaxAge = 0
	n := newNode(t, cfg, raftfsm.WithCleanupAfter(0))
	n.mustApply(addBlocks(blocks("a", "t1", 1, 4, t0)))
	a := n.poll(&ck.PollRequest{WorkerID: "w1", Seq: 1, FreeSlots: 1}).Jobs[0]
	n.poll(&ck.PollRequest{WorkerID: "w1", Seq: 2, Updates: []ck.StatusUpdate{{Job: a.Job, Token: a.Token, Status: ck.ReportSuccess, Outputs: n.outputs(a.Plan, uint64(a.Token))}}})
	n.advance(cfg.Index.CleanupDelay + time.Second)
	first, err := n.f.Prepare(&ck.PollRequest{WorkerID: "w2", Seq: 1, FreeSlots: 1}, n.now)
	require.NoError(t, err)
	later, err := n.f.Prepare(&ck.PollRequest{WorkerID: "w2", Seq: 1, FreeSlots: 1}, n.now+int64(time.Hour))
	require.NoError(t, err)
	p1, p2 := first.Poll.Update.Changes[0].Plan, later.Poll.Update.Changes[0].Plan
	require.True(t, p1.CleanupOnly())
	require.Equal(t, p1.Tombstones, p2.Tombstones, "the same tombstones")
	require.NotEqual(t, p1.Name, p2.Name)
}

// Simulation finding F4: a backlog of released tombstones drains as fast
// as the workers' capacity allows, several cleanup-only jobs per poll.
func TestCleanupFillsCapacity(t *testing.T) {
	cfg := testConfig()
	cfg.Planner.TombstonesPerJob = 0
	cfg.Planner.Levels[1].MaxAge = 0
	n := newNode(t, cfg, raftfsm.WithCleanupAfter(0), raftfsm.WithCleanupBatch(2))
	n.mustApply(addBlocks(blocks("a", "t1", 1, 4, t0)))
	a := n.poll(&ck.PollRequest{WorkerID: "w1", Seq: 1, FreeSlots: 1}).Jobs[0]
	n.poll(&ck.PollRequest{WorkerID: "w1", Seq: 2, Updates: []ck.StatusUpdate{{Job: a.Job, Token: a.Token, Status: ck.ReportSuccess, Outputs: n.outputs(a.Plan, uint64(a.Token))}}})
	n.advance(cfg.Index.CleanupDelay + time.Second)
	resp := n.poll(&ck.PollRequest{WorkerID: "w2", Seq: 1, FreeSlots: 3})
	require.Len(t, resp.Jobs, 2, "four tombstones, two per job")
	seen := map[ck.Tombstone]bool{}
	for _, j := range resp.Jobs {
		require.True(t, j.Plan.CleanupOnly())
		require.Len(t, j.Plan.Tombstones, 2)
		for _, ts := range j.Plan.Tombstones {
			require.False(t, seen[ts], "tombstone %s in two jobs", ts)
			seen[ts] = true
		}
	}
}

// TestCleanupNotStarvedByCompaction is simulation finding F5: a fleet
// kept busy by compaction never had capacity left for cleanup-only jobs,
// so released tombstones waited as long as the compaction backlog lasted.
// Once they have waited WithCleanupUrgentAfter, cleanup goes first.
func TestCleanupNotStarvedByCompaction(t *testing.T) {
	cfg := testConfig()
	cfg.Planner.TombstonesPerJob = 0 // no compaction job carries them
	const urgent = 10 * time.Minute
	n := newNode(t, cfg, raftfsm.WithCleanupAfter(0), raftfsm.WithCleanupUrgentAfter(urgent))
	n.mustApply(addBlocks(blocks("a", "t1", 1, 4, t0)))
	a := n.poll(&ck.PollRequest{WorkerID: "w1", Seq: 1, FreeSlots: 1}).Jobs[0]
	n.poll(&ck.PollRequest{WorkerID: "w1", Seq: 2, Updates: []ck.StatusUpdate{{Job: a.Job, Token: a.Token, Status: ck.ReportSuccess, Outputs: n.outputs(a.Plan, uint64(a.Token))}}})
	n.advance(cfg.Index.CleanupDelay + time.Second)

	// Released, not yet urgent: the one free slot goes to compaction.
	n.mustApply(addBlocks(blocks("b", "t2", 1, 4, t0)))
	b := n.poll(&ck.PollRequest{WorkerID: "w2", Seq: 1, FreeSlots: 1}).Jobs
	require.Len(t, b, 1)
	require.False(t, b[0].Plan.CleanupOnly(), "compaction first while cleanup can wait")

	// Urgent: with compaction still waiting, the slot goes to cleanup.
	n.advance(urgent)
	n.mustApply(addBlocks(blocks("c", "t3", 1, 4, t0)))
	c := n.poll(&ck.PollRequest{WorkerID: "w3", Seq: 1, FreeSlots: 1}).Jobs
	require.Len(t, c, 1)
	require.True(t, c[0].Plan.CleanupOnly(), "cleanup waited %s: it goes first", urgent)
	require.Len(t, c[0].Plan.Tombstones, 4, "the four replaced blocks")
	// And the next slot goes to the compaction that waited.
	d := n.poll(&ck.PollRequest{WorkerID: "w4", Seq: 1, FreeSlots: 1}).Jobs
	require.Len(t, d, 1)
	require.False(t, d[0].Plan.CleanupOnly())
}
