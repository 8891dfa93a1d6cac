package raftfsm

import (
	"slices"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/index"
	"github.com/compactkit/compactkit/planner"
	"github.com/compactkit/compactkit/policy"
	"github.com/compactkit/compactkit/scheduler"
)

// Stats describes the state machine and every component, for operators
// and metrics.
type Stats struct {
	// LastApplied and Term are the index and term of the last applied
	// entry, and Now the effective log time.
	LastApplied, Term uint64
	Now               int64
	// ClusterVersion is the command version the leader may write.
	ClusterVersion byte
	// Failed is nil while the replica applies entries. A replica that
	// stopped on an entry it cannot trust reports the error it answers
	// every Apply and Prepare with (it wraps [ErrCorrupt]); restore a
	// snapshot to recover.
	Failed error
	// Workers is the number of workers in the poll log.
	Workers int
	// BrokenInvariants counts the invariants of Apply this replica found
	// broken since it started or last restored a snapshot (each is
	// logged). It should stay 0: anything else is a bug to report. Tests
	// and builds with the "invariants" tag panic instead.
	BrokenInvariants uint64
	// SkippedChanges counts the changes of applied polls that were not
	// applied, by reason (indexed by scheduler.Skip; the NotSkipped entry
	// stays 0), since the replica started or last restored a snapshot.
	// Skips are normal: a poll prepared on a view that a concurrent entry
	// moved on (stale version), a worker reporting a job it no longer
	// holds (no lease), a job the planner no longer admits. Besides the
	// scheduler's skips (Scheduler.Counters.Skipped) they count adds the
	// state machine refused before the scheduler saw them (job exists, not
	// admissible, no tombstone left). Like BrokenInvariants they are the
	// replica's own, not in snapshots.
	SkippedChanges [scheduler.NumSkips]uint64
	// Planner, Scheduler and Index are the components' statistics. The
	// planner's per-level Lag and Debt are the compaction lag and debt:
	// the signals to autoscale workers on.
	Planner   planner.Stats
	Scheduler scheduler.Stats
	Index     index.Stats
	// Tombstones counts the tombstones whose objects are not yet deleted:
	// pending their delay, releasable, or held by a job.
	Tombstones int
	// Pressure lists the tenants whose backpressure grade is not OK, by
	// tenant: replicated state, graded when a tenant's queue changes (see
	// [BlockResult.Pressure]).
	Pressure []TenantPressure
	// ShardPressure lists the shards whose backpressure grade is not OK
	// (policy.Tenant.ShardPressure), by tenant and shard.
	ShardPressure []ShardPressure
	// Alarms lists the staleness alarms in force, by tenant and level:
	// the levels whose oldest queued block has waited longer than the
	// tenant's policy.Tenant.StaleAfter at the log's time.
	Alarms []StaleAlarm
}

// TenantPressure is a tenant's backpressure grade.
type TenantPressure struct {
	Tenant string
	Grade  policy.Grade
}

// ShardPressure is the backpressure grade of a shard of a tenant (the
// keys of levels compacted across shards are the shard
// compactkit.AnyShard).
type ShardPressure struct {
	Tenant string
	Shard  uint32
	Grade  policy.Grade
}

// StaleAlarm says that a tenant's level has not been compacted for longer
// than its policy allows: its oldest queued block arrived at Oldest, and
// the alarm holds since Since (Oldest plus the threshold). Both are log
// times, derived from replicated state: every replica reports the same
// alarms at the same entry.
type StaleAlarm struct {
	Tenant        string
	Level         uint32
	Oldest, Since int64
}

// Drained says that compaction has nothing left to do: no block queued or
// claimed, no job (planned, in progress or excluded) and no tombstone
// awaiting deletion. Quarantined blocks have left compaction and do not
// count; Planner.Quarantined says how many there are.
func (s *Stats) Drained() bool {
	return s.Planner.Queued == 0 && s.Planner.Claimed == 0 && s.Scheduler.Jobs == 0 && tombstones(&s.Index) == 0
}

// tombstones counts the index's tombstones whose objects are not yet
// deleted.
func tombstones(ix *index.Stats) int {
	return ix.TombstonesPending + ix.TombstonesReleasable + ix.TombstonesAttached
}

// Stats returns the statistics of the state machine and its components.
func (f *FSM) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.st
	ix := st.index.Stats()
	return Stats{
		LastApplied: st.lastApplied, Term: st.lastTerm, Now: st.now,
		ClusterVersion: st.clusterVersion, Failed: f.failed, Workers: st.polls.len(), BrokenInvariants: st.broken,
		SkippedChanges: st.skipped, Planner: st.planner.Stats(st.now), Scheduler: st.sched.Stats(), Index: ix,
		Tombstones: tombstones(&ix),
		Pressure:   st.pressure(), ShardPressure: st.shardPressure(), Alarms: st.alarms(),
	}
}

// pressure lists the grades that are not OK.
func (st *state) pressure() []TenantPressure {
	var out []TenantPressure
	for _, g := range st.policies.gradeList() {
		out = append(out, TenantPressure{Tenant: g.Tenant, Grade: policy.Grade(g.Grade)})
	}
	return out
}

// shardPressure lists the shard grades that are not OK.
func (st *state) shardPressure() []ShardPressure {
	var out []ShardPressure
	for _, g := range st.policies.shardGradeList() {
		out = append(out, ShardPressure{Tenant: g.Tenant, Shard: g.Shard, Grade: policy.Grade(g.Grade)})
	}
	return out
}

// alarms lists the staleness alarms at the log's time. Its cost is the
// planner's per-tenant statistics (linear in the keys), and nothing when
// no policy sets a threshold.
func (st *state) alarms() []StaleAlarm {
	ps := st.policies
	set := ps.def.StaleAfter > 0
	for _, name := range ps.names {
		set = set || ps.tenants[name].StaleAfter > 0
	}
	if !set {
		return nil
	}
	var out []StaleAlarm
	for _, ts := range st.planner.Tenants(st.now) {
		d := ps.of(ts.Tenant).StaleAfter
		if d > 0 && ts.Queued > 0 && ts.Lag > d {
			out = append(out, StaleAlarm{Tenant: ts.Tenant, Level: ts.Level, Oldest: ts.Oldest, Since: ts.Oldest + int64(d)})
		}
	}
	return out
}

// Pressure returns the backpressure grade of a tenant, or of one shard of
// it if shard is not nil (see policy.Tenant.ShardPressure): what its
// ingest should do (see policy.Grade). It is OK for a tenant or shard
// without thresholds.
func (f *FSM) Pressure(tenant string, shard *uint32) policy.Grade {
	f.mu.Lock()
	defer f.mu.Unlock()
	if shard != nil {
		return f.st.policies.shardGrades[tenantShard{tenant: tenant, shard: *shard}]
	}
	return f.st.policies.grades[tenant]
}

// Policies describes the scheduling policies in force.
type Policies struct {
	// Default is the policy of every tenant without its own.
	Default policy.Tenant
	// Tenants are the tenants' own policies, by tenant.
	Tenants []TenantPolicy
	// CompactNow lists the compact-now requests still in force, as the
	// planner takes them: the blocks of the tenant (every tenant with
	// AllTenants) at the level (every level with AllLevels) queued at or
	// before Before are planned without waiting.
	CompactNow []planner.Force
}

// TenantPolicy is a tenant's own policy, and whether its new jobs may
// start at the log's time (its run window and not-before time). Its JSON
// form is the admin API's: {"tenant", "open", "policy"}, the policy in
// policy.Tenant's JSON form.
type TenantPolicy struct {
	Tenant string        `json:"tenant"`
	Open   bool          `json:"open"`
	Policy policy.Tenant `json:"policy"`
}

// Policies returns the scheduling policies in force.
func (f *FSM) Policies() Policies {
	f.mu.Lock()
	defer f.mu.Unlock()
	ps := f.st.policies
	out := Policies{Default: ps.def.Clone()}
	for _, name := range ps.names {
		out.Tenants = append(out.Tenants, TenantPolicy{Tenant: name, Policy: ps.tenants[name].Clone(), Open: ps.mayStart(name)})
	}
	out.CompactNow = slices.Clone(ps.compact)
	return out
}

// LastApplied returns the index and term of the last applied entry and
// the effective log time.
func (f *FSM) LastApplied() (index, term uint64, now int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st.lastApplied, f.st.lastTerm, f.st.now
}

// Config returns the replicated configuration in force.
func (f *FSM) Config() Config {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st.cfg
}

// ClusterVersion returns the command version the cluster allows.
func (f *FSM) ClusterVersion() byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st.clusterVersion
}

// Jobs lists jobs that match the filter, a page at a time (see
// scheduler.Scheduler.List for the cursor and limit rules). A job's worker
// is shown by its public name ([compactkit.PublicWorkerName]): a worker's
// ID is its credential and never leaves the state machine.
func (f *FSM) Jobs(flt scheduler.Filter, cursor string, limit int) ([]ck.JobState, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	jobs, next := f.st.sched.List(flt, cursor, limit)
	for i := range jobs {
		publicWorkers(&jobs[i])
	}
	return jobs, next
}

// Job returns the state (its worker by public name, as [FSM.Jobs]) and a
// copy of the plan of the named job.
func (f *FSM) Job(name string) (ck.JobState, ck.JobPlan, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	js, plan, ok := f.st.sched.Job(name)
	if !ok {
		return ck.JobState{}, ck.JobPlan{}, false
	}
	publicWorkers(&js)
	return js, plan.Clone(), true
}

// publicWorkers replaces the worker IDs of a job's state, its history
// included, by their public names: the IDs are the workers' credentials.
func publicWorkers(js *ck.JobState) {
	js.Worker = ck.PublicWorkerName(js.Worker)
	if len(js.History) > 0 {
		h := make([]ck.JobEvent, len(js.History))
		for i, ev := range js.History {
			ev.Worker = ck.PublicWorkerName(ev.Worker)
			h[i] = ev
		}
		js.History = h
	}
}

// Quarantined lists the blocks taken out of compaction — by the eviction
// of the job that held them, or by an operator's mark — a page at a time
// (see planner.Planner.Quarantined for the cursor and limit rules).
func (f *FSM) Quarantined(cursor string, limit int) ([]planner.QuarantinedBlock, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st.planner.Quarantined(cursor, limit)
}

// Index returns a read-only view of the block index as it is now, for
// queries: the blocks of a tenant over a time range, read amplification,
// tombstones (see index.View). Opening it is O(1); it never changes, and
// it may be used on any goroutine, by several at once, while the state
// machine applies entries. Close it when done: while a view is open, the
// index copies the parts of its trees the view may read before changing
// them.
func (f *FSM) Index() *index.View {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st.index.View()
}

// Tenants returns the compaction lag and debt of every tenant and level
// with queued blocks (see planner.Planner.Tenants): the per-tenant view of
// the autoscaling signal.
func (f *FSM) Tenants() []planner.TenantStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st.planner.Tenants(f.st.now)
}
