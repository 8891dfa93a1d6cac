package scheduler

import (
	"fmt"
	"math"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/internal/ident"
	"github.com/compactkit/compactkit/lease"
)

// Result says what applying one change did.
type Result struct {
	// Applied is false when the change's precondition failed (stale
	// version, token mismatch, wrong status, limit, ...): nothing changed.
	Applied bool
	// Reason says why the change was skipped (zero if it was applied),
	// and Detail explains it naming the offending values (it may
	// be empty). Why puts them together for people.
	Reason Skip
	Detail string
	// Kind is the kind of change executed. A reported failure that reaches
	// the failure limit is a ChangeFail whose After.Status is Excluded.
	Kind ck.ChangeKind
	// Before is the job's state before the change (zero if it did not
	// exist); After is its state after an applied change (zero if the job
	// was removed).
	Before, After ck.JobState
	// Plan is the job's plan: set for every applied change, and for a
	// removed job the plan it had. It is shared and must not be modified.
	Plan *ck.JobPlan
	// PrevToken is, for an applied change that ended an attempt without
	// committing it — reassignment of an expired job, exclude, fail,
	// release, cancel of an in-progress job — the token of that attempt, so
	// that the state machine can tombstone its output prefix. It is 0
	// otherwise.
	PrevToken fencing.Token
}

// Tx applies the changes of one log entry, one by one. Get one from
// [Scheduler.Begin].
type Tx struct {
	s     *Scheduler
	e     ck.Entry
	now   int64
	token fencing.Token
	stale string // non-empty: every change is skipped as a stale entry, for this reason
	// removed holds the jobs an applied change of this entry removed, with
	// their version before the entry. (The version before the entry of a
	// job changed by this entry is in its record: see job.pre.)
	removed []removal
}

type removal struct {
	name string
	pre  uint64
}

// Begin starts applying the changes of entry e (a PlanUpdate) at the state
// machine's effective time now. tokenIndex is the update's TokenIndex: the
// prepare entry's index in two-commit mode, or 0 to use e.Index. New jobs and
// assignments take that index as their token.
//
// Begin is called once per entry. An entry at or below the last one begun
// (or an index 0, or a token index after the entry) gives a Tx that skips
// every change without counting it, so that applying an entry twice changes
// nothing.
func (s *Scheduler) Begin(e ck.Entry, now int64, tokenIndex uint64) *Tx {
	s.settle()
	tx := &Tx{s: s, e: e, now: now, token: fencing.Token(e.Index)}
	if tokenIndex != 0 {
		tx.token = fencing.Token(tokenIndex)
	}
	switch {
	case e.Index == 0:
		tx.stale = "entry index 0"
	case e.Index <= s.lastEntry:
		tx.stale = fmt.Sprintf("entry %d already applied (last %d)", e.Index, s.lastEntry)
	case tokenIndex > e.Index:
		tx.stale = fmt.Sprintf("token index %d after entry %d", tokenIndex, e.Index)
	default:
		s.lastEntry = e.Index
	}
	return tx
}

// The failure records the scheduler writes itself.
const (
	// reasonLeaseExpired records an attempt whose lease expired.
	reasonLeaseExpired = "lease expired"
	// reasonUnstated records a failure reported without a reason.
	reasonUnstated = "failure reported without a reason"
)

// recordFailure sets nj's failure record: why its attempt ended and when
// (compactkit.JobState.LastFailure and FailedAt), [reasonUnstated] for a
// failure reported without a reason.
func (tx *Tx) recordFailure(nj *job, reason string) {
	if reason == "" {
		reason = reasonUnstated
	}
	nj.st.LastFailure, nj.st.FailedAt = ident.ClipReason(reason), tx.now
}

// event appends an event to nj's history; the oldest events beyond
// ident.MaxJobHistory are dropped. The history is copied, never
// appended to in place: the previous record of the job shares it.
func (tx *Tx) event(nj *job, kind ck.JobEventKind, token fencing.Token, worker, detail string) {
	nj.st.History = appendEvent(nj.st.History, ck.JobEvent{At: tx.now, Kind: kind, Token: token, Worker: worker, Detail: ident.ClipReason(detail)})
}

// appendEvent returns a new history: h and ev, at most MaxJobHistory.
func appendEvent(h []ck.JobEvent, ev ck.JobEvent) []ck.JobEvent {
	h = h[max(0, len(h)-ident.MaxJobHistory+1):]
	out := make([]ck.JobEvent, len(h), len(h)+1)
	copy(out, h)
	return append(out, ev)
}

// preVersion returns the version of the named job before the entry.
func (tx *Tx) preVersion(name string, j *job) uint64 {
	if j != nil {
		if j.entry == tx.e.Index {
			return j.pre
		}
		return j.st.Version
	}
	for i := len(tx.removed) - 1; i >= 0; i-- {
		if tx.removed[i].name == name {
			return tx.removed[i].pre
		}
	}
	return 0
}

// stamp marks a record made by this entry from j (nil for a new job).
func (tx *Tx) stamp(nj, j *job) {
	nj.pre = tx.preVersion(nj.st.Name, j)
	nj.entry = tx.e.Index
}

// removing records that this entry removes j.
func (tx *Tx) removing(j *job) {
	tx.removed = append(tx.removed, removal{name: j.st.Name, pre: tx.preVersion(j.st.Name, j)})
}

// Why says why the change was skipped, for people: the reason and its
// detail ("stale version: prepared against 1, job at 2 before entry 3"), or
// "" for an applied change.
func (r *Result) Why() string {
	return r.Reason.explain(r.Detail)
}

// skip counts a skipped change and returns r skipped for the reason, with
// a detail formatted from format and args ("" for none).
func (tx *Tx) skip(r *Result, reason Skip, format string, args ...any) Result {
	tx.s.counters.Skipped++
	r.Applied = false
	r.Reason = reason
	r.Detail = format
	if len(args) > 0 {
		r.Detail = fmt.Sprintf(format, args...)
	}
	return *r
}

// Apply executes one change of the entry if its precondition holds, and
// says what happened. The precondition is the change's row of the table in
// ARCHITECTURE.md ("Job states and changes"), checked at this point of the
// entry, plus: the job's version before
// the entry equals c.Version (except for cancel, an operator's change). A
// skipped change changes nothing but the Skipped counter; an applied one
// sets the job's version to the entry's index.
//
//   - add: no such job, and none completed recently; the queue is below
//     its limit; the plan's tenant and level are not paused, and the
//     tenant is not closed ([Limits]; a capped tenant's job is
//     added, and waits). The job is unassigned, its token the entry's
//     token index, added now.
//   - assign: a job neither paused nor closed, unassigned, or in progress
//     with its lease expired (now > deadline) and below the failure limit
//     once the abandoned attempt is counted; an unassigned one only while
//     its tenant is below its cap (so two assigns of one entry respect
//     it; a reassignment leaves the count as it is); the new token must
//     be greater than the job's last assignment's. In progress for
//     c.Worker until now + lease.
//   - exclude: in progress, expired, and the abandoned attempt reaches the
//     failure limit. Excluded.
//   - renew: in progress and c.Token is the job's token. Deadline becomes
//     max(deadline, now + lease).
//   - complete: as renew. The job is removed and its token remembered.
//   - fail: as renew. Failures + 1: unassigned, or excluded at the limit.
//   - release: as renew. Unassigned, no failure counted.
//   - evict: excluded, and the queue at or above its limit. Removed.
//   - cancel: the job exists. Removed.
//
// Apply trusts the change to be well-formed (the state machine validates
// decoded commands); it only checks what it relies on. The plan of an
// applied add is kept, not copied: it must not be modified afterwards.
func (tx *Tx) Apply(c *ck.Change) Result {
	if c == nil {
		return Result{Reason: skippedInvalid, Detail: "nil change"}
	}
	r := Result{Kind: c.Kind}
	if tx.stale != "" {
		r.Reason, r.Detail = skippedStaleEntry, tx.stale
		return r
	}
	s := tx.s
	j := s.get(c.Job)
	if j != nil {
		r.Before = j.st
	}
	if err := ident.CheckChangeKind(uint8(c.Kind)); err != nil {
		return tx.skip(&r, skippedInvalid, "%v", err)
	}
	if pre := tx.preVersion(c.Job, j); c.Kind != ck.ChangeCancel && pre != c.Version {
		return tx.skip(&r, skippedStaleVersion, "prepared against %d, job at %d before entry %d", c.Version, pre, tx.e.Index)
	}
	if c.Kind == ck.ChangeAdd {
		return tx.add(c, j, &r)
	}
	if j == nil {
		return tx.skip(&r, skippedUnknownJob, "")
	}
	cfg := &s.cfg
	expired := j.st.Status == ck.StatusInProgress && tx.now > j.st.Deadline
	owns := fencing.Owns(j.st.Status == ck.StatusInProgress, j.st.Token, c.Token)
	nj := s.draftOf(j)
	nj.st.Version = tx.e.Index
	switch c.Kind {
	case ck.ChangeAssign:
		switch {
		case c.Worker == "":
			return tx.skip(&r, skippedInvalid, "assign without a worker")
		case j.hold&holdPaused != 0:
			return tx.skip(&r, skippedPaused, "")
		case j.hold&holdClosed != 0:
			return tx.skip(&r, skippedClosed, "tenant %q", j.st.Tenant)
		case j.st.Status == ck.StatusExcluded:
			return tx.skip(&r, skippedExcluded, "")
		case j.st.Status == ck.StatusInProgress && !expired:
			return tx.skip(&r, skippedLeaseNotExpired, "")
		case expired && cfg.atLimit(j.st.Failures):
			return tx.skip(&r, skippedAtFailureLimit, "%d failures before, limit %d: exclude instead", j.st.Failures, cfg.MaxFailures)
		case j.st.Status == ck.StatusUnassigned && s.capHeld(j):
			return tx.skip(&r, skippedCapped, "%s", s.capText(j))
		case j.st.Worker == "" && tx.token < j.st.Token, j.st.Worker != "" && tx.token <= j.st.Token:
			return tx.skip(&r, skippedTokenNotNewer, "token %d, the job's %d", tx.token, j.st.Token)
		}
		if expired {
			nj.st.Failures++
			tx.recordFailure(nj, reasonLeaseExpired)
			tx.event(nj, ck.EventLeaseExpired, j.st.Token, j.st.Worker, "")
			r.PrevToken = j.st.Token
			s.counters.Reassigned++
		} else {
			s.counters.Assigned++
		}
		nj.st.Status = ck.StatusInProgress
		nj.st.Token = tx.token
		nj.st.Deadline = lease.Grant(tx.now, cfg.LeaseDuration)
		nj.st.Worker = c.Worker
		tx.event(nj, ck.EventAssigned, tx.token, c.Worker, "")
	case ck.ChangeExclude:
		switch {
		case !expired:
			return tx.skip(&r, skippedNoExpiredLease, "%s", j.st.Status)
		case !cfg.atLimit(j.st.Failures):
			return tx.skip(&r, skippedBelowFailureLimit, "%d failures before, limit %d", j.st.Failures, cfg.MaxFailures)
		}
		nj.st.Status = ck.StatusExcluded
		nj.st.Failures++
		tx.recordFailure(nj, reasonLeaseExpired)
		tx.event(nj, ck.EventLeaseExpired, j.st.Token, j.st.Worker, "")
		tx.event(nj, ck.EventExcluded, 0, "", "")
		r.PrevToken = j.st.Token
		s.counters.Excluded++
	case ck.ChangeRenew, ck.ChangeComplete, ck.ChangeFail, ck.ChangeRelease:
		if !owns {
			return tx.skip(&r, skippedNoLease, "%s with token %d", j.st.Status, c.Token)
		}
		if c.Worker != j.st.Worker {
			return tx.skip(&r, skippedNoLease, "held by another worker")
		}
		switch c.Kind {
		case ck.ChangeRenew:
			nj.st.Deadline = lease.Extend(j.st.Deadline, tx.now, cfg.LeaseDuration)
			s.counters.Renewed++
		case ck.ChangeComplete:
			tx.removing(j)
			s.remove(j)
			s.remember(&done{name: j.st.Name, token: j.st.Token, at: tx.now})
			s.counters.Completed++
			r.Applied, r.Plan = true, j.plan
			return r
		case ck.ChangeFail:
			tx.recordFailure(nj, c.Reason)
			tx.event(nj, ck.EventFailed, j.st.Token, j.st.Worker, nj.st.LastFailure)
			if cfg.atLimit(j.st.Failures) {
				nj.st.Status = ck.StatusExcluded
				tx.event(nj, ck.EventExcluded, 0, "", "")
				s.counters.Excluded++
			} else {
				nj.st.Status = ck.StatusUnassigned
			}
			nj.st.Failures++
			r.PrevToken = j.st.Token
			s.counters.Failed++
		case ck.ChangeRelease:
			nj.st.Status = ck.StatusUnassigned
			tx.event(nj, ck.EventReleased, j.st.Token, j.st.Worker, "")
			r.PrevToken = j.st.Token
			s.counters.Released++
		}
	case ck.ChangeEvict:
		switch {
		case j.st.Status != ck.StatusExcluded:
			return tx.skip(&r, skippedNotExcluded, "%s", j.st.Status)
		case cfg.MaxQueueSize <= 0 || s.byName.Len() < cfg.MaxQueueSize:
			return tx.skip(&r, skippedQueueBelowLimit, "")
		}
		tx.removing(j)
		s.remove(j)
		s.counters.Evicted++
		r.Applied, r.Plan = true, j.plan
		return r
	case ck.ChangeCancel:
		tx.removing(j)
		return s.cancel(j, r)
	}
	tx.stamp(nj, j)
	s.replace(j, nj)
	r.Applied, r.After, r.Plan = true, nj.st, nj.plan
	return r
}

// add applies an add change; old is the job of that name, if any.
func (tx *Tx) add(c *ck.Change, old *job, r *Result) Result {
	s := tx.s
	cfg := &s.cfg
	switch {
	case c.Plan == nil || c.Plan.Name != c.Job:
		return tx.skip(r, skippedInvalid, "add without a matching plan")
	case old != nil:
		return tx.skip(r, SkippedJobExists, "")
	case s.hasCompleted(c.Job):
		return tx.skip(r, skippedCompletedRecently, "")
	case cfg.MaxQueueSize > 0 && s.byName.Len() >= cfg.MaxQueueSize:
		return tx.skip(r, skippedQueueFull, "%d jobs", s.byName.Len())
	case s.pauses.paused(c.Plan.Tenant, c.Plan.Level):
		return tx.skip(r, skippedPaused, "")
	}
	pol := s.policy(c.Plan.Tenant)
	if pol.closed(c.Plan.Level) {
		return tx.skip(r, skippedClosed, "tenant %q", c.Plan.Tenant)
	}
	plan := c.Plan
	j := &job{
		st: ck.JobState{
			Name: c.Job, Tenant: plan.Tenant, Level: plan.Level, Status: ck.StatusUnassigned,
			Token: tx.token, Version: tx.e.Index, AddedAt: tx.now,
		},
		plan: plan,
	}
	s.shape(j, pol, s.counts[plan.Tenant])
	if u := s.unsettledOf(plan.Tenant); u != nil {
		u.added = append(u.added, c.Job)
	}
	tx.stamp(j, nil)
	s.insertPending(j)
	s.counters.Added++
	r.Applied, r.After, r.Plan = true, j.st, j.plan
	return *r
}

func (s *Scheduler) cancel(j *job, r Result) Result {
	s.remove(j)
	s.counters.Cancelled++
	if j.st.Status == ck.StatusInProgress {
		r.PrevToken = j.st.Token
	}
	r.Kind, r.Applied, r.Before, r.Plan = ck.ChangeCancel, true, j.st, j.plan
	return r
}

// Cancel removes the named job on an operator's request, or because
// retention dropped one of its sources, whatever its status. The result
// carries the job's plan (so the planner re-queues its sources) and, for a
// job in progress, the token of its attempt (whose outputs become orphans).
// An unknown job returns an error wrapping [ErrUnknownJob].
func (s *Scheduler) Cancel(e ck.Entry, now int64, name string) (Result, error) {
	j := s.get(name)
	if j == nil {
		return Result{Kind: ck.ChangeCancel, Reason: skippedUnknownJob}, fmt.Errorf("cancel %q at entry %d: %w", name, e.Index, ErrUnknownJob)
	}
	return s.cancel(j, Result{}), nil
}

// DropTombstones empties the tombstones of the plan of the named job, an
// excluded one whose tombstones the state machine has returned to the pool
// for other jobs to carry: from then on its plan lists none, so retrying it
// cannot hand them out a second time. A cleanup-only job, which has nothing
// left to do, is removed (counted as cancelled). It reports whether the
// job was removed; an unknown job, or one with no tombstones, is left as
// it is. The job's version is kept: this is not a prepared change.
//
// Within a [Tx], a later change of the same entry to a removed job is
// skipped as stale, like any change to a job that is gone.
func (s *Scheduler) DropTombstones(name string) (removed bool) {
	j := s.get(name)
	if j == nil || len(j.plan.Tombstones) == 0 {
		return false
	}
	if j.plan.CleanupOnly() {
		s.remove(j)
		s.counters.Cancelled++
		return true
	}
	plan := *j.plan
	plan.Tombstones = nil
	nj := j.with()
	nj.plan = &plan
	s.replace(j, nj)
	return false
}

// ExtendLeases pushes the deadline of every in-progress job to at least
// now + LeaseDuration, and returns how many deadlines moved. The state
// machine calls it for a new leader's first command, so that an election
// does not cost healthy jobs their leases. It visits only the in-progress
// jobs whose deadline moves.
//
// Versions are kept: an extension is not a change prepared against a job,
// and changes prepared before it (renewals above all) must still apply.
func (s *Scheduler) ExtendLeases(e ck.Entry, now int64) int {
	_ = e
	target := lease.Grant(now, s.cfg.LeaseDuration)
	var short []*job
	// The jobs neither paused nor closed: in each (level, rank, failures)
	// group of the expiry index, the deadlines before target are a prefix.
	var probe job
	for level, r, f := uint32(0), uint8(0), uint32(0); ; {
		probe.rank = r
		probe.st = ck.JobState{Level: level, Failures: f, Deadline: math.MinInt64}
		first := true
		s.expiry.AscendGreaterOrEqual(&probe, func(j *job) bool {
			if first {
				level, r, f, first = j.st.Level, j.rank, j.st.Failures, false
			}
			if j.st.Level != level || j.rank != r || j.st.Failures != f || j.st.Deadline >= target {
				return false
			}
			short = append(short, j)
			return true
		})
		if first {
			break // no group left
		}
		var more bool
		if r, f, more = nextGroup(r, f); !more {
			if level == maxLevel {
				break
			}
			level, r, f = level+1, 0, 0
		}
	}
	// The paused and closed ones.
	s.idle.Ascend(func(j *job) bool {
		if j.st.Deadline >= target {
			return false
		}
		short = append(short, j)
		return true
	})
	for _, j := range short {
		nj := j.with()
		nj.st.Deadline = target
		s.replace(j, nj)
	}
	return len(short)
}

// Retry returns excluded jobs to the queue on an operator's request:
// unassigned, failures reset, the retry recorded in each job's history
// naming who asked for it (by may be empty). name names one job; "" retries
// every excluded job. It returns how many jobs it retried. An unknown job
// returns an error wrapping [ErrUnknownJob], a job that is not excluded one
// wrapping [ErrNotExcluded].
func (s *Scheduler) Retry(e ck.Entry, now int64, name, by string) (int, error) {
	var jobs []*job
	if name != "" {
		j := s.get(name)
		switch {
		case j == nil:
			return 0, fmt.Errorf("retry %q at entry %d: %w", name, e.Index, ErrUnknownJob)
		case j.st.Status != ck.StatusExcluded:
			return 0, fmt.Errorf("retry %q at entry %d: %s: %w", name, e.Index, j.st.Status, ErrNotExcluded)
		}
		jobs = append(jobs, j)
	} else {
		s.excluded.Ascend(func(j *job) bool {
			jobs = append(jobs, j)
			return true
		})
	}
	for _, j := range jobs {
		nj := j.with()
		nj.st.Status = ck.StatusUnassigned
		nj.st.Failures = 0
		nj.st.Version = e.Index
		nj.st.History = appendEvent(nj.st.History, ck.JobEvent{At: now, Kind: ck.EventRetried, Detail: ident.ClipReason(by)})
		s.replace(j, nj)
		s.counters.Retried++
	}
	return len(jobs), nil
}

// SetPause pauses (paused = true) or resumes what the rule names: a
// tenant, a level, or a tenant at a level (AllTenants and AllLevels say
// "every"; the empty tenant is a tenant like any other); a rule with both
// pauses everything. Pauses are a set of such rules: a job is paused while
// any rule matches it, and resuming removes exactly the rule named
// (resuming tenant "a" does not resume a level paused as a whole). A rule
// with AllTenants and a Tenant, or AllLevels and a Level, is taken with
// the tenant or level cleared.
//
// Paused jobs stay queued and unassigned; a job in progress keeps running
// until its worker ends it (it is neither renewed away nor reassigned when
// it expires); no job is added for a paused tenant or level. The jobs' versions are
// kept. The work is proportional to the jobs the rule matches (for a level
// across tenants, plus one lookup per tenant).
func (s *Scheduler) SetPause(rule PauseRule, paused bool) {
	s.settle()
	if rule.AllTenants {
		rule.Tenant = ""
	}
	if rule.AllLevels {
		rule.Level = 0
	}
	if s.pauses.has(rule) == paused {
		return
	}
	next := s.pauses.toggled(rule, paused)
	var names []string
	s.matching(rule, func(k *tenantKey) { names = append(names, k.name.String()) })
	s.pauses = next
	for _, name := range names {
		j := s.get(name)
		hold := j.hold &^ holdPaused
		if next.paused(j.st.Tenant, j.st.Level) {
			hold |= holdPaused
		}
		if hold != j.hold {
			nj := j.with()
			nj.hold = hold
			s.replace(j, nj)
		}
	}
}

// matching calls fn for the key of every job the rule matches, in
// (tenant, level, name) order.
func (s *Scheduler) matching(r PauseRule, fn func(*tenantKey)) {
	each := func(k *tenantKey) bool { fn(k); return true }
	switch {
	case r.AllTenants && r.AllLevels:
		s.tenantIndex().Ascend(each)
	case r.AllLevels:
		s.tenantIndex().AscendRange(&tenantKey{tenant: r.Tenant}, &tenantKey{tenant: successor(r.Tenant)}, each)
	case !r.AllTenants:
		from := &tenantKey{tenant: r.Tenant, level: r.Level}
		if r.Level == maxLevel {
			s.tenantIndex().AscendRange(from, &tenantKey{tenant: successor(r.Tenant)}, each)
		} else {
			s.tenantIndex().AscendRange(from, &tenantKey{tenant: r.Tenant, level: r.Level + 1}, each)
		}
	default: // one level across tenants: seek each tenant's level
		s.eachAtLevel(r.Level, tenantKey{level: r.Level}, func(k *tenantKey) bool { fn(k); return true })
	}
}
