package prom_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/index"
	"github.com/compactkit/compactkit/metrics/prom"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/scheduler"
)

// scenario drives a state machine through a compaction: tenant t1 gets a
// full level-0 batch (4 blocks of 100 B), tenant t2 two blocks of 50 B;
// worker w1 takes t1's job and renews it 10 s later. It returns the node
// and the job as assigned.
func scenario(t *testing.T) (*node, ck.JobReply) {
	n := newNode(t)
	n.addBlocks(blocks("a", "t1", 1, 4, 100)...)
	n.addBlocks(blocks("b", "t2", 1, 2, 50)...)
	resp := n.poll(&ck.PollRequest{WorkerID: "w1", Seq: 1, FreeSlots: 1})
	require.Len(t, resp.Jobs, 1)
	job := resp.Jobs[0]
	require.Equal(t, ck.OutcomeAssigned, job.Outcome)
	require.Equal(t, "t1", job.Plan.Tenant)
	n.advance(10 * time.Second)
	resp = n.poll(&ck.PollRequest{WorkerID: "w1", Seq: 2, Updates: []ck.StatusUpdate{{Job: job.Job, Token: job.Token, Status: ck.ReportInProgress}}})
	require.Equal(t, ck.OutcomeRenewed, resp.Jobs[0].Outcome)
	return n, job
}

func TestFSMCollectorJobInProgress(t *testing.T) {
	n, _ := scenario(t)
	_, mfs := gather(t, prom.NewFSMCollector(n.f.Stats))

	// State machine.
	require.Equal(t, 4.0, value(t, mfs, "compactkit_fsm_last_applied_index"))
	require.Equal(t, 1.0, value(t, mfs, "compactkit_fsm_last_applied_term"))
	require.Equal(t, float64(t0)/1e9+10, value(t, mfs, "compactkit_fsm_log_timestamp_seconds"))
	require.Equal(t, 1.0, value(t, mfs, "compactkit_fsm_poll_log_workers"))
	require.Equal(t, float64(n.f.ClusterVersion()), value(t, mfs, "compactkit_fsm_cluster_version"))

	// Planner: t2's two blocks wait at level 0, t1's four are claimed.
	require.Equal(t, 2.0, value(t, mfs, "compactkit_planner_queued_blocks", "level=0"))
	require.Equal(t, 1.0, value(t, mfs, "compactkit_planner_keys", "level=0"))
	require.Equal(t, 4.0, value(t, mfs, "compactkit_planner_claimed_blocks", "level=0"))
	require.Equal(t, 0.0, value(t, mfs, "compactkit_planner_ready_batches", "level=0"), "t2's batch is neither full nor 36 s old")
	require.Equal(t, 10.0, value(t, mfs, "compactkit_planner_compaction_lag_seconds", "level=0"))
	require.Equal(t, 20.0, value(t, mfs, "compactkit_planner_compaction_debt_block_seconds", "level=0"), "two blocks waiting 10 s each")
	require.Equal(t, 0.0, value(t, mfs, "compactkit_planner_compaction_lag_seconds", "level=1"))
	require.Equal(t, 0.0, value(t, mfs, "compactkit_planner_quarantined_blocks", "level=2"))
	require.Equal(t, 1.0, value(t, mfs, "compactkit_planner_claiming_jobs"))
	require.Equal(t, 6.0, value(t, mfs, "compactkit_planner_blocks_enqueued_total"))
	require.Equal(t, 1.0, value(t, mfs, "compactkit_planner_jobs_claimed_total"))

	// Scheduler: one job in progress at level 0; idle levels read zero.
	require.Equal(t, 1.0, value(t, mfs, "compactkit_scheduler_jobs", "level=0", "status=in_progress"))
	require.Equal(t, 0.0, value(t, mfs, "compactkit_scheduler_jobs", "level=0", "status=unassigned"))
	require.Equal(t, 0.0, value(t, mfs, "compactkit_scheduler_jobs", "level=2", "status=excluded"))
	require.Equal(t, 0.0, value(t, mfs, "compactkit_scheduler_paused_jobs", "level=0"))
	require.Equal(t, 1.0, value(t, mfs, "compactkit_scheduler_jobs_added_total"))
	require.Equal(t, 1.0, value(t, mfs, "compactkit_scheduler_jobs_assigned_total"))
	require.Equal(t, 1.0, value(t, mfs, "compactkit_scheduler_leases_renewed_total"))
	require.Equal(t, 0.0, value(t, mfs, "compactkit_scheduler_jobs_completed_total"))

	// Index: per tenant and level.
	require.Equal(t, 4.0, value(t, mfs, "compactkit_index_live_blocks", "level=0", "tenant=t1"))
	require.Equal(t, 400.0, value(t, mfs, "compactkit_index_live_bytes", "level=0", "tenant=t1"))
	require.Equal(t, 2.0, value(t, mfs, "compactkit_index_live_blocks", "level=0", "tenant=t2"))
	require.Equal(t, 100.0, value(t, mfs, "compactkit_index_live_bytes", "level=0", "tenant=t2"))
	require.Equal(t, 0.0, value(t, mfs, "compactkit_index_tombstones", "state=pending"))
	require.Equal(t, 0.0, value(t, mfs, "compactkit_index_replacements_total", "result=applied"))
}

func TestFSMCollectorAfterCompletion(t *testing.T) {
	n, job := scenario(t)
	out := n.output(job.Plan, job.Token)
	resp := n.poll(&ck.PollRequest{WorkerID: "w1", Seq: 3, Updates: []ck.StatusUpdate{{Job: job.Job, Token: job.Token, Status: ck.ReportSuccess, Outputs: []ck.BlockMeta{out}}}})
	require.Equal(t, ck.OutcomeCompleted, resp.Jobs[0].Outcome)
	// 30 s later an idle poll from a second worker, and a block of t3:
	// t2's batch is now older than level 0's 36 s and ready.
	n.advance(30 * time.Second)
	n.poll(&ck.PollRequest{WorkerID: "w2", Seq: 1})
	n.addBlocks(blocks("c", "t3", 1, 1, 10)...)
	// Re-adding one of t2's blocks is refused as a duplicate.
	res := n.tryAddBlocks(blocks("b", "t2", 1, 1, 50)...)
	require.Len(t, res, 1)
	require.Error(t, res[0].Err)

	c := prom.NewFSMCollector(n.f.Stats)
	_, mfs := gather(t, c)
	require.Equal(t, 2.0, value(t, mfs, "compactkit_fsm_poll_log_workers"))

	require.Equal(t, 1.0, value(t, mfs, "compactkit_planner_ready_batches", "level=0"))
	require.Equal(t, 40.0, value(t, mfs, "compactkit_planner_compaction_lag_seconds", "level=0"))
	require.Equal(t, 80.0, value(t, mfs, "compactkit_planner_compaction_debt_block_seconds", "level=0"))
	require.Equal(t, 3.0, value(t, mfs, "compactkit_planner_queued_blocks", "level=0"))
	require.Equal(t, 1.0, value(t, mfs, "compactkit_planner_queued_blocks", "level=1"), "the output waits one level up")
	require.Equal(t, 30.0, value(t, mfs, "compactkit_planner_compaction_lag_seconds", "level=1"))
	require.Equal(t, 0.0, value(t, mfs, "compactkit_planner_claimed_blocks", "level=0"))
	require.Equal(t, 1.0, value(t, mfs, "compactkit_planner_jobs_completed_total"))

	require.Equal(t, 0.0, value(t, mfs, "compactkit_scheduler_jobs", "level=0", "status=in_progress"))
	require.Equal(t, 1.0, value(t, mfs, "compactkit_scheduler_jobs_completed_total"))
	require.Equal(t, 1.0, value(t, mfs, "compactkit_scheduler_remembered_completions"))

	require.Equal(t, 1.0, value(t, mfs, "compactkit_index_live_blocks", "level=1", "tenant=t1"))
	require.Equal(t, 400.0, value(t, mfs, "compactkit_index_live_bytes", "level=1", "tenant=t1"))
	require.Equal(t, 1.0, value(t, mfs, "compactkit_index_replacements_total", "result=applied"))
	require.Equal(t, 0.0, value(t, mfs, "compactkit_index_replacements_total", "result=refused"))
	require.Equal(t, 4.0, value(t, mfs, "compactkit_index_tombstones", "state=pending"), "the sources await the cleanup delay")
	require.Equal(t, 0.0, value(t, mfs, "compactkit_index_tombstones", "state=attached"))
	require.Equal(t, 1.0, value(t, mfs, "compactkit_index_duplicate_blocks_refused_total"))
	require.Equal(t, 0.0, value(t, mfs, "compactkit_index_orphans"))

	// The headline signals, in the exposition format.
	want := `
# HELP compactkit_planner_compaction_debt_block_seconds Compaction debt: the sum over the level's queued blocks of the time each has waited, in block-seconds. Grows with both backlog and age: the autoscaling signal.
# TYPE compactkit_planner_compaction_debt_block_seconds gauge
compactkit_planner_compaction_debt_block_seconds{level="0"} 80
compactkit_planner_compaction_debt_block_seconds{level="1"} 30
compactkit_planner_compaction_debt_block_seconds{level="2"} 0
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want), "compactkit_planner_compaction_debt_block_seconds"))
}

// Lag and debt are figures at the state machine's log time even when the
// entries since the planner's last change left the planner alone (the
// renewal in scenario), and at the clock's time with WithClock.
func TestFSMCollectorLagAndDebtClock(t *testing.T) {
	n, _ := scenario(t)
	st := n.f.Stats()
	require.Equal(t, st.Now, st.Planner.Now, "raftfsm judges the planner's figures at its own time")

	at := time.Unix(0, t0).Add(100 * time.Second)
	_, mfs := gather(t, prom.NewFSMCollector(n.f.Stats, prom.WithClock(func() time.Time { return at })))
	require.Equal(t, 100.0, value(t, mfs, "compactkit_planner_compaction_lag_seconds", "level=0"))
	require.Equal(t, 200.0, value(t, mfs, "compactkit_planner_compaction_debt_block_seconds", "level=0"))
	require.Equal(t, 0.0, value(t, mfs, "compactkit_planner_compaction_lag_seconds", "level=1"), "nothing queued: no lag")

	// A clock behind the log time is ignored.
	at = time.Unix(0, t0)
	_, mfs = gather(t, prom.NewFSMCollector(n.f.Stats, prom.WithClock(func() time.Time { return at })))
	require.Equal(t, 10.0, value(t, mfs, "compactkit_planner_compaction_lag_seconds", "level=0"))
	require.Equal(t, 20.0, value(t, mfs, "compactkit_planner_compaction_debt_block_seconds", "level=0"))
}

func TestFSMCollectorWithoutTenants(t *testing.T) {
	n, _ := scenario(t)
	n.addBlocks(blocks("c", "t3", 2, 1, 7)...)
	reg, mfs := gather(t, prom.NewFSMCollector(n.f.Stats, prom.WithoutTenants()))
	require.Equal(t, 7.0, value(t, mfs, "compactkit_index_live_blocks", "level=0"))
	require.Equal(t, 507.0, value(t, mfs, "compactkit_index_live_bytes", "level=0"))
	count, err := testutil.GatherAndCount(reg, "compactkit_index_live_blocks", "compactkit_index_live_bytes")
	require.NoError(t, err)
	require.Equal(t, 2, count, "one series per level and metric")

	// With tenants, one series per tenant and level.
	reg, _ = gather(t, prom.NewFSMCollector(n.f.Stats))
	count, err = testutil.GatherAndCount(reg, "compactkit_index_live_blocks", "compactkit_index_live_bytes")
	require.NoError(t, err)
	require.Equal(t, 6, count)
}

func TestFSMCollectorEmptyStateMachine(t *testing.T) {
	f, err := raftfsm.New(raftfsm.DefaultConfig())
	require.NoError(t, err)
	reg, mfs := gather(t, prom.NewFSMCollector(f.Stats))
	require.Equal(t, 0.0, value(t, mfs, "compactkit_fsm_last_applied_index"))
	require.Equal(t, 0.0, value(t, mfs, "compactkit_planner_compaction_lag_seconds", "level=0"))
	// Every level below the final one has its scheduler series.
	count, err := testutil.GatherAndCount(reg, "compactkit_scheduler_jobs")
	require.NoError(t, err)
	require.Equal(t, 3*3, count)
	// No live block: no index series.
	_, ok := mfs["compactkit_index_live_blocks"]
	require.False(t, ok)
}

func TestFSMCollectorLint(t *testing.T) {
	n, _ := scenario(t)
	for _, c := range []prometheus.Collector{
		prom.NewFSMCollector(n.f.Stats),
		prom.NewFSMCollector(n.f.Stats, prom.WithoutTenants(), prom.WithConstLabels(prometheus.Labels{"replica": "a"})),
	} {
		problems, err := testutil.CollectAndLint(c)
		require.NoError(t, err)
		require.Empty(t, problems)
	}
}

func TestFSMCollectorReplicasOnOneRegistry(t *testing.T) {
	a, _ := scenario(t)
	b := newNode(t)
	_, mfs := gather(t,
		prom.NewFSMCollector(a.f.Stats, prom.WithConstLabels(prometheus.Labels{"replica": "a"})),
		prom.NewFSMCollector(b.f.Stats, prom.WithConstLabels(prometheus.Labels{"replica": "b"})),
	)
	require.Equal(t, 4.0, value(t, mfs, "compactkit_fsm_last_applied_index", "replica=a"))
	require.Equal(t, 0.0, value(t, mfs, "compactkit_fsm_last_applied_index", "replica=b"))
}

func TestFSMCollectorBadInput(t *testing.T) {
	// No stats function: the scrape fails, nothing panics.
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(prom.NewFSMCollector(nil)))
	_, err := reg.Gather()
	require.ErrorIs(t, err, prom.ErrNoStats)

	// A constant label that clashes with a collector's own label is
	// refused at registration.
	reg = prometheus.NewPedanticRegistry()
	err = reg.Register(prom.NewFSMCollector(func() raftfsm.Stats { return raftfsm.Stats{} }, prom.WithConstLabels(prometheus.Labels{"level": "x"})))
	require.Error(t, err)

	// A tenant that is not valid UTF-8 fails the scrape, nothing panics.
	reg = prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(prom.NewFSMCollector(func() raftfsm.Stats {
		var st raftfsm.Stats
		st.Index.Levels = append(st.Index.Levels, indexLevel("\xff", 0, 1, 1))
		return st
	})))
	_, err = reg.Gather()
	require.Error(t, err)
}

func TestFSMCollectorMergesRepeatedIndexLevels(t *testing.T) {
	st := raftfsm.Stats{}
	st.Index.Levels = []index.LevelStats{indexLevel("t", 1, 1, 10), indexLevel("t", 1, 2, 20), indexLevel("u", 1, 4, 40)}
	_, mfs := gather(t, prom.NewFSMCollector(func() raftfsm.Stats { return st }))
	require.Equal(t, 3.0, value(t, mfs, "compactkit_index_live_blocks", "level=1", "tenant=t"))
	require.Equal(t, 30.0, value(t, mfs, "compactkit_index_live_bytes", "level=1", "tenant=t"))
	_, mfs = gather(t, prom.NewFSMCollector(func() raftfsm.Stats { return st }, prom.WithoutTenants()))
	require.Equal(t, 7.0, value(t, mfs, "compactkit_index_live_blocks", "level=1"))
	require.Equal(t, 70.0, value(t, mfs, "compactkit_index_live_bytes", "level=1"))
}

// TestFSMCollectorSkippedChanges: every skip reason has its series, named
// as the package documentation lists them, with the state machine's count.
func TestFSMCollectorSkippedChanges(t *testing.T) {
	labels := []string{"stale_entry", "invalid", "stale_version", "unknown_job", "job_exists",
		"completed_recently", "queue_full", "paused", "excluded", "lease_not_expired",
		"at_failure_limit", "token_not_newer", "no_expired_lease", "below_failure_limit",
		"no_lease", "not_excluded", "queue_below_limit", "not_admissible", "no_tombstone_left", "window_closed", "at_cap"}
	require.Len(t, labels, int(scheduler.NumSkips)-1, "a reason without a documented label")
	var st raftfsm.Stats
	for r := range st.SkippedChanges {
		st.SkippedChanges[r] = uint64(10 * r)
	}
	reg, mfs := gather(t, prom.NewFSMCollector(func() raftfsm.Stats { return st }))
	for i, l := range labels {
		require.Equal(t, float64(10*(i+1)), value(t, mfs, "compactkit_fsm_changes_skipped_total", "reason="+l), l)
	}
	count, err := testutil.GatherAndCount(reg, "compactkit_fsm_changes_skipped_total")
	require.NoError(t, err)
	require.Equal(t, len(labels), count, "no series for applied changes")

	// On a state machine: two polls prepared on the same state plan the
	// same job; the second, applied after the first, skips both changes.
	n := newNode(t)
	n.addBlocks(blocks("a", "t1", 1, 4, 100)...)
	first, err := n.f.Prepare(&ck.PollRequest{WorkerID: "w1", Seq: 1, FreeSlots: 1}, n.now)
	require.NoError(t, err)
	second, err := n.f.Prepare(&ck.PollRequest{WorkerID: "w2", Seq: 1, FreeSlots: 1}, n.now)
	require.NoError(t, err)
	n.apply(first)
	n.apply(second)
	_, mfs = gather(t, prom.NewFSMCollector(n.f.Stats))
	require.Equal(t, 1.0, value(t, mfs, "compactkit_fsm_changes_skipped_total", "reason=job_exists"))
	require.Equal(t, 1.0, value(t, mfs, "compactkit_fsm_changes_skipped_total", "reason=stale_version"))
	require.Equal(t, 0.0, value(t, mfs, "compactkit_fsm_changes_skipped_total", "reason=no_lease"))
	require.Equal(t, 1.0, value(t, mfs, "compactkit_scheduler_changes_skipped_total"), "the scheduler saw only the assign")
}
