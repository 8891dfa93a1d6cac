package scheduler

import (
	"cmp"
	"slices"
	"strings"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/internal/namekey"
)

// job is the scheduler's record of one job. A record a view may reach
// never changes: a change builds a draft (Scheduler.draftOf) and either
// writes it over the record, if no view can reach the record (its
// generation is the scheduler's, see Scheduler.gen), or makes a new record
// of it that replaces the old one in every index.
type job struct {
	st   ck.JobState
	plan *ck.JobPlan
	// key is the job's entry in the tenant index, shared by all records of
	// the job (it never changes).
	key *tenantKey
	// hold says what keeps the job from being assigned (holdPaused,
	// holdClosed, holdCapped): a function of its tenant's and level's
	// state, whatever the job's status. A held unassigned job is left out
	// of the assignment indexes; so is a paused or closed in-progress job.
	hold uint8
	// rank is the rank of the tenant's effective policy, and hasCap
	// whether it has a cap (MaxInProgress > 0): copied at insert, changed
	// by the policy setters.
	rank   uint8
	hasCap bool
	// entry and pre say that the record was made by a change of entry
	// `entry`, and that the job's version before that entry was pre. They
	// are transient: only a Tx of that entry reads them.
	entry, pre uint64
	// gen is the scheduler's generation when the record was made.
	gen uint64
}

// with returns a copy of j, a draft to modify before it replaces j (see
// Scheduler.replace).
func (j *job) with() *job {
	c := *j
	return &c
}

// shard returns the shard of the job's plan (ck.AnyShard without a plan).
func (j *job) shard() uint32 {
	if j.plan == nil {
		return ck.AnyShard
	}
	return j.plan.Shard
}

// The orders of the indexes. Every order ends with the name, so that no two
// jobs compare equal.

// named is a job's entry in the tree of jobs by name, with the name
// inline (see internal/namekey): a search compares integers in the nodes
// it reads, not the names of the job records they point to.
type named struct {
	n namekey.Name
	j *job
}

// byName orders all jobs by name.
func byName(a, b named) bool { return a.n.Less(b.n) }

// nameOf returns j's entry in the tree of jobs by name.
func nameOf(j *job) named { return named{n: namekey.Of(j.st.Name), j: j} }

// nameProbe returns the entry that finds the job named name.
func nameProbe(name string) named { return named{n: namekey.Of(name)} }

// The holds of a job (job.hold).
const (
	// holdPaused: a pause rule matches the job's tenant and level.
	holdPaused uint8 = 1 << iota
	// holdClosed: the tenant's effective policy is closed.
	holdClosed
	// holdCapped: the tenant has as many jobs in progress as its cap, or
	// the job's shard as many as its per-shard cap.
	holdCapped
)

// idles reports whether an in-progress job with the hold is left out of
// the expiry index: paused or closed (a capped tenant's expired job may
// still be reassigned).
func idles(hold uint8) bool { return hold&(holdPaused|holdClosed) != 0 }

// byPriority orders unassigned jobs (ready index) and in-progress jobs
// (expiry index) within their level: level, rank, failures, deadline, name.
func byPriority(a, b *job) bool {
	if a.st.Level != b.st.Level {
		return a.st.Level < b.st.Level
	}
	if a.rank != b.rank {
		return a.rank < b.rank
	}
	return lessFDN(&a.st, &b.st)
}

// lessRFDN is the order within an effective level: rank, failures,
// deadline, name.
func lessRFDN(ar uint8, a *ck.JobState, br uint8, b *ck.JobState) bool {
	if ar != br {
		return ar < br
	}
	return lessFDN(a, b)
}

// lessFDN is the order within a level: failures, deadline, name.
func lessFDN(a, b *ck.JobState) bool {
	if a.Failures != b.Failures {
		return a.Failures < b.Failures
	}
	if a.Deadline != b.Deadline {
		return a.Deadline < b.Deadline
	}
	return a.Name < b.Name
}

// byAge orders unassigned jobs for aging: level, time added, name.
func byAge(a, b *job) bool {
	if a.st.Level != b.st.Level {
		return a.st.Level < b.st.Level
	}
	if a.st.AddedAt != b.st.AddedAt {
		return a.st.AddedAt < b.st.AddedAt
	}
	return a.st.Name < b.st.Name
}

// byHeld orders the unassigned jobs held by a cap alone: tenant, level,
// failures, deadline, name — within a tenant and level, the order in
// which a schedule that frees the tenant's cap assigns them (its jobs
// share a rank).
func byHeld(a, b *job) bool {
	if a.st.Tenant != b.st.Tenant {
		return a.st.Tenant < b.st.Tenant
	}
	if a.st.Level != b.st.Level {
		return a.st.Level < b.st.Level
	}
	return lessFDN(&a.st, &b.st)
}

// byDeadline orders in-progress jobs: deadline, name.
func byDeadline(a, b *job) bool {
	if a.st.Deadline != b.st.Deadline {
		return a.st.Deadline < b.st.Deadline
	}
	return a.st.Name < b.st.Name
}

// byExclusion orders excluded jobs: the version (the entry that excluded
// them), name. The job excluded longest ago is evicted first.
func byExclusion(a, b *job) bool {
	if a.st.Version != b.st.Version {
		return a.st.Version < b.st.Version
	}
	return a.st.Name < b.st.Name
}

// tenantKey is the key of the tenant index: every job by tenant, level and
// name. It is also the order of [Scheduler.List]. The tenant is the
// tenant's shared name (see Scheduler.internTenant), so equal tenants
// compare without reading their bytes, and the name carries its inline
// prefix (namekey), so names mostly compare without reading theirs.
type tenantKey struct {
	tenant string
	level  uint32
	name   namekey.Name
	// at is where the key is (keyNowhere, keyIndexed, ...): the
	// scheduler's alone; a schedule never reads it.
	at uint8
}

func byTenant(a, b *tenantKey) bool {
	if a.tenant != b.tenant {
		return a.tenant < b.tenant
	}
	if a.level != b.level {
		return a.level < b.level
	}
	return a.name.Less(b.name)
}

// done remembers a completed job.
type done struct {
	name  string
	token fencing.Token
	at    int64 // log time of the completion
}

// doneRef is a completion's entry in the tree of completions by name,
// with the name inline, as named.
type doneRef struct {
	n namekey.Name
	d *done
}

func doneByName(a, b doneRef) bool { return a.n.Less(b.n) }

// doneOf returns d's entry in the tree of completions by name.
func doneOf(d *done) doneRef { return doneRef{n: namekey.Of(d.name), d: d} }

// doneProbe returns the entry that finds the completion of the job named
// name.
func doneProbe(name string) doneRef { return doneRef{n: namekey.Of(name)} }

func doneByTime(a, b *done) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.name < b.name
}

// PauseRule is one pause: a tenant, a level, or a tenant at a level. The jobs
// it matches stay queued but are neither assigned nor added.
type PauseRule struct {
	// Tenant is the paused tenant; empty when AllTenants is set.
	Tenant string
	// AllTenants makes the rule match every tenant.
	AllTenants bool
	// Level is the paused level; 0 when AllLevels is set.
	Level uint32
	// AllLevels makes the rule match every level.
	AllLevels bool
}

func comparePauseRules(a, b PauseRule) int {
	if a.AllTenants != b.AllTenants {
		if a.AllTenants {
			return -1
		}
		return 1
	}
	if c := strings.Compare(a.Tenant, b.Tenant); c != 0 {
		return c
	}
	if a.AllLevels != b.AllLevels {
		if a.AllLevels {
			return -1
		}
		return 1
	}
	return cmp.Compare(a.Level, b.Level)
}

// pauses is an immutable set of pause rules, shared with views.
type pauses struct {
	rules []PauseRule // sorted by comparePauseRules, distinct
	set   map[PauseRule]struct{}
}

func newPauses(rules []PauseRule) *pauses {
	p := &pauses{rules: rules, set: make(map[PauseRule]struct{}, len(rules))}
	for _, r := range rules {
		p.set[r] = struct{}{}
	}
	return p
}

// paused reports whether jobs of tenant at level are paused.
func (p *pauses) paused(tenant string, level uint32) bool {
	if p == nil || len(p.rules) == 0 {
		return false
	}
	for _, r := range [...]PauseRule{
		{Tenant: tenant, Level: level},
		{Tenant: tenant, AllLevels: true},
		{AllTenants: true, Level: level},
		{AllTenants: true, AllLevels: true},
	} {
		if _, ok := p.set[r]; ok {
			return true
		}
	}
	return false
}

func (p *pauses) has(r PauseRule) bool {
	if p == nil {
		return false
	}
	_, ok := p.set[r]
	return ok
}

// toggled returns a new set with r added (on) or removed (off).
func (p *pauses) toggled(r PauseRule, on bool) *pauses {
	var rules []PauseRule
	if p != nil {
		rules = slices.Clone(p.rules)
	}
	i, found := slices.BinarySearchFunc(rules, r, comparePauseRules)
	switch {
	case on && !found:
		rules = slices.Insert(rules, i, r)
	case !on && found:
		rules = slices.Delete(rules, i, i+1)
	}
	return newPauses(rules)
}

// LevelStats counts the jobs of one level by status.
type LevelStats struct {
	// Level is the compaction level.
	Level uint32
	// Unassigned, InProgress and Excluded count the jobs by stored status.
	Unassigned, InProgress, Excluded int
	// Paused counts the jobs (of any status) whose tenant or level is
	// paused.
	Paused int
	// Held counts the unassigned jobs held by their tenant's policy: closed
	// (a run window or a not-before time) or capped (as many jobs in
	// progress as its cap). A job both paused and held counts in Paused and
	// in Held. It is 0 without tenant policies.
	Held int
}

func (l *LevelStats) empty() bool {
	return l.Unassigned == 0 && l.InProgress == 0 && l.Excluded == 0 && l.Paused == 0 && l.Held == 0
}

// Counters count what the scheduler did since it was created. They are
// replicated state (they are in the snapshot).
type Counters struct {
	// Added counts jobs created.
	Added uint64
	// Assigned counts assignments of unassigned jobs.
	Assigned uint64
	// Reassigned counts assignments of in-progress jobs whose lease expired.
	Reassigned uint64
	// Renewed counts lease renewals.
	Renewed uint64
	// Completed counts successful completions.
	Completed uint64
	// Failed counts failures reported by workers.
	Failed uint64
	// Released counts jobs released by workers: shutting down, or
	// assigned a job too late to run it (package worker).
	Released uint64
	// Excluded counts jobs that reached the failure limit (by an exclude
	// change or a reported failure).
	Excluded uint64
	// Evicted counts excluded jobs evicted from a full queue.
	Evicted uint64
	// Cancelled counts jobs cancelled by an operator or by retention.
	Cancelled uint64
	// Retried counts excluded jobs returned to the queue by an operator.
	Retried uint64
	// Skipped counts changes not applied because their precondition no
	// longer held (stale version, token mismatch, wrong status, limit).
	Skipped uint64
}

// list returns the counters in snapshot order.
func (c *Counters) list() []uint64 {
	return []uint64{c.Added, c.Assigned, c.Reassigned, c.Renewed, c.Completed, c.Failed,
		c.Released, c.Excluded, c.Evicted, c.Cancelled, c.Retried, c.Skipped}
}

const numCounters = 12

func countersFrom(v []uint64) Counters {
	return Counters{Added: v[0], Assigned: v[1], Reassigned: v[2], Renewed: v[3], Completed: v[4], Failed: v[5],
		Released: v[6], Excluded: v[7], Evicted: v[8], Cancelled: v[9], Retried: v[10], Skipped: v[11]}
}
