package scheduler_test

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/lease"
	"github.com/compactkit/compactkit/scheduler"
)

// model is a plain reimplementation of the scheduler: maps and brute force,
// no indexes. The state-machine test compares the scheduler with it.
type model struct {
	cfg       scheduler.Config
	jobs      map[string]*mJob
	done      map[string]mDone
	rules     map[scheduler.PauseRule]bool
	lastEntry uint64
	c         scheduler.Counters
	// def and pols are the tenant policies: the default and the tenants'
	// own.
	def  scheduler.Limits
	pols map[string]scheduler.Limits
}

type mJob struct {
	st   ck.JobState
	plan ck.JobPlan
}

type mDone struct {
	token fencing.Token
	at    int64
}

func newModel(cfg scheduler.Config) *model {
	return &model{cfg: cfg, jobs: map[string]*mJob{}, done: map[string]mDone{}, rules: map[scheduler.PauseRule]bool{},
		pols: map[string]scheduler.Limits{}}
}

// policy is the tenant's effective policy.
func (m *model) policy(tenant string) scheduler.Limits {
	if p, ok := m.pols[tenant]; ok {
		return p
	}
	return m.def
}

// closed reports whether the tenant's policy holds its new work at a
// level: closed altogether, or that level's bit set.
func (m *model) closed(tenant string, level uint32) bool {
	p := m.policy(tenant)
	return p.Closed || level < 64 && (p.ClosedLevels>>level)&1 == 1
}

// inProgress counts the tenant's jobs in progress.
func (m *model) inProgress(tenant string) int {
	n := 0
	for _, j := range m.jobs {
		if j.st.Tenant == tenant && j.st.Status == ck.StatusInProgress {
			n++
		}
	}
	return n
}

// capped reports whether the tenant, with extra more jobs in progress, is
// at its cap.
func (m *model) capped(tenant string, extra int) bool {
	p := m.policy(tenant)
	return p.MaxInProgress > 0 && m.inProgress(tenant)+extra >= int(p.MaxInProgress)
}

// shardCapped reports whether the tenant's shard, with extra more jobs in
// progress, is at the tenant's per-shard cap.
func (m *model) shardCapped(tenant string, shard uint32, extra int) bool {
	p := m.policy(tenant)
	if p.MaxPerShard == 0 {
		return false
	}
	n := extra
	for _, j := range m.jobs {
		if j.st.Tenant == tenant && j.plan.Shard == shard && j.st.Status == ck.StatusInProgress {
			n++
		}
	}
	return n >= int(p.MaxPerShard)
}

func (m *model) paused(tenant string, level uint32) bool {
	for r := range m.rules {
		if (r.AllTenants || r.Tenant == tenant) && (r.AllLevels || r.Level == level) {
			return true
		}
	}
	return false
}

func (m *model) atLimit(failures uint32) bool {
	return m.cfg.MaxFailures > 0 && failures+1 >= m.cfg.MaxFailures
}

func (m *model) threshold(level uint32) time.Duration {
	a := m.cfg.AgingThreshold
	switch {
	case level == 0 || len(a) == 0:
		return 0
	case int(level) >= len(a):
		return a[len(a)-1]
	default:
		return a[level]
	}
}

func (m *model) sorted() []*mJob {
	out := slices.Collect(maps.Values(m.jobs))
	slices.SortFunc(out, func(a, b *mJob) int { return cmp.Compare(a.st.Name, b.st.Name) })
	return out
}

// --- Apply -----------------------------------------------------------------

type mTx struct {
	m     *model
	e     ck.Entry
	now   int64
	token fencing.Token
	stale bool
	pre   map[string]uint64
}

type mResult struct {
	applied   bool
	after     ck.JobState
	prevToken fencing.Token
}

func (m *model) begin(e ck.Entry, now int64, tokenIndex uint64) *mTx {
	tx := &mTx{m: m, e: e, now: now, token: fencing.Token(e.Index), pre: map[string]uint64{}}
	if tokenIndex != 0 {
		tx.token = fencing.Token(tokenIndex)
	}
	if e.Index == 0 || e.Index <= m.lastEntry || tokenIndex > e.Index {
		tx.stale = true
	} else {
		m.lastEntry = e.Index
	}
	return tx
}

func (tx *mTx) apply(c *ck.Change) mResult {
	m := tx.m
	if tx.stale {
		return mResult{}
	}
	skip := func() mResult { m.c.Skipped++; return mResult{} }
	if c.Kind < ck.ChangeAdd || c.Kind > ck.ChangeCancel {
		return skip()
	}
	j := m.jobs[c.Job]
	pre, ok := tx.pre[c.Job]
	if !ok && j != nil {
		pre = j.st.Version
	}
	if c.Kind != ck.ChangeCancel && pre != c.Version {
		return skip()
	}
	touch := func() {
		if _, ok := tx.pre[c.Job]; !ok {
			if j != nil {
				tx.pre[c.Job] = j.st.Version
			} else {
				tx.pre[c.Job] = 0
			}
		}
	}
	if c.Kind == ck.ChangeAdd {
		_, completed := m.done[c.Job]
		if c.Plan == nil || c.Plan.Name != c.Job || j != nil || completed ||
			(m.cfg.MaxQueueSize > 0 && len(m.jobs) >= m.cfg.MaxQueueSize) || m.paused(c.Plan.Tenant, c.Plan.Level) ||
			m.closed(c.Plan.Tenant, c.Plan.Level) {
			return skip()
		}
		touch()
		nj := &mJob{plan: *c.Plan, st: ck.JobState{Name: c.Job, Tenant: c.Plan.Tenant, Level: c.Plan.Level,
			Status: ck.StatusUnassigned, Token: tx.token, Version: tx.e.Index, AddedAt: tx.now}}
		m.jobs[c.Job] = nj
		m.c.Added++
		return mResult{applied: true, after: nj.st}
	}
	if j == nil {
		return skip()
	}
	st := j.st
	inProgress := st.Status == ck.StatusInProgress
	expired := inProgress && tx.now > st.Deadline
	owns := inProgress && c.Token == st.Token && c.Worker == st.Worker
	// event appends to the history (a new slice: j.st shares the old).
	event := func(kind ck.JobEventKind, token fencing.Token, worker, detail string) {
		st.History = mEvent(st.History, ck.JobEvent{At: tx.now, Kind: kind, Token: token, Worker: worker, Detail: ck.ClipReason(detail)})
	}
	failed := func(reason string) {
		st.LastFailure, st.FailedAt = ck.ClipReason(cmp.Or(reason, scheduler.ReasonUnstated)), tx.now
	}
	r := mResult{applied: true}
	switch c.Kind {
	case ck.ChangeAssign:
		if c.Worker == "" || m.paused(st.Tenant, st.Level) || m.closed(st.Tenant, st.Level) || st.Status == ck.StatusExcluded ||
			(inProgress && !expired) || (expired && m.atLimit(st.Failures)) ||
			(st.Status == ck.StatusUnassigned && (m.capped(st.Tenant, 0) || m.shardCapped(st.Tenant, j.plan.Shard, 0))) ||
			(st.Worker == "" && tx.token < st.Token) || (st.Worker != "" && tx.token <= st.Token) {
			return skip()
		}
		if expired {
			st.Failures++
			failed(scheduler.ReasonLeaseExpired)
			event(ck.EventLeaseExpired, st.Token, st.Worker, "")
			r.prevToken = st.Token
			m.c.Reassigned++
		} else {
			m.c.Assigned++
		}
		st.Status, st.Token, st.Worker = ck.StatusInProgress, tx.token, c.Worker
		st.Deadline = lease.Grant(tx.now, m.cfg.LeaseDuration)
		event(ck.EventAssigned, tx.token, c.Worker, "")
	case ck.ChangeExclude:
		if !expired || !m.atLimit(st.Failures) {
			return skip()
		}
		st.Status = ck.StatusExcluded
		st.Failures++
		failed(scheduler.ReasonLeaseExpired)
		event(ck.EventLeaseExpired, st.Token, st.Worker, "")
		event(ck.EventExcluded, 0, "", "")
		r.prevToken = st.Token
		m.c.Excluded++
	case ck.ChangeRenew:
		if !owns {
			return skip()
		}
		st.Deadline = lease.Extend(st.Deadline, tx.now, m.cfg.LeaseDuration)
		m.c.Renewed++
	case ck.ChangeComplete:
		if !owns {
			return skip()
		}
		touch()
		delete(m.jobs, c.Job)
		m.done[c.Job] = mDone{token: st.Token, at: tx.now}
		m.c.Completed++
		return r
	case ck.ChangeFail:
		if !owns {
			return skip()
		}
		failed(c.Reason)
		event(ck.EventFailed, st.Token, st.Worker, st.LastFailure)
		if m.atLimit(st.Failures) {
			st.Status = ck.StatusExcluded
			event(ck.EventExcluded, 0, "", "")
			m.c.Excluded++
		} else {
			st.Status = ck.StatusUnassigned
		}
		st.Failures++
		r.prevToken = j.st.Token
		m.c.Failed++
	case ck.ChangeRelease:
		if !owns {
			return skip()
		}
		st.Status = ck.StatusUnassigned
		event(ck.EventReleased, st.Token, st.Worker, "")
		r.prevToken = j.st.Token
		m.c.Released++
	case ck.ChangeEvict:
		if st.Status != ck.StatusExcluded || m.cfg.MaxQueueSize <= 0 || len(m.jobs) < m.cfg.MaxQueueSize {
			return skip()
		}
		touch()
		delete(m.jobs, c.Job)
		m.c.Evicted++
		return r
	case ck.ChangeCancel:
		touch()
		return m.cancel(c.Job)
	}
	touch()
	st.Version = tx.e.Index
	j.st = st
	r.after = st
	return r
}

func (m *model) cancel(name string) mResult {
	j := m.jobs[name]
	delete(m.jobs, name)
	m.c.Cancelled++
	r := mResult{applied: true}
	if j.st.Status == ck.StatusInProgress {
		r.prevToken = j.st.Token
	}
	return r
}

func (m *model) extendLeases(now int64) int {
	target := lease.Grant(now, m.cfg.LeaseDuration)
	n := 0
	for _, j := range m.jobs {
		if j.st.Status == ck.StatusInProgress && j.st.Deadline < target {
			j.st.Deadline = target
			n++
		}
	}
	return n
}

// mEvent returns a new history: h and ev, the oldest events beyond
// compactkit.MaxJobHistory dropped.
func mEvent(h []ck.JobEvent, ev ck.JobEvent) []ck.JobEvent {
	out := append(slices.Clone(h), ev)
	return slices.Clip(out[max(0, len(out)-ck.MaxJobHistory):])
}

func (m *model) retry(e ck.Entry, now int64, name, by string) int {
	n := 0
	for _, j := range m.jobs {
		if j.st.Status == ck.StatusExcluded && (name == "" || name == j.st.Name) {
			j.st.Status, j.st.Failures, j.st.Version = ck.StatusUnassigned, 0, e.Index
			j.st.History = mEvent(j.st.History, ck.JobEvent{At: now, Kind: ck.EventRetried, Detail: ck.ClipReason(by)})
			n++
			m.c.Retried++
		}
	}
	return n
}

func (m *model) expire(now int64) int {
	n := 0
	for name, d := range m.done {
		if now-d.at > int64(m.cfg.CompletedRetention) {
			delete(m.done, name)
			n++
		}
	}
	return n
}

// --- Prepare ---------------------------------------------------------------

// mSched is the model of a schedule: what each call must decide, by brute
// force over every job.
type mSched struct {
	m       *model
	now     int64
	size    int
	touched map[string]bool
	gone    map[string]bool
	added   []*mAdded
	excl    []string // excluded by this schedule, in order
	changes []ck.Change
	own     map[string]int // assignments of unassigned jobs, by tenant
	// ownShard counts the same by tenant and shard.
	ownShard map[mShard]int
}

type mShard struct {
	tenant string
	shard  uint32
}

// waits reports whether an unassigned job of tenant on shard waits for a
// cap, counting this schedule's assignments.
func (ms *mSched) waits(tenant string, shard uint32) bool {
	return ms.m.capped(tenant, ms.own[tenant]) || ms.m.shardCapped(tenant, shard, ms.ownShard[mShard{tenant, shard}])
}

type mAdded struct {
	plan   ck.JobPlan
	handed bool
}

func (m *model) schedule(now int64) *mSched {
	return &mSched{m: m, now: now, size: len(m.jobs), touched: map[string]bool{}, gone: map[string]bool{}, own: map[string]int{}, ownShard: map[mShard]int{}}
}

func (ms *mSched) updateJob(worker string, u *ck.StatusUpdate) bool {
	j := ms.m.jobs[u.Job]
	if j == nil || ms.touched[u.Job] || j.st.Status != ck.StatusInProgress || j.st.Token != u.Token || j.st.Worker != worker {
		return false
	}
	if u.ValidateFor(&j.plan) != nil { // stricter than the scheduler; reports here are otherwise valid
		return false
	}
	kind := map[ck.ReportStatus]ck.ChangeKind{ck.ReportInProgress: ck.ChangeRenew, ck.ReportSuccess: ck.ChangeComplete,
		ck.ReportFailure: ck.ChangeFail, ck.ReportReleased: ck.ChangeRelease}[u.Status]
	if kind == 0 {
		return false
	}
	ms.touched[u.Job] = true
	switch kind {
	case ck.ChangeComplete:
		ms.gone[u.Job] = true
		ms.size--
	case ck.ChangeFail:
		if ms.m.atLimit(j.st.Failures) {
			ms.excl = append(ms.excl, u.Job)
		}
	}
	c := ck.Change{Kind: kind, Job: u.Job, Version: j.st.Version, Token: u.Token, Worker: worker}
	switch kind {
	case ck.ChangeComplete:
		c.Outputs = u.Outputs
	case ck.ChangeFail:
		c.Reason = ck.ClipReason(u.Reason)
	}
	ms.changes = append(ms.changes, c)
	return true
}

// key is the order within an effective level: rank, failures, deadline,
// name.
func key(rank uint8, st ck.JobState) string {
	return fmt.Sprintf("%03d/%010d/%020d/%s", rank, st.Failures, uint64(st.Deadline)^(1<<63), st.Name)
}

// held reports whether new work of the tenant at the level waits: paused,
// closed, or at the cap counting this schedule's assignments.
func (ms *mSched) held(tenant string, level uint32) bool {
	return ms.m.paused(tenant, level) || ms.m.closed(tenant, level) || ms.m.capped(tenant, ms.own[tenant])
}

func (ms *mSched) assignJob(worker string) bool {
	m := ms.m
	type cand struct {
		st     ck.JobState
		rank   uint8
		shard  uint32
		added  *mAdded
		lifted bool // aged, of a lower class than the best: ahead of the rest
	}
	var unassigned []cand // assignable unassigned jobs
	var running []cand
	for _, j := range m.sorted() {
		if ms.touched[j.st.Name] || m.paused(j.st.Tenant, j.st.Level) || m.closed(j.st.Tenant, j.st.Level) {
			continue
		}
		rank := m.policy(j.st.Tenant).Rank
		switch j.st.Status {
		case ck.StatusUnassigned:
			if !ms.waits(j.st.Tenant, j.plan.Shard) {
				unassigned = append(unassigned, cand{st: j.st, rank: rank, shard: j.plan.Shard})
			}
		case ck.StatusInProgress:
			running = append(running, cand{st: j.st, rank: rank})
		}
	}
	for _, a := range ms.added {
		if !a.handed && !ms.waits(a.plan.Tenant, a.plan.Shard) {
			unassigned = append(unassigned, cand{added: a, rank: m.policy(a.plan.Tenant).Rank, shard: a.plan.Shard,
				st: ck.JobState{Name: a.plan.Name, Tenant: a.plan.Tenant, Level: a.plan.Level}})
		}
	}
	best := func(cs []cand) *cand {
		var b *cand
		for i := range cs {
			if b == nil || cs[i].lifted && !b.lifted || cs[i].lifted == b.lifted && key(cs[i].rank, cs[i].st) < key(b.rank, b.st) {
				b = &cs[i]
			}
		}
		return b
	}
	var pick *cand
	expired := false
	// Effective level 0: level-0 jobs and, per level, its oldest waiting
	// job if it waited longer than the level's threshold.
	var pool []cand
	oldest := map[uint32]cand{}
	for _, c := range unassigned {
		if c.st.Level == 0 {
			pool = append(pool, c)
		}
		if c.added != nil {
			continue
		}
		if o, ok := oldest[c.st.Level]; !ok || c.st.AddedAt < o.st.AddedAt || c.st.AddedAt == o.st.AddedAt && c.st.Name < o.st.Name {
			oldest[c.st.Level] = c
		}
	}
	for level, c := range oldest {
		if level == 0 {
			// Class aging: the oldest waiting level-0 job of a lower
			// class competes at rank 0 after level 1's threshold.
			if thr := m.threshold(1); thr > 0 && c.rank > 0 && c.st.AddedAt+int64(thr) < ms.now {
				c.rank, c.lifted = 0, true
				pool = append(pool, c)
			}
			continue
		}
		if thr := m.threshold(level); thr > 0 && c.st.AddedAt+int64(thr) < ms.now {
			c.lifted = c.rank > 0 // a lower class is lifted ahead of the rest
			c.rank = 0            // an aged job competes at rank 0
			pool = append(pool, c)
		}
	}
	pick = best(pool)
	levels := map[uint32]bool{0: true}
	for _, c := range unassigned {
		levels[c.st.Level] = true
	}
	for _, c := range running {
		levels[c.st.Level] = true
	}
	for _, level := range slices.Sorted(maps.Keys(levels)) {
		if pick != nil {
			break
		}
		if level > 0 {
			var at []cand
			for _, c := range unassigned {
				if c.st.Level == level {
					at = append(at, c)
				}
			}
			if pick = best(at); pick != nil {
				break
			}
		}
		var exp []cand
		for _, c := range running {
			if c.st.Level == level && ms.now > c.st.Deadline {
				exp = append(exp, c)
			}
		}
		slices.SortFunc(exp, func(a, b cand) int { return cmp.Compare(key(a.rank, a.st), key(b.rank, b.st)) })
		for _, c := range exp {
			if m.atLimit(c.st.Failures) {
				ms.touched[c.st.Name] = true
				ms.excl = append(ms.excl, c.st.Name)
				ms.changes = append(ms.changes, ck.Change{Kind: ck.ChangeExclude, Job: c.st.Name, Version: c.st.Version})
				continue
			}
			pick, expired = &c, true
			break
		}
	}
	if pick == nil {
		return false
	}
	c := ck.Change{Kind: ck.ChangeAssign, Job: pick.st.Name, Worker: worker}
	if pick.added != nil {
		pick.added.handed = true
	} else {
		c.Version = pick.st.Version
		ms.touched[pick.st.Name] = true
	}
	if !expired {
		ms.own[pick.st.Tenant]++ // a reassignment leaves the count as it is
		ms.ownShard[mShard{pick.st.Tenant, pick.shard}]++
	}
	ms.changes = append(ms.changes, c)
	return true
}

func (ms *mSched) evictJob() bool {
	m := ms.m
	if m.cfg.MaxQueueSize <= 0 || ms.size < m.cfg.MaxQueueSize {
		return false
	}
	var victim *mJob
	for _, j := range m.sorted() {
		if j.st.Status == ck.StatusExcluded && !ms.touched[j.st.Name] &&
			(victim == nil || j.st.Version < victim.st.Version) {
			victim = j
		}
	}
	name, version := "", uint64(0)
	if victim != nil {
		name, version = victim.st.Name, victim.st.Version
	} else {
		for _, n := range ms.excl {
			if !ms.gone[n] {
				name, version = n, m.jobs[n].st.Version
				break
			}
		}
		if name == "" {
			return false
		}
	}
	ms.touched[name], ms.gone[name] = true, true
	ms.size--
	ms.changes = append(ms.changes, ck.Change{Kind: ck.ChangeEvict, Job: name, Version: version})
	return true
}

func (ms *mSched) addJob(p ck.JobPlan) bool {
	m := ms.m
	if m.cfg.MaxQueueSize > 0 && ms.size >= m.cfg.MaxQueueSize {
		return false
	}
	_, exists := m.jobs[p.Name]
	_, completed := m.done[p.Name]
	if exists || completed || m.paused(p.Tenant, p.Level) || m.closed(p.Tenant, p.Level) || ck.ValidateJobName(p.Name) != nil {
		return false
	}
	for _, a := range ms.added {
		if a.plan.Name == p.Name {
			return false
		}
	}
	ms.added = append(ms.added, &mAdded{plan: p})
	ms.size++
	pc := p
	ms.changes = append(ms.changes, ck.Change{Kind: ck.ChangeAdd, Job: p.Name, Plan: &pc})
	return true
}

func (ms *mSched) capacity(free int32) int {
	return max(0, min(int(free), ms.m.cfg.MaxSlotsPerRequest))
}
