package prom

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/compactkit/compactkit/index"
	"github.com/compactkit/compactkit/planner"
	"github.com/compactkit/compactkit/policy"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/scheduler"
)

// namespace is the prefix of every metric name the collectors export.
const namespace = "compactkit"

// ErrNoStats is the error a collector reports at scrape time (making the
// registry's Gather fail) when it was built with a nil stats function.
var ErrNoStats = errors.New("prom: collector has no stats function")

// counter is a counter read from a field of a component's counters.
type counter[T any] struct {
	desc *prometheus.Desc
	get  func(T) uint64
}

// fsmCollector is the collector NewFSMCollector returns.
type fsmCollector struct {
	stats     func() raftfsm.Stats
	noTenants bool
	clock     func() time.Time

	// State machine.
	lastApplied, term, logTime, clusterVersion, failed, workers, broken *prometheus.Desc
	skipped                                                             *prometheus.Desc

	// Planner, per level, then totals and counters.
	plKeys, plQueued, plReady, plClaimed, plQuarantined, plLag, plDebt *prometheus.Desc
	plJobs                                                             *prometheus.Desc
	plCounters                                                         []counter[planner.Counters]

	// Scheduler.
	schJobs, schPaused, schCompletions, schPauseRules *prometheus.Desc
	schCounters                                       []counter[scheduler.Counters]

	// Index.
	ixBlocks, ixBytes, ixTombstones, ixOrphans, ixReplacements, ixDuplicates *prometheus.Desc
	ixDeletions, ixResults                                                   *prometheus.Desc

	// Policies: backpressure grades and staleness alarms.
	pressure, shardPressure, staleAlarm *prometheus.Desc
}

// NewFSMCollector returns a collector for a compactkit state machine
// (raftfsm.FSM) and its components: the planner, the scheduler and the
// index. It calls stats at every scrape, reads one snapshot and exports
// what it returns; it starts no goroutine and registers itself nowhere. See
// the package documentation for the metrics it exports. stats is typically the method value of the state
// machine: NewFSMCollector(fsm.Stats). It must be safe to call concurrently
// with the state machine's work, as raftfsm.FSM.Stats is.
//
// Options: WithConstLabels adds fixed labels, WithoutTenants aggregates the
// per-tenant index series into per-level ones, WithClock measures lag and
// debt by a clock instead of the log time.
func NewFSMCollector(stats func() raftfsm.Stats, opts ...Option) prometheus.Collector {
	o := buildOptions(opts)
	cl := o.constLabels
	d := func(sub, name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(namespace, sub, name), help, labels, cl)
	}
	c := &fsmCollector{stats: stats, noTenants: o.noTenants, clock: o.clock}

	c.lastApplied = d("fsm", "last_applied_index", "Log index of the last entry the state machine applied.")
	c.term = d("fsm", "last_applied_term", "Consensus term of the last entry the state machine applied.")
	c.logTime = d("fsm", "log_timestamp_seconds", "Effective log time of the state machine (the proposer's clock, never going backwards), in Unix seconds. time() minus this is how far the replica's clock lags.")
	c.clusterVersion = d("fsm", "cluster_version", "Command version the replicated cluster version allows the leader to write.")
	c.failed = d("fsm", "failed", "1 if the replica stopped on an entry it cannot trust (a corrupt command) and applies nothing until a snapshot is restored, else 0.")
	c.workers = d("fsm", "poll_log_workers", "Workers whose latest poll response is recorded in the poll log (workers seen recently).")
	c.broken = d("fsm", "broken_invariants_total", "Invariants of Apply this replica found broken since it started or restored a snapshot (each is logged). Anything above 0 is a bug to report.")
	c.skipped = d("fsm", "changes_skipped_total", "Changes of polls not applied because their precondition no longer held, by reason (stale_version, no_lease, queue_full, ...), since the replica started or restored a snapshot. Includes adds the state machine refused before the scheduler saw them.", "reason")

	c.plKeys = d("planner", "keys", "Keys (tenant, shard, level) with queued blocks, per level.", "level")
	c.plQueued = d("planner", "queued_blocks", "Blocks queued for compaction, per level.", "level")
	c.plReady = d("planner", "ready_batches", "Estimated number of jobs that could be planned now, per level: the measure the ready-batch backpressure thresholds of a policy (slow_ready_batches, stop_ready_batches) grade per tenant.", "level")
	c.plClaimed = d("planner", "claimed_blocks", "Blocks claimed by compaction jobs, per level.", "level")
	c.plQuarantined = d("planner", "quarantined_blocks", "Blocks quarantined (their job was evicted after repeated failures), per level; they wait for an operator to requeue them.", "level")
	c.plLag = d("planner", "compaction_lag_seconds", "Compaction lag: how long the oldest queued block of the level has waited. An autoscaling signal: scale workers up while it grows.", "level")
	c.plDebt = d("planner", "compaction_debt_block_seconds", "Compaction debt: the sum over the level's queued blocks of the time each has waited, in block-seconds. Grows with both backlog and age: the autoscaling signal.", "level")
	c.plJobs = d("planner", "claiming_jobs", "Jobs that hold claims on queued blocks.")
	c.plCounters = []counter[planner.Counters]{
		{d("planner", "blocks_enqueued_total", "Blocks queued for compaction."), func(x planner.Counters) uint64 { return x.Enqueued }},
		{d("planner", "jobs_claimed_total", "Jobs that claimed their source blocks."), func(x planner.Counters) uint64 { return x.Claims }},
		{d("planner", "jobs_completed_total", "Jobs whose claims ended in completion."), func(x planner.Counters) uint64 { return x.Completions }},
		{d("planner", "jobs_returned_total", "Jobs whose claims ended with their sources returned to the queue (cancelled or refused)."), func(x planner.Counters) uint64 { return x.Returns }},
		{d("planner", "blocks_returned_total", "Source blocks returned to the queue."), func(x planner.Counters) uint64 { return x.ReturnedBlocks }},
		{d("planner", "jobs_quarantined_total", "Evicted jobs whose sources were quarantined."), func(x planner.Counters) uint64 { return x.Quarantines }},
		{d("planner", "blocks_quarantined_total", "Blocks quarantined."), func(x planner.Counters) uint64 { return x.QuarantinedBlocks }},
		{d("planner", "blocks_requeued_total", "Quarantined blocks an operator requeued."), func(x planner.Counters) uint64 { return x.Requeued }},
		{d("planner", "blocks_dropped_total", "Blocks removed from the queue or the quarantine by retention."), func(x planner.Counters) uint64 { return x.Dropped }},
		{d("planner", "duplicate_blocks_total", "Blocks that were already queued or quarantined when added again (not added twice)."), func(x planner.Counters) uint64 { return x.Duplicates }},
		{d("planner", "missed_removals_total", "Blocks retention asked to drop that were neither queued, claimed nor quarantined."), func(x planner.Counters) uint64 { return x.MissedRemovals }},
	}

	c.schJobs = d("scheduler", "jobs", "Jobs in the scheduler's queue, per level and stored status (unassigned, in_progress, excluded).", "level", "status")
	c.schPaused = d("scheduler", "paused_jobs", "Jobs (of any status) whose tenant or level is paused, per level.", "level")
	c.schCompletions = d("scheduler", "remembered_completions", "Completions the scheduler remembers to answer retried success reports.")
	c.schPauseRules = d("scheduler", "pause_rules", "Pause rules in force.")
	sc := func(name, help string, get func(scheduler.Counters) uint64) counter[scheduler.Counters] {
		return counter[scheduler.Counters]{d("scheduler", name, help), get}
	}
	c.schCounters = []counter[scheduler.Counters]{
		sc("jobs_added_total", "Jobs created.", func(x scheduler.Counters) uint64 { return x.Added }),
		sc("jobs_assigned_total", "Assignments of unassigned jobs.", func(x scheduler.Counters) uint64 { return x.Assigned }),
		sc("jobs_reassigned_total", "Assignments of in-progress jobs whose lease expired.", func(x scheduler.Counters) uint64 { return x.Reassigned }),
		sc("leases_renewed_total", "Lease renewals.", func(x scheduler.Counters) uint64 { return x.Renewed }),
		sc("jobs_completed_total", "Successful completions.", func(x scheduler.Counters) uint64 { return x.Completed }),
		sc("jobs_failed_total", "Failures reported by workers.", func(x scheduler.Counters) uint64 { return x.Failed }),
		sc("jobs_released_total", "Jobs released by workers (shutting down, or assigned too late to run).", func(x scheduler.Counters) uint64 { return x.Released }),
		sc("jobs_excluded_total", "Jobs that reached the failure limit.", func(x scheduler.Counters) uint64 { return x.Excluded }),
		sc("jobs_evicted_total", "Excluded jobs evicted from a full queue.", func(x scheduler.Counters) uint64 { return x.Evicted }),
		sc("jobs_cancelled_total", "Jobs cancelled by an operator or by retention.", func(x scheduler.Counters) uint64 { return x.Cancelled }),
		sc("jobs_retried_total", "Excluded jobs an operator returned to the queue.", func(x scheduler.Counters) uint64 { return x.Retried }),
		sc("changes_skipped_total", "Changes not applied because their precondition no longer held (stale version, token mismatch, wrong status, limit).", func(x scheduler.Counters) uint64 { return x.Skipped }),
	}

	ixLabels := []string{"tenant", "level"}
	ixScope := "per tenant and level (tenant is empty for multi-tenant level-0 segments)"
	if c.noTenants {
		ixLabels = []string{"level"}
		ixScope = "per level, summed over tenants"
	}
	c.ixBlocks = d("index", "live_blocks", "Live blocks in the index, "+ixScope+".", ixLabels...)
	c.ixBytes = d("index", "live_bytes", "Size of the live blocks in the index, "+ixScope+".", ixLabels...)
	c.ixTombstones = d("index", "tombstones", "Tombstones (objects awaiting deletion) by state: pending (not yet releasable), releasable, attached (held by a job).", "state")
	c.ixOrphans = d("index", "orphans", "Prefix tombstones: outputs of attempts that ended without commit, awaiting deletion (any state).")
	c.ixReplacements = d("index", "replacements_total", "Replacements of compacted sources by their outputs, by result (applied, refused), replays excluded.", "result")
	c.ixDuplicates = d("index", "duplicate_blocks_refused_total", "Blocks refused by the index as duplicates.")
	c.ixDeletions = d("index", "deletion_records", "Remembered deletions (for deduplication).")
	c.ixResults = d("index", "remembered_results", "Remembered replacement results.")

	c.pressure = d("", "tenant_pressure", "Backpressure grade of a tenant whose grade is not ok: 1 slow (ingest should slow down), 2 stop (ingest should hold back what it can). Tenants graded ok have no series.", "tenant")
	c.shardPressure = d("", "shard_pressure", "Backpressure grade of a shard of a tenant whose grade is not ok (the policy's shard thresholds): 1 slow, 2 stop. Shard 4294967295 holds the keys of levels compacted across shards. Shards graded ok have no series.", "tenant", "shard")
	c.staleAlarm = d("", "stale_alarm_seconds", "Seconds since a staleness alarm began, at the log's time: the tenant's level has had a block queued for longer than its policy's stale_after. Only levels in alarm have a series.", "tenant", "level")
	return c
}

// Describe sends the descriptors of every metric the collector exports.
func (c *fsmCollector) Describe(ch chan<- *prometheus.Desc) {
	describe(ch, c.lastApplied, c.term, c.logTime, c.clusterVersion, c.failed, c.workers, c.broken, c.skipped,
		c.plKeys, c.plQueued, c.plReady, c.plClaimed, c.plQuarantined, c.plLag, c.plDebt, c.plJobs,
		c.schJobs, c.schPaused, c.schCompletions, c.schPauseRules,
		c.ixBlocks, c.ixBytes, c.ixTombstones, c.ixOrphans, c.ixReplacements, c.ixDuplicates, c.ixDeletions, c.ixResults,
		c.pressure, c.shardPressure, c.staleAlarm)
	describe(ch, descs(c.plCounters)...)
	describe(ch, descs(c.schCounters)...)
}

// Collect reads one stats snapshot and sends every metric.
func (c *fsmCollector) Collect(ch chan<- prometheus.Metric) {
	collect(ch, c.stats, c.lastApplied, func(st raftfsm.Stats) { c.send(ch, st) })
}

// send sends every metric of the snapshot st.
func (c *fsmCollector) send(ch chan<- prometheus.Metric, st raftfsm.Stats) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		emit(ch, d, prometheus.GaugeValue, v, labels...)
	}
	count := func(d *prometheus.Desc, v uint64, labels ...string) {
		emit(ch, d, prometheus.CounterValue, float64(v), labels...)
	}

	gauge(c.lastApplied, float64(st.LastApplied))
	gauge(c.term, float64(st.Term))
	gauge(c.logTime, float64(st.Now)/1e9)
	gauge(c.clusterVersion, float64(st.ClusterVersion))
	failed := 0.0
	if st.Failed != nil {
		failed = 1
	}
	gauge(c.failed, failed)
	gauge(c.workers, float64(st.Workers))
	ch <- prometheus.MustNewConstMetric(c.broken, prometheus.CounterValue, float64(st.BrokenInvariants))
	// Every reason has its series, zero until a change is skipped for it.
	for r := scheduler.Skip(1); r < scheduler.NumSkips; r++ { // every reason but the zero one, applied
		count(c.skipped, st.SkippedChanges[r], skipLabel(r))
	}

	// Planner.
	at := st.Now
	if c.clock != nil {
		at = max(at, c.clock().UnixNano())
	}
	for _, l := range st.Planner.Levels {
		lv := levelLabel(l.Level)
		lag, debt := lagDebt(l, st.Planner.Now, at)
		gauge(c.plKeys, float64(l.Keys), lv)
		gauge(c.plQueued, float64(l.Queued), lv)
		gauge(c.plReady, float64(l.ReadyBatches), lv)
		gauge(c.plClaimed, float64(l.Claimed), lv)
		gauge(c.plQuarantined, float64(l.Quarantined), lv)
		gauge(c.plLag, lag.Seconds(), lv)
		gauge(c.plDebt, float64(debt), lv)
	}
	gauge(c.plJobs, float64(st.Planner.Jobs))
	for _, x := range c.plCounters {
		count(x.desc, x.get(st.Planner.Counters))
	}

	// Scheduler: every level the planner compacts gets its series (zero
	// when it has no job) so they do not come and go with the queue.
	c.collectScheduler(st, gauge)
	gauge(c.schCompletions, float64(st.Scheduler.Completed))
	gauge(c.schPauseRules, float64(len(st.Scheduler.Paused)))
	for _, x := range c.schCounters {
		count(x.desc, x.get(st.Scheduler.Counters))
	}

	// Index.
	c.collectIndexLevels(st.Index.Levels, gauge)
	ix := st.Index
	gauge(c.ixTombstones, float64(ix.TombstonesPending), "pending")
	gauge(c.ixTombstones, float64(ix.TombstonesReleasable), "releasable")
	gauge(c.ixTombstones, float64(ix.TombstonesAttached), "attached")
	gauge(c.ixOrphans, float64(ix.Orphans))
	count(c.ixReplacements, ix.ReplacementsApplied, "applied")
	count(c.ixReplacements, ix.ReplacementsRefused, "refused")
	count(c.ixDuplicates, ix.DuplicatesRefused)
	gauge(c.ixDeletions, float64(ix.DeletionRecords))
	gauge(c.ixResults, float64(ix.Results))

	c.collectPolicies(st, gauge)
}

// collectPolicies exports the backpressure grades that are not ok and the
// staleness alarms, one series per tenant (and level), the same series
// once even if the stats repeat it (the highest grade, the earliest
// alarm).
func (c *fsmCollector) collectPolicies(st raftfsm.Stats, gauge func(*prometheus.Desc, float64, ...string)) {
	var tenants []string
	grades := make(map[string]policy.Grade, len(st.Pressure))
	for _, p := range st.Pressure {
		if p.Grade == policy.OK {
			continue
		}
		g, seen := grades[p.Tenant]
		if !seen {
			tenants = append(tenants, p.Tenant)
		}
		grades[p.Tenant] = max(g, p.Grade)
	}
	for _, t := range tenants {
		gauge(c.pressure, float64(grades[t]), t)
	}
	type tenantShard struct {
		tenant string
		shard  uint32
	}
	var shards []tenantShard
	shardGrades := make(map[tenantShard]policy.Grade, len(st.ShardPressure))
	for _, p := range st.ShardPressure {
		if p.Grade == policy.OK {
			continue
		}
		k := tenantShard{p.Tenant, p.Shard}
		g, seen := shardGrades[k]
		if !seen {
			shards = append(shards, k)
		}
		shardGrades[k] = max(g, p.Grade)
	}
	for _, k := range shards {
		gauge(c.shardPressure, float64(shardGrades[k]), k.tenant, strconv.FormatUint(uint64(k.shard), 10))
	}
	var keys []tenantLevel
	since := make(map[tenantLevel]int64, len(st.Alarms))
	for _, a := range st.Alarms {
		k := tenantLevel{a.Tenant, a.Level}
		s, seen := since[k]
		if !seen {
			keys = append(keys, k)
			s = a.Since
		}
		since[k] = min(s, a.Since)
	}
	for _, k := range keys {
		gauge(c.staleAlarm, float64(max(st.Now-since[k], 0))/1e9, k.tenant, levelLabel(k.level))
	}
}

// lagDebt returns the lag and debt of level l at time at. raftfsm computes
// them at the state machine's log time (planner.Stats.Now); with WithClock,
// at may be later (a cluster whose log stalled), and the figures are
// carried forward from there: the oldest block has waited at - Oldest, and
// every queued block has waited the difference longer, counted in whole
// seconds as the planner counts them.
func lagDebt(l planner.LevelStats, plannerNow, at int64) (time.Duration, int64) {
	if l.Queued == 0 || at <= plannerNow {
		return l.Lag, l.Debt
	}
	lag := time.Duration(at - l.Oldest)
	debt := l.Debt + int64(l.Queued)*(at/int64(time.Second)-plannerNow/int64(time.Second))
	return lag, debt
}

func (c *fsmCollector) collectScheduler(st raftfsm.Stats, gauge func(*prometheus.Desc, float64, ...string)) {
	levels := make([]uint32, 0, len(st.Planner.Levels)+len(st.Scheduler.Levels))
	for _, l := range st.Planner.Levels {
		levels = append(levels, l.Level)
	}
	byLevel := make(map[uint32]scheduler.LevelStats, len(st.Scheduler.Levels))
	for _, l := range st.Scheduler.Levels {
		levels = append(levels, l.Level)
		s := byLevel[l.Level]
		s.Unassigned += l.Unassigned
		s.InProgress += l.InProgress
		s.Excluded += l.Excluded
		s.Paused += l.Paused
		byLevel[l.Level] = s
	}
	slices.Sort(levels)
	for _, lvl := range slices.Compact(levels) {
		s, lv := byLevel[lvl], levelLabel(lvl)
		gauge(c.schJobs, float64(s.Unassigned), lv, "unassigned")
		gauge(c.schJobs, float64(s.InProgress), lv, "in_progress")
		gauge(c.schJobs, float64(s.Excluded), lv, "excluded")
		gauge(c.schPaused, float64(s.Paused), lv)
	}
}

type tenantLevel struct {
	tenant string
	level  uint32
}

func (c *fsmCollector) collectIndexLevels(levels []index.LevelStats, gauge func(*prometheus.Desc, float64, ...string)) {
	// Merge by label set, so that the series are unique whatever the
	// input (and summed over tenants when they are aggregated away).
	type sums struct{ blocks, bytes int64 }
	keys := make([]tenantLevel, 0, len(levels))
	agg := make(map[tenantLevel]sums, len(levels))
	for _, l := range levels {
		k := tenantLevel{l.Tenant, l.Level}
		if c.noTenants {
			k.tenant = ""
		}
		s, seen := agg[k]
		if !seen {
			keys = append(keys, k)
		}
		s.blocks += l.Blocks
		s.bytes += l.Bytes
		agg[k] = s
	}
	for _, k := range keys {
		s := agg[k]
		labels := []string{k.tenant, levelLabel(k.level)}
		if c.noTenants {
			labels = labels[1:]
		}
		gauge(c.ixBlocks, float64(s.blocks), labels...)
		gauge(c.ixBytes, float64(s.bytes), labels...)
	}
}

// emit sends a constant metric, or an invalid one carrying the error if the
// metric cannot be built (a label value that is not valid UTF-8, say), so a
// bad value fails the scrape instead of panicking.
// describe sends the descriptors ds.
func describe(ch chan<- *prometheus.Desc, ds ...*prometheus.Desc) {
	for _, d := range ds {
		ch <- d
	}
}

// descs returns the descriptors of the counters cs.
func descs[T any](cs []counter[T]) []*prometheus.Desc {
	out := make([]*prometheus.Desc, len(cs))
	for i, c := range cs {
		out[i] = c.desc
	}
	return out
}

// collect sends the metrics that send makes of the one snapshot read
// returns; without read, it fails the scrape with ErrNoStats, named by the
// descriptor invalid.
func collect[S any](ch chan<- prometheus.Metric, read func() S, invalid *prometheus.Desc, send func(S)) {
	if read == nil {
		ch <- prometheus.NewInvalidMetric(invalid, ErrNoStats)
		return
	}
	send(read())
}

func emit(ch chan<- prometheus.Metric, d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
	m, err := prometheus.NewConstMetric(d, t, v, labels...)
	if err != nil {
		m = prometheus.NewInvalidMetric(d, err)
	}
	ch <- m
}

func levelLabel(l uint32) string { return strconv.FormatUint(uint64(l), 10) }

// skipLabel returns the value of the reason label of
// compactkit_fsm_changes_skipped_total for a skip reason: its name with
// underscores for spaces ("stale_version" for the reason "stale version").
func skipLabel(r scheduler.Skip) string { return strings.ReplaceAll(r.String(), " ", "_") }
