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
// while it is in progress, the job is assigned to it and the worker's token
// equals the job's ([fencing.Owns]): tokens are log indexes, public and easy
// to guess, worker IDs are not shown (see compactkit.PublicWorkerName). The lease deadline is the entry's time plus
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
// lease expired; each by its tenant's rank (lower first; an aged job
// competes at rank 0), failures (fewer first), deadline (earlier first)
// and name. An aged job of a lower class than rank 0 is lifted ahead of
// every job that is not, and so is the oldest waiting level-0 job of a
// lower class once it has waited level 1's aging threshold (level 0 ages
// into no other level): a Low tenant's job waits at most its aging
// threshold plus one poll with a free slot, however busy the High tenants
// keep level 0. Paused tenants and levels ([Scheduler.SetPause]) are
// skipped, and so are held tenants (below).
//
// # Tenant limits
//
// [Limits] — a default ([Scheduler.SetDefaultLimits]) and per-tenant
// overrides ([Scheduler.SetLimits]) — give a tenant a rank, a cap of jobs
// in progress, a cap of jobs in progress per shard and a closed state. The
// state machine derives them from its replicated tenant policies in log
// time (a priority class is a rank; a run window or a not-before time that
// forbids starting work now is Closed, and a level's run window closes
// that level, ClosedLevels) and sets them while applying entries. They are
// derived state: the snapshot does not hold them, and after [Restore] the
// state machine sets them again; a restored scheduler with the same limits
// is the original's equal. With the zero Limits the scheduler orders and
// admits jobs by level, failures, deadline and name alone.
//
// What holds a job, in order of precedence (the first that applies is the
// reason an assign is skipped):
//
//  1. A pause ([Scheduler.SetPause]) holds everything of its tenant or
//     level: no add, no assign, no reassignment of an expired job.
//  2. A closed tenant, or a closed level of it: no add (skipped "window closed"), no assign, no
//     reassignment of an expired job; jobs in progress run to their end
//     (renewed, completed, failed, released as usual).
//  3. A cap: while the tenant has MaxInProgress jobs in progress (or more,
//     after the cap was lowered), its unassigned jobs are not assigned
//     (skipped "at cap"); they are still added (they wait), and its expired
//     jobs are still reassigned, which leaves the count as it is. A
//     per-shard cap (MaxPerShard) does the same for the unassigned jobs
//     of one shard of the tenant (the shard of a job's plan; the jobs of
//     levels compacted across shards count as one more shard) while that
//     shard has as many jobs in progress; the tenant's other shards go on.
//     Both caps apply together: a job waits while either holds it.
//  4. Aging lifts a waiting job to level 0 and rank 0, and a lower class
//     ahead of the rest (above); it never lifts a hold.
//
// Apply checks every hold again, so a policy applied between a poll's
// Prepare and its Apply wins, and two assigns of one tenant in one entry
// respect its cap. A schedule counts its own assignments per tenant and
// shard and never hands a tenant, or a shard, more than its cap;
// [Schedule.Held] tells the planner which tenants to skip (a per-shard cap
// does not make a tenant held: its other shards have work). With
// [Schedule.FreeCaps] it also counts off the jobs in progress its status
// updates end (complete, fail, release), so that a poll that ends a capped
// tenant's job may start the tenant's next one — a job the view held at
// the cap, at its level, or a new one — as without a cap; a transaction
// applies the updates first, so the cap holds in Apply too.
//
// Held jobs leave the assignment indexes when their hold begins, as paused
// ones do, so that a poll never visits them: a poll's cost does not grow
// with the number of held tenants. Those held by a cap alone move to an
// index of their own, by tenant and then in assignment order, where a
// schedule with [Schedule.FreeCaps] finds the next job of a tenant whose
// cap it frees in O(log n) (plus, under a per-shard cap, the jobs of full
// shards it passes over). The transition costs O(the tenant's jobs): a
// policy change, or an entry that moves the tenant's count of jobs in
// progress across its cap, or a shard's count across the per-shard cap,
// and leaves it there. Crossings are settled when the entry ends (at the
// next entry, schedule, statistics or snapshot): an entry that crosses a
// cap and back — a completion and the assignment of the tenant's next
// job, the steady state of a capped tenant with a backlog — reshapes only
// the jobs it added meanwhile, and until then an assignment checks the
// tenant's counts. Such a poll costs the same with 100 or 10,000 jobs
// waiting behind the cap (BenchmarkScheduleFreedBacklog). The counts per
// shard are kept only for the tenants whose effective policy has a
// per-shard cap, and counted from their jobs when it gains one.
//
// # Cost
//
// Opening a schedule is O(1), and so is closing it ([Schedule.Close]).
// The indexes are github.com/google/btree trees under the copy-on-write
// rule of internal/cow, stated there once: a schedule reads the
// scheduler's own trees (under a mutex shared with the scheduler) until
// the scheduler is about to change one of them. Then, if the schedule is
// still open, it gets a copy-on-write clone of that tree as it was, which
// the scheduler's next mutations of it pay for with path copies; the trees
// the scheduler does not change are not cloned, and if the schedule was
// closed, nothing is cloned and the scheduler changes its trees in place.
// Job records follow the same rule: a change writes over a record that no
// schedule can reach (none is open, and none froze a tree holding it), and
// otherwise replaces it with a new record in every index.
//
// Unassigned jobs without a hold are indexed by (level, rank, failures,
// deadline, name) and by (level, added, name) for
// aging; in-progress jobs neither paused nor closed by (level, rank,
// failures, deadline, name), where the expired ones of a rank and failure
// count are a prefix; excluded jobs by the entry that excluded them. The
// job an entry added last enters the two indexes of unassigned jobs only
// when the next job is added or a schedule opens, which are the only
// readers of those indexes: a poll that creates a job and assigns it in
// its next change does not index it as unassigned at all. Likewise a job
// without a cap enters the tenant index (every job by tenant, level and
// name) only when the index is next read — by a pause, a policy change
// that reshapes a tenant's jobs, or [Scheduler.List], which then pay
// O(log n) per job added since — so a job created and completed with none
// of them in between never enters it. A filter of the names of the jobs
// and remembered completions (a Bloom filter, rebuilt from the trees as
// it fills) answers most checks of a new job's name without searching
// either tree. Each schedule operation costs O(log n) per level visited
// plus the jobs the schedule itself touched (and, with caps, the jobs of
// the tenants it filled to their cap), never O(n). The jobs a schedule
// added wait in the order it hands them out, so that finding the next one
// costs O(log k) of the k it added; checking a new name against them
// compares a word per job.
//
// # Snapshots
//
// [Scheduler.Snapshot] writes the state in the columnar, checksummed format
// of internal/codec; [Restore] reads it back. The bytes are a function of the
// logical state, and a restored scheduler behaves exactly like the original.
package scheduler
