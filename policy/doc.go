// Package policy holds the scheduling policies operators set on a
// compaction cluster, as values the state machine replicates and judges in
// log time: a [Tenant]'s priority class, caps on jobs in progress (of the
// tenant, and of each of its shards), run
// windows, not-before time, backpressure thresholds, staleness threshold
// and overrides of the cluster's batching per level. The state machine (package raftfsm, from cluster version 5)
// keeps a default policy and tenants' own, changed by its policy
// commands, and applies them; this package only evaluates them.
//
// Everything here is a pure function of its arguments: no clock, no time
// zone database, no randomness, no map-order effects. Times are the log's
// (Unix nanoseconds, as compactkit.Entry.Time); windows are recurring UTC
// ranges shifted by a fixed offset, so a window opens at the same log time
// on every replica, whatever the machine's time zone. Policies that have
// memory (a backpressure grade and its hysteresis) take the previous state
// as an argument and return the next; the state machine keeps that state
// in its snapshots and never recomputes it from a local clock.
//
// # Windows
//
// A [Window] is a recurring weekly range: the days it starts on and a
// range of minutes of the day, in UTC shifted by a fixed offset. A range
// whose end is before its start wraps past midnight into the next day. A
// [RunPolicy] lists windows and says whether new jobs may start only
// inside them ([OnlyIn]) or never inside them ([NeverIn]); jobs in
// progress always run to their end. A [LevelRun] adds windows for one
// level of the tenant, on top of its run policy: a job at that level
// starts only when both let it ([ClosedLevels]); in the default
// policy it is a window for that level across tenants. A run policy under which work could
// never start — an OnlyIn policy whose windows cover no minute of the
// week, a NeverIn policy whose windows cover every minute — is refused by
// [Tenant.Validate] ([ErrNeverOpens]), never left to starve a tenant
// silently; so is a level run policy that never meets its tenant's.
//
// # Priority classes
//
// A [Class] orders tenants at the same level: [High] before [Medium]
// before [Low]. The zero value is Medium, so a tenant without a policy is
// Medium.
//
// # Level overrides
//
// A [Level] overrides, for one tenant, the cluster's batching of one
// compaction level: the blocks and bytes a job takes, how long a partial
// batch waits before it is planned anyway, and whether the level is
// compacted across shards. Zero fields keep the cluster's values, so an
// override says only what differs; a policy lists at most one per level,
// in ascending order of level ([Tenant.Validate]). The planner checks the
// bounds that depend on it (planner.CheckLevels).
//
// # Backpressure
//
// [Thresholds] grade a tenant's load — its queue depth in blocks and its
// compaction debt in ready batches (the jobs that could be planned now) —
// as [OK], [Slow] or [Stop], and [Tenant.ShardPressure]
// each of its shards' apart, with
// hysteresis: a grade is entered when a measure reaches its On threshold
// and left only once every measure is below its Off threshold, so a load
// hovering at a threshold does not flap. [Thresholds.Next] also takes
// whether a run window is holding the tenant's work back: a closed window
// alone never drives the grade to Stop. The grade advises a host's ingest;
// it never drops blocks.
package policy
