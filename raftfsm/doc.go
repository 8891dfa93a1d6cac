// Package raftfsm is compactkit's deterministic compaction state machine:
// the planner, the scheduler and the index wired together behind one
// Apply, for a host to embed in its replicated log (Raft).
//
// # Apply
//
// [FSM.Apply] is the only way the state changes. It takes the entry's
// position and time ([compactkit.Entry]) and an encoded [Command]: a batch
// of new blocks, a prepared poll, a configuration change, the first command
// of a new leader, a retention policy, a reader watermark, an operator
// command, the prepare step of a two-commit poll, or a cluster-version
// bump. Entries at or below the last applied index are skipped; a
// malformed or unknown-version command returns an error and changes
// nothing. The effective time is max(previous time, command time): the
// leader's clock, never going backwards. Every setting that affects Apply
// is replicated state ([Config]), changed only by a config command.
//
// # One entry per poll
//
// A worker's poll is prepared on the leader by [FSM.Prepare] — read-only,
// on copy-on-write views, while entries keep being applied — which decides
// the changes (renewals, completions, failures, releases, assignments,
// evictions, new jobs, cleanup-only jobs) and returns the [Command] to
// propose. Every replica's Apply executes exactly those changes, each only
// if the job's version still matches, wires them to the planner (claims,
// returns, quarantine, outputs queued one level up) and the index
// (replacement, tombstones, orphans), and returns the worker's response in
// [Result.Poll]. [Result.Changes] says what became of each change: a
// skipped one carries the scheduler's reason ([scheduler.Skip]), and
// [Stats.SkippedChanges] counts them by reason. The response is recorded
// under the worker's ID and request sequence: a retried poll gets it
// again and acts on nothing.
// In two-commit mode the host proposes a [PreparePoll] first and uses its
// index as the assignments' token (see FSM.Prepare).
//
// # Cleanup
//
// A replaced block's tombstone is released once its cleanup delay (and the
// reader watermark) passed; a compaction job then carries it to a worker,
// which deletes the objects and confirms them by reporting success.
// Tombstones no compaction job has carried for [WithCleanupAfter] go to
// cleanup-only jobs, in the capacity a poll has left after compaction;
// once they have waited [WithCleanupUrgentAfter], one cleanup-only job
// takes the poll's first slot, so that a fleet saturated by compaction
// still deletes what it replaced.
//
// # Policies
//
// [PolicyCommand]s set scheduling policies (package policy): a default and
// tenants' own priority classes, caps on jobs in progress (per tenant and
// per shard), run windows, not-before times, backpressure thresholds and
// staleness thresholds, plus compact-now requests. They are replicated
// state, in snapshots, judged in log time: a window is judged at the first
// entry past its edge, and a policy applied between a poll's Prepare and
// its Apply wins. [Result.Blocks] carries each tenant's backpressure grade
// for the host's ingest, [Stats.Pressure] and [Stats.Alarms] the grades and
// staleness alarms in force, [FSM.Policies] the policies. The order in
// which pauses, marks, windows, caps, compact-now and priorities apply is
// the scheduler's (see package scheduler).
//
// From cluster version 6 a tenant's grade is judged again on every change
// of its queue — blocks added, claimed, completed, returned, dropped by
// retention, marked, re-queued, re-batched by a configuration — and on a
// change of the policy it follows; debt thresholds
// (policy.Thresholds.SlowReadyBatches, StopReadyBatches) count ready
// batches, where version 5 compared them with the debt in block-seconds;
// and a poll whose status updates end a capped tenant's jobs may start the
// tenant's next jobs in the same poll, as without a cap.
//
// # Snapshots
//
// [FSM.Snapshot] writes a versioned, checksummed stream: the state
// machine's header and poll log, then each component's section. Replicas
// that applied the same entries write identical bytes. [Restore] and
// [FSM.Restore] read it back, rejecting corrupt or truncated input with
// the previous state intact; they read exactly the snapshot's bytes, so it
// can be one section of the host's own snapshot. [FSM.Capture] takes a
// point-in-time copy for background persistence.
//
// # Versions and upgrades
//
// The cluster version is replicated state: what Apply does depends on it,
// so that every replica applies an entry alike whatever release it runs.
// The first release runs at cluster version 5 and reads commands of
// version 5 and snapshots of version 4; older versions were never
// released and are refused as unknown. A release that changes what Apply
// does brings a new cluster version ([CommandVersion]) and keeps the
// previous versions' behaviour: a state machine starts at
// [Config.StartVersion] (the newest by default), writes commands in the
// version the cluster allows ([FSM.Encode]) and snapshots in that
// version's format, and moves to a newer version only at the entry that
// raises it ([SetClusterVersion], sent once every replica runs the new
// release). The cluster version never goes down. The golden files of
// every version (testdata/golden) and the rolling-upgrade transcript
// check that each version's bytes and behaviour stay as released.
package raftfsm
