// Package prom exports compactkit's statistics to Prometheus.
//
// It lives in a nested module (github.com/compactkit/compactkit/metrics/prom)
// so that the core module does not depend on the Prometheus client.
//
// Two collectors implement prometheus.Collector over the Stats() of a
// component: NewFSMCollector over a state machine (raftfsm.FSM.Stats: the
// state machine, its planner, scheduler and index), NewWorkerCollector over
// a worker (worker.Worker.Stats). Each reads one Stats snapshot per scrape,
// in Collect; neither starts a goroutine nor touches the global registry:
// the caller registers them where it wants.
//
//	reg := prometheus.NewRegistry()
//	reg.MustRegister(prom.NewFSMCollector(fsm.Stats, prom.WithClock(time.Now)))
//	reg.MustRegister(prom.NewWorkerCollector(w.Stats, prom.WithConstLabels(prometheus.Labels{"worker": w.ID()})))
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//
// A host on hashicorp/raft passes the adapter's state machine:
// NewFSMCollector(adapter.State().Stats) for a raftfsm/hraft FSM.
//
// Every metric name starts with compactkit_ and carries its unit (_seconds,
// _bytes, _block_seconds); counters end in _total.
//
// # Autoscaling: compaction lag and debt
//
// Two gauges per level are the signals to scale the worker fleet on:
//
//   - compactkit_planner_compaction_lag_seconds{level}: how long the oldest
//     block queued at the level has waited. It says how far compaction is
//     behind ingest, whatever the volume.
//   - compactkit_planner_compaction_debt_block_seconds{level}: the sum over
//     the level's queued blocks of the time each has waited. It grows with
//     the backlog and with its age, so it rises faster the further workers
//     fall behind.
//
// Backpressure (a policy's thresholds, compactkit_tenant_pressure) grades
// queued blocks and ready batches, not debt: compactkit_planner_ready_batches
// is the measure that the ready-batch thresholds (slow_ready_batches,
// stop_ready_batches) take per tenant.
//
// A level's lag normally stays below its batching policy's MaxAge (a batch
// is planned once its oldest block is that old) plus the time until a
// worker has a free slot for the job (claimed blocks no longer count as
// queued); a lag that keeps growing beyond that, or a debt that keeps growing, means
// the workers do not keep up: add workers. For example, with level 0's
// default MaxAge of 36 s,
//
//	max(compactkit_planner_compaction_lag_seconds{level="0"}) > 120
//
// or a positive deriv() of the level-0 debt over ten minutes. Both figures
// are zero when nothing is queued at the level.
//
// The planner computes lag and debt at the log time of the last entry that
// reached it; the collector carries them forward to the state machine's log
// time (compactkit_fsm_log_timestamp_seconds), and with WithClock to the
// scrape's wall-clock time. Use WithClock(time.Now) for alerting and
// autoscaling: log time stands still when no entry is applied (ingest
// stopped and no worker polling), and so would lag and debt without it.
// Scrape the leader, or take max() over replicas: a lagging follower
// reports an older state.
//
// # State machine metrics (NewFSMCollector)
//
// State machine:
//
//	compactkit_fsm_last_applied_index             gauge   index of the last applied entry
//	compactkit_fsm_last_applied_term              gauge   its term
//	compactkit_fsm_log_timestamp_seconds          gauge   effective log time, Unix seconds
//	compactkit_fsm_cluster_version                gauge   command version the cluster allows
//	compactkit_fsm_poll_log_workers               gauge   workers in the poll log (seen recently)
//	compactkit_fsm_broken_invariants_total        counter invariants of Apply found broken (a bug to report)
//	compactkit_fsm_changes_skipped_total{reason}  counter changes of polls not applied, by reason
//
// changes_skipped_total has a series for every reason (raftfsm
// Stats.SkippedChanges, scheduler.Skip), zero until a change is skipped
// for it: stale_entry, invalid, stale_version, unknown_job, job_exists,
// completed_recently, queue_full, paused, excluded, lease_not_expired,
// at_failure_limit, token_not_newer, no_expired_lease,
// below_failure_limit, no_lease, not_excluded, queue_below_limit,
// not_admissible, no_tombstone_left, window_closed and at_cap. Skips are normal — a poll prepared
// on a view that a concurrent entry moved on skips stale_version, a worker
// reporting a job it lost skips no_lease — and only their rate matters. Like
// broken_invariants_total it counts since the replica started or restored a
// snapshot (a restore resets it, which rate() handles), while
// compactkit_scheduler_changes_skipped_total, replicated, counts the
// scheduler's skips over the cluster's life.
//
// Planner, per level below the final level ({level}):
//
//	compactkit_planner_keys                           gauge  keys (tenant, shard, level) with queued blocks
//	compactkit_planner_queued_blocks                  gauge  blocks queued for compaction
//	compactkit_planner_ready_batches                  gauge  jobs that could be planned now (estimate)
//	compactkit_planner_claimed_blocks                 gauge  blocks claimed by jobs
//	compactkit_planner_quarantined_blocks             gauge  blocks quarantined (evicted jobs' sources)
//	compactkit_planner_compaction_lag_seconds         gauge  compaction lag (see above)
//	compactkit_planner_compaction_debt_block_seconds  gauge  compaction debt (see above)
//
// ready_batches is the planner's estimate at its own clock; it is not
// carried forward like lag and debt. Planner totals: compactkit_planner_claiming_jobs
// (gauge), and the counters compactkit_planner_blocks_enqueued_total,
// _jobs_claimed_total, _jobs_completed_total, _jobs_returned_total,
// _blocks_returned_total, _jobs_quarantined_total, _blocks_quarantined_total,
// _blocks_requeued_total, _blocks_dropped_total, _duplicate_blocks_total and
// _missed_removals_total.
//
// Scheduler:
//
//	compactkit_scheduler_jobs{level,status}     gauge   jobs by status: unassigned, in_progress, excluded
//	compactkit_scheduler_paused_jobs{level}     gauge   jobs whose tenant or level is paused
//	compactkit_scheduler_remembered_completions gauge   completions remembered for retried reports
//	compactkit_scheduler_pause_rules            gauge   pause rules in force
//
// Every level below the final level has its jobs and paused_jobs series,
// zero when it has no job, so series do not come and go with the queue.
// Counters: compactkit_scheduler_jobs_added_total, _jobs_assigned_total,
// _jobs_reassigned_total (lease expired: a worker was lost or too slow),
// _leases_renewed_total, _jobs_completed_total, _jobs_failed_total,
// _jobs_released_total, _jobs_excluded_total, _jobs_evicted_total,
// _jobs_cancelled_total, _jobs_retried_total and _changes_skipped_total.
//
// Index:
//
//	compactkit_index_live_blocks{tenant,level}     gauge    live blocks
//	compactkit_index_live_bytes{tenant,level}      gauge    their size
//	compactkit_index_tombstones{state}             gauge    objects awaiting deletion: pending, releasable, attached
//	compactkit_index_orphans                       gauge    prefix tombstones of uncommitted attempts
//	compactkit_index_replacements_total{result}    counter  replacements: applied, refused
//	compactkit_index_duplicate_blocks_refused_total counter blocks refused as duplicates
//	compactkit_index_deletion_records              gauge    remembered deletions (deduplication)
//	compactkit_index_remembered_results            gauge    remembered replacement results
//
// The tenant label is empty for multi-tenant level-0 segments (Prometheus
// then shows the series without the label).
//
// Scheduling policies (package policy), from the replicated state:
//
//	compactkit_tenant_pressure{tenant}             gauge  backpressure grade: 1 slow, 2 stop
//	compactkit_shard_pressure{tenant,shard}        gauge  a shard's backpressure grade: 1 slow, 2 stop
//	compactkit_stale_alarm_seconds{tenant,level}   gauge  seconds since a staleness alarm began
//
// Only tenants whose grade is not ok have a tenant_pressure series (and
// shards a shard_pressure series), and
// only levels in alarm a stale_alarm_seconds series: a tenant graded ok
// or a level compacted in time has none, so alert on the presence of a
// series. The grade is what the tenant's ingest is told (raftfsm
// BlockResult.Pressure); it advises, it never drops blocks. An alarm
// begins when the level's oldest queued block has waited longer than the
// tenant's stale_after (Stats.Alarms: Since); the seconds are counted at
// the state machine's log time, WithClock or not, so every replica
// reports the same figure at the same entry.
//
// # Label cardinality
//
// Every label but one is bounded by the configuration: level by the
// number of levels (at most 64), status, state, result and
// outcome by a handful of fixed values, reason by the skip reasons. The exception is tenant on
// compactkit_index_live_blocks and compactkit_index_live_bytes: one series
// per tenant and level that holds live blocks, so 2 × tenants × levels
// series. That is fine for tens or hundreds of tenants; for thousands, use
// WithoutTenants, which sums tenants away and keeps one series per level.
// The policy gauges keep their tenant label under WithoutTenants — which
// tenant is under pressure or in alarm is their point — but have series
// only for tenants in trouble.
// No metric has a label per block, job or worker ID (worker IDs appear
// only as constant labels the caller chooses), and only shard_pressure
// one per shard: it has series only for the shards in trouble.
//
// # Worker metrics (NewWorkerCollector)
//
//	compactkit_worker_polls_total                counter  requests answered by the leader
//	compactkit_worker_poll_retries_total         counter  requests resent after a transport failure
//	compactkit_worker_bad_responses_total        counter  answers that failed validation
//	compactkit_worker_rejected_requests_total    counter  requests the leader rejected as invalid
//	compactkit_worker_lease_renewals_total       counter  leases renewed
//	compactkit_worker_jobs_assigned_total        counter  jobs assigned
//	compactkit_worker_jobs_started_total         counter  jobs started
//	compactkit_worker_jobs_ended_total{outcome}  counter  jobs ended: completed, failed, released, lost
//	compactkit_worker_tombstones_deleted_total   counter  tombstones whose objects were deleted
//	compactkit_worker_blocks_written_total       counter  output blocks written
//	compactkit_worker_written_bytes_total        counter  their bytes
//	compactkit_worker_jobs_held                  gauge    jobs held now
//	compactkit_worker_jobs_running               gauge    jobs running now
//
// jobs_assigned_total equals the sum of jobs_ended_total over outcomes plus
// jobs_held. Register one collector per worker, with a constant label that
// tells them apart (WithConstLabels); sums over that label give the fleet's
// figures, e.g. sum(rate(compactkit_worker_written_bytes_total[5m])).
//
// # Errors
//
// Nothing here panics on input. A collector built with a nil stats
// function fails the scrape with ErrNoStats; a label value that is not
// valid UTF-8 fails the scrape; constant labels that clash with a
// collector's own are refused when the collector is registered.
//
// # Alerts and dashboard
//
// NewLeaderCollector exports what a leader service measured by its own
// clock (leader.Service.Metrics): poll latency and job duration
// histograms, and the last completion per level.
//
// The module ships alerts.yml, Prometheus alerting rules over these
// metrics (a stopped replica, compaction lag, nothing compacted while
// blocks wait, a level not compacted for hours, slow polls, excluded jobs, quarantined blocks, a tombstone backlog, a
// log clock behind, workers rejected or losing leases, a tenant whose
// backpressure says stop, a staleness alarm), and
// dashboard.json, a Grafana dashboard of the backlog, lag, debt, jobs,
// completions, merge throughput, deletions, backpressure and staleness
// alarms. Their tests check that they
// parse and query only metrics the collectors export.
package prom
