package scheduler

import (
	"cmp"
	"math"
	"slices"

	"github.com/compactkit/compactkit/internal/cow"
	"github.com/compactkit/compactkit/internal/ident"
	"github.com/compactkit/compactkit/internal/namekey"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/lease"
)

// Schedule is a read-only view of the scheduler for one poll, stamped with
// the leader's time. Its methods decide what to change and append the
// changes, each carrying the version of the job it was prepared against; the
// scheduler itself is never modified. [Schedule.Update] returns the changes
// for the state machine to propose.
//
// The jobs a schedule has touched (reported, assigned, excluded, evicted or
// added) are kept in a small overlay; everything else is read from the
// scheduler's trees as they were when it was opened (copy-on-write, see the
// package doc), so each method costs O(log n) plus the size of the
// overlay, whatever the size of the queue.
//
// A Schedule is not safe for concurrent use, but it may be used while the
// scheduler it came from applies entries on another goroutine.
type Schedule struct {
	v       view
	now     int64
	size    int // queue size once the changes so far are applied
	changes []ck.Change
	// touched holds the overlays of the view's jobs this schedule changed.
	touched touchedSet
	added   []*overlay // jobs added, in order
	// waiting holds the added jobs not yet handed out, in the order they are
	// handed out: by level, then lessRFDN (waitingLess).
	waiting []*overlay
	excl    []*overlay   // jobs excluded by this schedule, in order
	slab    []overlay    // storage for overlays
	plans   []ck.JobPlan // storage for added plans
	heads   []head       // cached index heads
	headBuf [4]head      // first heads, without an allocation
	// freeCaps makes the jobs in progress this schedule ends count off
	// their tenant's caps (FreeCaps); freed lists the capped tenants it
	// ended jobs of, in order, whose jobs the view holds at a cap it
	// offers (freedHead).
	freeCaps bool
	freed    []string
	// lims holds the capped tenants this schedule assigned or added jobs
	// for, and nfull how many of them are full: at their cap with the
	// view's jobs in progress and this schedule's assignments.
	lims  map[string]*tenantLim
	nfull int
	// slims holds, in the same way, the (tenant, shard) pairs with a
	// per-shard cap this schedule assigned or added jobs for; nfull counts
	// the full ones too.
	slims map[tenantShard]*tenantLim
	// pol caches the view's policy lookups of this schedule: planning asks
	// about the same few tenants many times (once per key it visits), and
	// the view's tenant index may hold many. last and lastTenant memo the
	// latest lookup in front of the map: planning visits the keys of one
	// tenant in a row.
	pol        map[string]polEntry
	last       polEntry
	lastTenant string
	hasLast    bool
	probe      job
	closed     bool
	// lastBase memoes base's latest lookup: a request's report is looked
	// up to validate it, then to update it.
	lastBase named
}

// polEntry is a cached policyOf result.
type polEntry struct {
	p      Limits
	n      int
	shards []shardCount
}

// tenantShard is a shard of a tenant.
type tenantShard struct {
	tenant string
	shard  uint32
}

// policyOf returns the effective policy of tenant in the view and its
// count of jobs in progress there, cached for the schedule.
func (sc *Schedule) policyOf(tenant string) (Limits, int) {
	e := sc.polEntry(tenant)
	return e.p, e.n
}

// polEntry returns the view's policy entry of tenant, cached for the
// schedule.
func (sc *Schedule) polEntry(tenant string) polEntry {
	if sc.v.tenants.Peek().Len() == 0 {
		return polEntry{p: sc.v.def}
	}
	if sc.hasLast && sc.lastTenant == tenant {
		return sc.last
	}
	e, ok := sc.pol[tenant]
	if !ok {
		p, n, shards := policyOf(sc.v.tenants.Peek(), sc.v.def, tenant)
		if sc.pol == nil {
			sc.pol = make(map[string]polEntry)
		}
		e = polEntry{p, n, shards}
		sc.pol[tenant] = e
	}
	sc.last, sc.lastTenant, sc.hasLast = e, tenant, true
	return e
}

// tenantLim is a capped tenant as a schedule sees it.
type tenantLim struct {
	max   uint32 // the cap (> 0)
	count int    // jobs in progress in the view
	own   int    // assignments of unassigned jobs by this schedule
	freed int    // jobs in progress of the view this schedule ended (FreeCaps)
}

func (l *tenantLim) full() bool { return int64(l.count-l.freed+l.own) >= int64(l.max) }

// head caches the first untouched job of an index from a level on. It stays
// right until that job is touched (the touched set only grows), and is then
// searched again from where it was.
type head struct {
	aging bool // the aging index, else the ready index
	level uint32
	j     *job // nil: none
}

// overlay is the projected state of a job this schedule touched.
type overlay struct {
	st      ck.JobState
	plan    *ck.JobPlan
	version uint64 // the job's version before the entry (0 for a new job)
	gone    bool   // completed or evicted by this schedule
	// tail is, for a job added by this schedule, the last 8 bytes of its
	// name as a word (see addedNamed).
	tail uint64
	// rank and capped are, for a job added by this schedule, its tenant's
	// rank and whether the tenant has a cap (then it is in lims, and in
	// slims for a per-shard cap).
	rank   uint8
	capped bool
}

// Schedule opens a read-only view for one poll at the leader's time now
// (unix nanoseconds). It is O(1) (see the package doc, "Cost"); close it
// with [Schedule.Close] once the poll is prepared.
//
// Opening a schedule must not run concurrently with the scheduler's other
// methods (call it under the state machine's lock); using it may.
func (s *Scheduler) Schedule(now int64) *Schedule {
	sc := &Schedule{now: now, size: s.byName.Len()}
	s.open(&sc.v)
	sc.heads = sc.headBuf[:0]
	return sc
}

// Close tells the scheduler that the schedule will not be read again, so
// that its next change need not preserve the trees for it: a change after
// every schedule of a view is closed copies nothing (see the package doc,
// "Cost"). Closing is optional (an open schedule costs the next change
// copy-on-write copies) and idempotent. [Schedule.Update] still returns
// the changes; the other methods of a closed schedule find no job and
// change nothing.
func (sc *Schedule) Close() {
	sc.v.mu.Lock()
	defer sc.v.mu.Unlock()
	if !sc.closed {
		sc.closed = true
		cow.Close(sc.v.list())
	}
}

// lock locks the view for a method that reads its trees and reports
// whether the schedule is open; the method then calls unlock. A change of
// the scheduler waits for it, so the trees it reads stay as they were when
// the schedule was opened.
func (sc *Schedule) lock() bool {
	sc.v.mu.Lock()
	if sc.closed {
		sc.v.mu.Unlock()
		return false
	}
	return true
}

func (sc *Schedule) unlock() { sc.v.mu.Unlock() }

// grow returns the capacity of the next chunk of a schedule's storage: a
// small first chunk for the common small poll, then bigger steps (16, 64,
// 256, ...).
func grow(n int) int {
	if n == 0 {
		return 16
	}
	return 4 * n
}

// growChunk returns the capacity of the next chunk of overlays or plans,
// which live in chunks that are never moved: 16, then 48 (64 in all, a
// full poll of the default slot cap), then 192, and at most 256.
func growChunk(n int) int {
	if n == 0 {
		return 16
	}
	return min(3*n, 256)
}

// newOverlay returns a new overlay. Overlays live in chunks that are never
// moved, so pointers to them stay valid.
func (sc *Schedule) newOverlay() *overlay {
	if len(sc.slab) == cap(sc.slab) {
		sc.slab = make([]overlay, 0, growChunk(cap(sc.slab)))
	}
	sc.slab = sc.slab[:len(sc.slab)+1]
	return &sc.slab[len(sc.slab)-1]
}

// touch records that the schedule changes j, a job of the view.
func (sc *Schedule) touch(j *job) *overlay {
	o := sc.newOverlay()
	o.st, o.plan, o.version = j.st, j.plan, j.st.Version
	sc.touched.put(j, o)
	return o
}

func (sc *Schedule) isTouched(j *job) bool {
	return sc.touched.get(j) != nil
}

// addedNamed returns the job named name that this schedule added, or nil.
// It compares the names' last words first: names share long prefixes
// (their keys'), and planned ones end in a hash (at 1,024 jobs added,
// BenchmarkScheduleAdded takes two thirds of the time it takes without).
func (sc *Schedule) addedNamed(name string) *overlay {
	t := nameTail(name)
	for _, o := range sc.added {
		if o.tail == t && o.st.Name == name {
			return o
		}
	}
	return nil
}

// nameTail returns the last 8 bytes of name (all of a shorter one) as a
// word.
func nameTail(name string) uint64 {
	return namekey.Word(name, max(0, len(name)-8))
}

// waitingLess orders the added jobs not yet handed out: by level, then
// lessRFDN, the order in which addedHead hands them out.
func waitingLess(a, b *overlay) bool {
	if a.st.Level != b.st.Level {
		return a.st.Level < b.st.Level
	}
	return lessRFDN(a.rank, &a.st, b.rank, &b.st)
}

// waitingFrom returns the position in waiting of the first added job not yet
// handed out at level or above.
func (sc *Schedule) waitingFrom(level uint32) int {
	i, _ := slices.BinarySearchFunc(sc.waiting, level, func(o *overlay, l uint32) int { return cmp.Compare(o.st.Level, l) })
	return i
}

// waitingAt returns o's position in waiting: where it is, or where it
// goes (added jobs have distinct names, so none ties with it).
func (sc *Schedule) waitingAt(o *overlay) int {
	i, _ := slices.BinarySearchFunc(sc.waiting, o, func(x, o *overlay) int {
		if waitingLess(x, o) {
			return -1
		}
		return 0
	})
	return i
}

// hand removes o, an added job about to be handed out, from waiting.
func (sc *Schedule) hand(o *overlay) {
	i := sc.waitingAt(o)
	sc.waiting = slices.Delete(sc.waiting, i, i+1)
}

// base returns the job named name in the view, or nil.
func (sc *Schedule) base(name string) *job {
	if l := sc.lastBase; l.j != nil && l.n.String() == name {
		return l.j
	}
	r, _ := sc.v.byName.Peek().Get(nameProbe(name))
	if r.j != nil {
		sc.lastBase = r
	}
	return r.j
}

func (sc *Schedule) emit(c ck.Change) {
	if len(sc.changes) == cap(sc.changes) {
		sc.changes = append(make([]ck.Change, 0, grow(cap(sc.changes))), sc.changes...)
	}
	sc.changes = append(sc.changes, c)
}

// Job returns the state and plan of the named job as this schedule's changes
// so far would leave it (a job completed or evicted by the schedule is gone;
// the token of an assignment is decided at Apply and shows as the job's
// previous token).
//
// Versions show as 0 on the jobs the schedule changed: Apply decides them.
func (sc *Schedule) Job(name string) (ck.JobState, *ck.JobPlan, bool) {
	if !sc.lock() {
		return ck.JobState{}, nil, false
	}
	defer sc.unlock()
	o := sc.addedNamed(name)
	if j := sc.base(name); j != nil {
		if o = sc.touched.get(j); o == nil {
			return j.st, j.plan, true
		}
	}
	if o == nil || o.gone {
		return ck.JobState{}, nil, false
	}
	return o.st, o.plan, true
}

// Held reports whether new jobs of tenant at level would wait: the tenant
// or level is paused, the tenant's policy is closed at the level
// ([Limits].Closed, ClosedLevels),
// or the tenant is at its cap of jobs in progress — in the view, or with
// the jobs this schedule has assigned it. The planner skips held tenants.
// It costs a lookup in the tenant policies.
func (sc *Schedule) Held(tenant string, level uint32) bool {
	if sc.v.pauses.paused(tenant, level) || !sc.lock() {
		return true
	}
	defer sc.unlock()
	p, n := sc.policyOf(tenant)
	switch {
	case p.closed(level):
		return true
	case p.MaxInProgress == 0:
		return false
	}
	if l := sc.lims[tenant]; l != nil {
		n += l.own - l.freed
	}
	return p.capped(n)
}

// lim returns the schedule's record of tenant, which has a cap, making it
// if needed.
func (sc *Schedule) lim(tenant string) *tenantLim {
	return limRecord(sc, &sc.lims, tenant, func() *tenantLim {
		p, n := sc.policyOf(tenant)
		return &tenantLim{max: p.MaxInProgress, count: n}
	})
}

// slim returns the schedule's record of a shard of tenant, which has a
// per-shard cap, making it if needed.
func (sc *Schedule) slim(tenant string, shard uint32) *tenantLim {
	return limRecord(sc, &sc.slims, tenantShard{tenant, shard}, func() *tenantLim {
		e := sc.polEntry(tenant)
		return &tenantLim{max: e.p.MaxPerShard, count: shardN(e.shards, shard)}
	})
}

// limRecord returns the record of k in *m (lims or slims), making it with
// newLim if needed and counting it in nfull if it is full.
func limRecord[K comparable](sc *Schedule, m *map[K]*tenantLim, k K, newLim func() *tenantLim) *tenantLim {
	if l := (*m)[k]; l != nil {
		return l
	}
	l := newLim()
	if *m == nil {
		*m = make(map[K]*tenantLim)
	}
	(*m)[k] = l
	if l.full() {
		sc.nfull++
	}
	return l
}

// limits makes the schedule's records of the caps of a job of tenant on
// shard, under the view's policy p.
func (sc *Schedule) limits(tenant string, shard uint32, p Limits) {
	if p.MaxInProgress > 0 {
		sc.lim(tenant)
	}
	if p.MaxPerShard > 0 {
		sc.slim(tenant, shard)
	}
}

// countCaps counts one assignment of an unassigned job of tenant on shard
// against the caps of the view's policy of the tenant.
func (sc *Schedule) countCaps(tenant string, shard uint32) {
	p, _ := sc.policyOf(tenant)
	if p.MaxInProgress > 0 {
		sc.count(sc.lim(tenant))
	}
	if p.MaxPerShard > 0 {
		sc.count(sc.slim(tenant, shard))
	}
}

// full reports whether this schedule filled the tenant, or the tenant's
// shard, to its cap.
func (sc *Schedule) full(tenant string, shard uint32) bool {
	if l := sc.lims[tenant]; l != nil && l.full() {
		return true
	}
	if len(sc.slims) == 0 {
		return false
	}
	l := sc.slims[tenantShard{tenant, shard}]
	return l != nil && l.full()
}

// passed reports whether AssignJob passes over a job of the view: its
// tenant, or its shard, became full in this schedule.
func (sc *Schedule) passed(j *job) bool {
	if sc.nfull == 0 || !j.hasCap {
		return false
	}
	return sc.full(j.st.Tenant, j.shard())
}

// heldAdded reports whether a job added by this schedule waits for its
// tenant's cap or its shard's.
func (sc *Schedule) heldAdded(o *overlay) bool {
	return o.capped && sc.nfull > 0 && sc.full(o.st.Tenant, o.plan.Shard)
}

// Capacity returns how many jobs a poll with freeSlots free slots may be
// given: freeSlots capped at Config.MaxSlotsPerRequest, and never negative.
// The schedule makes room for that many assignments and as many new jobs.
func (sc *Schedule) Capacity(freeSlots int32) int {
	n := max(0, min(int(freeSlots), sc.v.cfg.MaxSlotsPerRequest))
	if len(sc.changes)+2*n > cap(sc.changes) {
		sc.changes = append(make([]ck.Change, 0, len(sc.changes)+2*n), sc.changes...)
	}
	return n
}

// UpdateJob turns a worker's status report into a change: renew (in
// progress), complete (success), fail (failure) or release (released). It
// appends the change and returns true only when the worker holds the job:
// the job is in progress, assigned to the worker, and the report's token is
// the job's token ([fencing.Owns]), and this schedule has not already
// changed it. A failure's change carries the report's reason, clipped
// to 1024 bytes. Otherwise
// it returns false and changes nothing: the answer is "no lease", or
// "completed" if [Scheduler.CompletedToken] equals the report's token.
//
// A success without outputs for a job with sources returns false too (see
// [ck.StatusUpdate.ValidateFor]; the state machine validates requests fully
// before this). A success carries the
// report's outputs (shared, not copied). A failure
// counts one failure: the job becomes unassigned, or excluded at the failure
// limit. A job reported in this schedule is not assigned again by it.
func (sc *Schedule) UpdateJob(worker string, u *ck.StatusUpdate) bool {
	if u == nil || !sc.lock() {
		return false
	}
	defer sc.unlock()
	j := sc.base(u.Job)
	if j == nil || sc.isTouched(j) || !fencing.Owns(j.st.Status == ck.StatusInProgress, j.st.Token, u.Token) ||
		j.st.Worker != worker {
		return false
	}
	if u.Status == ck.ReportSuccess && len(j.plan.Sources) > 0 && len(u.Outputs) == 0 {
		return false // a success without outputs must never complete a job
	}
	c := ck.Change{Job: u.Job, Version: j.st.Version, Token: u.Token, Worker: worker}
	switch u.Status {
	case ck.ReportInProgress:
		c.Kind = ck.ChangeRenew
	case ck.ReportSuccess:
		c.Kind, c.Outputs = ck.ChangeComplete, u.Outputs
	case ck.ReportFailure:
		c.Kind = ck.ChangeFail
		c.Reason = ident.ClipReason(u.Reason)
	case ck.ReportReleased:
		c.Kind = ck.ChangeRelease
	default:
		return false
	}
	o := sc.touch(j)
	if sc.freeCaps && j.hasCap && c.Kind != ck.ChangeRenew {
		sc.free(j)
	}
	switch c.Kind {
	case ck.ChangeRenew:
		o.st.Deadline = lease.Extend(o.st.Deadline, sc.now, sc.v.cfg.LeaseDuration)
	case ck.ChangeComplete:
		o.gone = true
		sc.size--
	case ck.ChangeFail:
		if sc.v.cfg.atLimit(o.st.Failures) {
			o.st.Status = ck.StatusExcluded
			sc.excl = append(sc.excl, o)
		} else {
			o.st.Status = ck.StatusUnassigned
		}
		o.st.Failures++
	case ck.ChangeRelease:
		o.st.Status = ck.StatusUnassigned
	}
	o.st.Version = 0
	sc.emit(c)
	return true
}

// candidate is a job AssignJob may hand out: a job of the view (j) or one
// added by this schedule (o).
type candidate struct {
	st      *ck.JobState
	j       *job
	o       *overlay
	rank    uint8 // the rank it competes at
	expired bool
	// lifted marks an aged job of a lower class than the best: it goes
	// ahead of every job that is not lifted (see pick).
	lifted bool
}

func (c *candidate) ok() bool { return c.st != nil }

// better reports whether x, at rank r, comes before c within an effective
// level.
func (c *candidate) better(r uint8, x *ck.JobState) bool {
	return c.betterLifted(false, r, x)
}

// betterLifted is better for a candidate that may be lifted: lifted ones
// come first, then the order of better.
func (c *candidate) betterLifted(lifted bool, r uint8, x *ck.JobState) bool {
	if c.st == nil {
		return true
	}
	if lifted != c.lifted {
		return lifted
	}
	return lessRFDN(r, x, c.rank, c.st)
}

// AssignJob appends one assign change for worker and returns true, or
// returns false when nothing is assignable. On the way it appends an exclude
// change for every expired job at the failure limit it meets.
//
// The order is by effective level — a job's level, or 0 for an unassigned
// job that has waited (since it was added) longer than its level's aging
// threshold — and within an effective level unassigned jobs first (lower
// tenant rank, then fewer failures, then earlier deadline, then name), then
// in-progress jobs whose lease expired (now > deadline; same order), whose
// reassignment counts a failure. Aged jobs of a level enter level 0 oldest
// first, at rank 0, and compete with the level-0 jobs by rank, failures,
// deadline and name.
//
// Jobs added earlier in this schedule are assignable; a job is handed out
// at most once per schedule, and a job this schedule reported on, excluded
// or evicted is not handed out by it. Jobs of paused tenants or levels, and
// of closed tenants, are not assigned; nor are the unassigned jobs of a
// tenant at its cap ([Limits].MaxInProgress), counting the jobs this
// schedule assigned it (an expired job's reassignment does not count).
func (sc *Schedule) AssignJob(worker string) bool {
	if worker == "" || !sc.lock() {
		return false
	}
	defer sc.unlock()
	c := sc.pick()
	if !c.ok() {
		return false
	}
	ch := ck.Change{Kind: ck.ChangeAssign, Worker: worker}
	var o *overlay
	if c.o != nil {
		o = c.o
		sc.hand(o)
		ch.Job, ch.Version = o.st.Name, 0
		if o.capped {
			sc.countCaps(o.st.Tenant, o.plan.Shard)
		}
	} else {
		o = sc.touch(c.j)
		ch.Job, ch.Version = c.j.st.Name, c.j.st.Version
		if c.j.hasCap && !c.expired {
			sc.countCaps(c.j.st.Tenant, c.j.shard())
		}
	}
	if c.expired {
		o.st.Failures++
	}
	o.st.Status = ck.StatusInProgress
	o.st.Deadline = lease.Grant(sc.now, sc.v.cfg.LeaseDuration)
	o.st.Worker = worker
	o.st.Version = 0
	sc.emit(ch)
	return true
}

// count counts one assignment of an unassigned job of a capped tenant.
func (sc *Schedule) count(l *tenantLim) {
	was := l.full()
	l.own++
	if !was && l.full() {
		sc.nfull++
	}
}

// pick finds the next job to assign, appending exclude changes on the way.
func (sc *Schedule) pick() candidate {
	// Effective level 0: level-0 jobs and aged jobs of any level.
	var best candidate
	if j := sc.readyHead(0); j != nil {
		best = candidate{st: &j.st, j: j, rank: j.rank}
	}
	sc.addedHead(0, &best)
	sc.freedHead(0, &best)
	if t := sc.v.cfg.agingThreshold(1); t > 0 {
		// Class aging: level 0 ages into no other level, so the oldest
		// waiting level-0 job of a lower class competes as the best
		// class once it has waited level 1's threshold — a Low tenant's
		// job never waits behind a High tenant's for ever.
		if j := sc.agingHead(0); j != nil && j.st.Level == 0 && j.rank > 0 {
			if cut, ok := agedCutoff(sc.now, t); ok && j.st.AddedAt <= cut && best.betterLifted(true, 0, &j.st) {
				best = candidate{st: &j.st, j: j, lifted: true}
			}
		}
	}
	if sc.v.cfg.agesAbove(1) {
		for level := uint32(1); ; {
			j := sc.agingHead(level)
			if j == nil {
				break
			}
			// An aged job competes at rank 0; one of a lower class is
			// lifted ahead of the rest, so that its wait is bounded.
			if cut, ok := agedCutoff(sc.now, sc.v.cfg.agingThreshold(j.st.Level)); ok && j.st.AddedAt <= cut && best.betterLifted(j.rank > 0, 0, &j.st) {
				best = candidate{st: &j.st, j: j, lifted: j.rank > 0}
			}
			if j.st.Level == maxLevel {
				break
			}
			level = j.st.Level + 1
		}
	}
	if best.ok() {
		return best
	}
	if c := sc.expiredHead(0); c.ok() {
		return c
	}
	// Levels 1 and up, in order.
	for level := uint32(1); ; {
		l, ok := sc.nextLevel(level)
		if !ok {
			return candidate{}
		}
		if j := sc.readyHead(l); j != nil {
			best = candidate{st: &j.st, j: j, rank: j.rank}
		}
		sc.addedHead(l, &best)
		sc.freedHead(l, &best)
		if best.ok() {
			return best
		}
		if c := sc.expiredHead(l); c.ok() {
			return c
		}
		if l == maxLevel {
			return candidate{}
		}
		level = l + 1
	}
}

// readyHead returns the first untouched unassigned job of the level.
func (sc *Schedule) readyHead(level uint32) *job {
	return sc.cachedHead(false, level)
}

// agingHead returns the oldest untouched unassigned job of the first level
// at or above level that has one.
func (sc *Schedule) agingHead(level uint32) *job {
	return sc.cachedHead(true, level)
}

func (sc *Schedule) cachedHead(aging bool, level uint32) *job {
	var h *head
	for i := range sc.heads {
		if sc.heads[i].aging == aging && sc.heads[i].level == level {
			h = &sc.heads[i]
			break
		}
	}
	if h != nil && (h.j == nil || !sc.isTouched(h.j) && !sc.passed(h.j)) {
		return h.j
	}
	if h == nil {
		sc.heads = append(sc.heads, head{aging: aging, level: level})
		h = &sc.heads[len(sc.heads)-1]
		sc.probe.rank = 0
		if aging {
			sc.probe.st = ck.JobState{Level: level, AddedAt: math.MinInt64}
		} else {
			sc.probe.st = ck.JobState{Level: level, Deadline: math.MinInt64}
		}
		h.j = sc.firstUntouched(aging, level, &sc.probe)
	} else {
		h.j = sc.firstUntouched(aging, level, h.j)
	}
	return h.j
}

// firstUntouched returns the first untouched job at or after from in the
// aging index, or in the ready index if it is of the level, passing over
// the jobs of tenants this schedule filled to their cap (the set of those
// only grows, like the touched set).
func (sc *Schedule) firstUntouched(aging bool, level uint32, from *job) *job {
	tree := sc.v.ready.Peek()
	if aging {
		tree = sc.v.aging.Peek()
	}
	var found *job
	tree.AscendGreaterOrEqual(from, func(j *job) bool {
		if !aging && j.st.Level != level {
			return false
		}
		if sc.isTouched(j) || sc.passed(j) {
			return true
		}
		found = j
		return false
	})
	return found
}

// addedHead puts into best the first assignable job added by this schedule
// at the level, if it comes before best.
func (sc *Schedule) addedHead(level uint32, best *candidate) {
	for _, o := range sc.waiting[sc.waitingFrom(level):] {
		if o.st.Level != level {
			return
		}
		if !sc.heldAdded(o) {
			if best.better(o.rank, &o.st) {
				*best = candidate{st: &o.st, o: o, rank: o.rank}
			}
			return
		}
	}
}

// nextLevel returns the lowest level at or above level that has an
// unassigned or in-progress active job, or an assignable added job.
func (sc *Schedule) nextLevel(level uint32) (uint32, bool) {
	sc.probe.rank = 0
	sc.probe.st = ck.JobState{Level: level, Deadline: math.MinInt64}
	next, ok := uint32(0), false
	consider := func(j *job) bool {
		if !ok || j.st.Level < next {
			next, ok = j.st.Level, true
		}
		return false
	}
	sc.v.ready.Peek().AscendGreaterOrEqual(&sc.probe, consider)
	sc.v.expiry.Peek().AscendGreaterOrEqual(&sc.probe, consider)
	for _, o := range sc.waiting[sc.waitingFrom(level):] {
		if !sc.heldAdded(o) {
			if !ok || o.st.Level < next {
				next, ok = o.st.Level, true
			}
			break
		}
	}
	for _, tenant := range sc.freed {
		if j := sc.freedFirst(tenant, level, true); j != nil && (!ok || j.st.Level < next) {
			next, ok = j.st.Level, true
		}
	}
	return next, ok
}

// expiredHead returns the first untouched expired job of the level that is
// below the failure limit, appending an exclude change for each untouched
// expired job at the limit it passes. It walks the (rank, failures) groups
// of the level, whose expired jobs are a prefix.
func (sc *Schedule) expiredHead(level uint32) candidate {
	var found *job
	for r, f := uint8(0), uint32(0); ; {
		sc.probe.rank = r
		sc.probe.st = ck.JobState{Level: level, Failures: f, Deadline: math.MinInt64}
		rank, group, seen, end := r, f, false, false
		sc.v.expiry.Peek().AscendGreaterOrEqual(&sc.probe, func(j *job) bool {
			if j.st.Level != level {
				end = true
				return false
			}
			if !seen {
				rank, group, seen = j.rank, j.st.Failures, true
			}
			if j.rank != rank || j.st.Failures != group || sc.now <= j.st.Deadline {
				return false // the group's expired prefix ends here
			}
			if sc.isTouched(j) {
				return true
			}
			if sc.v.cfg.atLimit(j.st.Failures) {
				sc.exclude(j)
				return true
			}
			found = j
			return false
		})
		sc.probe.rank = 0
		switch {
		case found != nil:
			return candidate{st: &found.st, j: found, rank: found.rank, expired: true}
		case end || !seen:
			return candidate{}
		}
		var more bool
		if r, f, more = nextGroup(rank, group); !more {
			return candidate{}
		}
	}
}

// nextGroup returns the (rank, failures) group after (r, f) within a
// level, and false after the last.
func nextGroup(r uint8, f uint32) (uint8, uint32, bool) {
	switch {
	case f < math.MaxUint32:
		return r, f + 1, true
	case r < math.MaxUint8:
		return r + 1, 0, true
	}
	return 0, 0, false
}

// exclude appends an exclude change for an expired job at the limit.
func (sc *Schedule) exclude(j *job) {
	o := sc.touch(j)
	o.st.Status = ck.StatusExcluded
	o.st.Failures++
	o.st.Version = 0
	sc.excl = append(sc.excl, o)
	sc.emit(ck.Change{Kind: ck.ChangeExclude, Job: j.st.Name, Version: j.st.Version})
}

// EvictJob appends an evict change and returns true when the queue (with
// this schedule's changes) is at or above Config.MaxQueueSize and an
// excluded job remains: the one excluded longest ago, then those this
// schedule excluded. It returns false otherwise, and always when the queue
// is unlimited.
func (sc *Schedule) EvictJob() bool {
	limit := sc.v.cfg.MaxQueueSize
	if limit <= 0 || sc.size < limit || !sc.lock() {
		return false
	}
	defer sc.unlock()
	var victim *job
	sc.v.excluded.Peek().Ascend(func(j *job) bool {
		if sc.isTouched(j) {
			return true
		}
		victim = j
		return false
	})
	var o *overlay
	if victim != nil {
		o = sc.touch(victim)
	} else {
		for _, x := range sc.excl {
			if !x.gone {
				o = x
				break
			}
		}
		if o == nil {
			return false
		}
	}
	o.gone = true
	sc.size--
	sc.emit(ck.Change{Kind: ck.ChangeEvict, Job: o.st.Name, Version: o.version})
	return true
}

// AddJob appends an add change for plan and returns true, or returns false
// when the queue is full (Config.MaxQueueSize, counting this schedule's
// changes), the plan's tenant or level is paused, its tenant is closed at
// its level ([Limits].Closed, ClosedLevels), or a job of that name exists, was added by this
// schedule, or was completed recently. A job of a tenant at its cap is
// added; it waits. The plan is copied shallowly: its slices are shared.
func (sc *Schedule) AddJob(plan ck.JobPlan) bool {
	if limit := sc.v.cfg.MaxQueueSize; limit > 0 && sc.size >= limit || !sc.lock() {
		return false
	}
	defer sc.unlock()
	// known is false for most new names: neither a job nor a remembered
	// completion of the view, without searching their trees.
	known := sc.v.names.MayHave(plan.Name)
	if ident.ValidateJobName(plan.Name) != nil || sc.v.pauses.paused(plan.Tenant, plan.Level) || known && sc.base(plan.Name) != nil || sc.addedNamed(plan.Name) != nil {
		return false
	}
	pol, _ := sc.policyOf(plan.Tenant)
	if pol.closed(plan.Level) {
		return false
	}
	if known && sc.v.completed.Peek().Has(doneProbe(plan.Name)) {
		return false
	}
	if len(sc.plans) == cap(sc.plans) {
		sc.plans = make([]ck.JobPlan, 0, growChunk(cap(sc.plans)))
	}
	sc.plans = append(sc.plans, plan)
	o := sc.newOverlay()
	o.plan = &sc.plans[len(sc.plans)-1]
	o.st = ck.JobState{Name: plan.Name, Tenant: plan.Tenant, Level: plan.Level, Status: ck.StatusUnassigned, AddedAt: sc.now}
	o.rank = pol.Rank
	if pol.hasCap() {
		o.capped = true
		sc.limits(plan.Tenant, plan.Shard, pol)
	}
	o.tail = nameTail(plan.Name)
	sc.added = append(sc.added, o)
	sc.waiting = slices.Insert(sc.waiting, sc.waitingAt(o), o)
	sc.size++
	sc.emit(ck.Change{Kind: ck.ChangeAdd, Job: plan.Name, Plan: o.plan})
	return true
}

// Update returns the plan update: the schedule's time and its changes in
// order. The changes are shared with the schedule; later calls to the
// schedule append to its own list and never modify the returned one.
func (sc *Schedule) Update() ck.PlanUpdate {
	u := ck.PlanUpdate{Time: sc.now}
	if len(sc.changes) > 0 { // nil, not the room Capacity made, when there is none
		u.Changes = slices.Clip(sc.changes)
	}
	return u
}
