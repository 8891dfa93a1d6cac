// Package scheduler is compactkit's replicated job queue: it decides which
// compaction job a worker gets, protects each attempt with a lease and a
// fencing token, counts failures, excludes jobs that keep failing and evicts
// them when the queue is full.
//
// # Prepare and Apply
//
// The state machine uses the scheduler in two steps (ARCHITECTURE.md, "Data flow").
//
// On the leader, a poll is prepared on a read-only [Schedule] opened with
// [Scheduler.Schedule] at the leader's time. The schedule turns the worker's
// status reports into renew, complete, fail and release changes
// ([Schedule.UpdateJob]), assigns jobs ([Schedule.AssignJob], excluding on
// the way the abandoned jobs that reached the failure limit), evicts
// excluded jobs from a full queue ([Schedule.EvictJob]) and adds the
// planner's new jobs ([Schedule.AddJob]). Every change carries the version
// of the job it was prepared against. [Schedule.Update] returns them as a
// compactkit.PlanUpdate for the log.
//
// On every replica, the entry's changes are executed one by one through a
// [Tx] ([Scheduler.Begin], [Tx.Apply]): a change applies only if the job's
// version before the entry still equals the change's and the change table's
// precondition still holds, so two polls prepared on the same view can never
// both take a job, and applying an entry twice changes nothing. Each
// [Result] says what happened, so the state machine can wire it to the
// planner and the index; a skipped change says why with a [Skip] (stale
// version, no lease, queue full, ...) and a detail naming the values
// ([Result.Why] puts them in words). Apply never reads local
// configuration: [Config] is replicated state, changed by
// [Scheduler.SetConfig].
//
// # Tokens, leases, versions
//
// A job's token is the log index of the entry that created it or last
// assigned it (the prepare entry's index in two-commit mode); an assignment's
// token must be greater than the previous assignment's. A worker owns a job
// while it is in progress and the worker's token equals the job's
// ([fencing.Owns]). The lease deadline is the entry's time plus
// Config.LeaseDuration; a lease has expired when now > deadline.
// [Scheduler.ExtendLeases] gives every running job a full lease when a new
// leader takes office. Every applied change sets the job's version to the
// entry's index.
//
// # Order
//
// [Schedule.AssignJob] serves effective levels in order. A job's effective
// level is its level, or 0 for an unassigned job that has waited longer than
// its level's aging threshold since it was added (Config.AgingThreshold), so
// that a busy level 0 cannot starve higher levels forever. Within an
// effective level, unassigned jobs come first, then in-progress jobs whose
// lease expired; each by failures (fewer first), deadline (earlier first)
// and name. Paused tenants and levels ([Scheduler.SetPaused]) are skipped.
//
// # Cost
//
// Opening a schedule is O(1): the indexes are github.com/google/btree trees
// cloned copy-on-write. Unassigned jobs are indexed by (level, failures,
// deadline, name) and by (level, added, name) for aging; in-progress jobs by
// (level, failures, deadline, name), where the expired ones of a failure
// count are a prefix; excluded jobs by the entry that excluded them. Each
// schedule operation costs O(log n) per level visited plus the jobs the
// schedule itself touched, never O(n).
//
// # Snapshots
//
// [Scheduler.Snapshot] writes the state in the columnar, checksummed format
// of internal/codec; [Restore] reads it back. The bytes are a function of the
// logical state, and a restored scheduler behaves exactly like the original.
package scheduler
