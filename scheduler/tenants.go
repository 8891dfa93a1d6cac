package scheduler

import (
	"fmt"
	"slices"
	"strconv"

	ck "github.com/compactkit/compactkit"

	"github.com/google/btree"
)

// Limits are what the scheduler decides a tenant's jobs with: a rank, caps
// of jobs in progress, and whether new work may start. The state machine
// derives them from its replicated tenant policies (a priority class, a
// concurrency cap, run windows judged at the entry's log time) and
// installs them with [Scheduler.SetDefaultLimits] and
// [Scheduler.SetLimits]; they are not in the scheduler's snapshot, so the
// state machine installs them again after [Restore].
//
// The zero Limits are the default: rank 0, no cap, open. With them the
// scheduler behaves exactly as without limits.
type Limits struct {
	// Rank orders tenants at the same level: lower ranks first (the state
	// machine maps High/Medium/Low to 0/1/2). Equal ranks: today's order.
	Rank uint8
	// MaxInProgress caps the tenant's jobs in progress; 0 = unlimited.
	MaxInProgress uint32
	// MaxPerShard caps the tenant's jobs in progress on each shard (the
	// shard of a job's plan; the jobs of a level compacted across shards,
	// whose plans have ck.AnyShard, count as one more shard); 0 =
	// unlimited. It holds a shard's unassigned jobs while the shard is at
	// its cap, and works with MaxInProgress: a job waits while either
	// holds it.
	MaxPerShard uint32
	// Closed holds the tenant's new work: a run window (or a not-before time)
	// forbids new jobs from starting now. Jobs in progress run to their end.
	Closed bool
	// ClosedLevels holds the tenant's new work at some levels only: bit l
	// for level l (levels from 64 on cannot be closed this way). Jobs in
	// progress run to their end.
	ClosedLevels uint64
}

// closed reports whether the policy holds new work at a level.
func (p Limits) closed(level uint32) bool {
	return p.Closed || level < 64 && p.ClosedLevels&(1<<level) != 0
}

// capped reports whether a tenant with n jobs in progress is at the cap.
func (p Limits) capped(n int) bool {
	return p.MaxInProgress > 0 && uint64(n) >= uint64(p.MaxInProgress)
}

// shardCapped reports whether a shard with n of the tenant's jobs in
// progress is at the per-shard cap.
func (p Limits) shardCapped(n int) bool {
	return p.MaxPerShard > 0 && uint64(n) >= uint64(p.MaxPerShard)
}

// hasCap reports whether the policy caps jobs in progress at all.
func (p Limits) hasCap() bool { return p.MaxInProgress > 0 || p.MaxPerShard > 0 }

// shardCount is one shard's jobs in progress of a tenant.
type shardCount struct {
	shard uint32
	n     int
}

// shardN returns the jobs in progress on shard in a tenant's shard list
// (sorted by shard, no zero entry).
func shardN(list []shardCount, shard uint32) int {
	i, found := slices.BinarySearchFunc(list, shard, cmpShard)
	if !found {
		return 0
	}
	return list[i].n
}

func cmpShard(c shardCount, shard uint32) int {
	switch {
	case c.shard < shard:
		return -1
	case c.shard > shard:
		return 1
	}
	return 0
}

// withShard returns a new shard list: list with delta more jobs in
// progress on shard. The list itself is never modified (views share it).
func withShard(list []shardCount, shard uint32, delta int) []shardCount {
	i, found := slices.BinarySearchFunc(list, shard, cmpShard)
	out := make([]shardCount, 0, len(list)+1)
	out = append(out, list[:i]...)
	n := delta
	if found {
		n += list[i].n
		i++
	}
	if n != 0 {
		out = append(out, shardCount{shard: shard, n: n})
	}
	out = append(out, list[i:]...)
	if len(out) == 0 {
		return nil
	}
	return out
}

// tenantRec is a tenant's entry in the tenant index, the part of the
// policy state a schedule reads: the tenant's own policy, if it has one,
// and its jobs in progress. A tenant has an entry when it has a policy of
// its own, or when the default policy has a cap and the tenant has jobs in
// progress; any other tenant has the default policy and, if that has no
// cap, a count nobody asks a view for. Entries are values, and their shard
// lists are never modified: a view's clone never sees one change.
type tenantRec struct {
	name   string
	own    bool
	pol    Limits       // when own
	count  int          // jobs in progress
	shards []shardCount // jobs in progress per shard, when the policy has MaxPerShard
}

func recByName(a, b tenantRec) bool { return a.name < b.name }

// policyOf returns the effective policy of a tenant in a tenant index with
// default def, its jobs in progress as the index knows them (exact when
// the policy has a cap) and its shard list (exact when the policy has a
// per-shard cap).
func policyOf(tenants *btree.BTreeG[tenantRec], def Limits, tenant string) (Limits, int, []shardCount) {
	if tenants == nil || tenants.Len() == 0 {
		return def, 0, nil
	}
	r, ok := tenants.Get(tenantRec{name: tenant})
	switch {
	case !ok:
		return def, 0, nil
	case r.own:
		return r.pol, r.count, r.shards
	default:
		return def, r.count, r.shards
	}
}

// policy returns the effective policy of tenant.
func (s *Scheduler) policy(tenant string) Limits {
	if len(s.policies) > 0 {
		if p, ok := s.policies[tenant]; ok {
			return p
		}
	}
	return s.def
}

// holds returns the holds of a job of tenant at level, with the policy p
// and n jobs of the tenant in progress.
func (s *Scheduler) holds(tenant string, level uint32, p Limits, n int) uint8 {
	var h uint8
	if s.pauses.paused(tenant, level) {
		h |= holdPaused
	}
	if p.closed(level) {
		h |= holdClosed
	}
	if p.capped(n) {
		h |= holdCapped
	}
	return h
}

// shape sets the policy-derived fields of j (its rank, hasCap and holds)
// for its tenant's policy p and n jobs in progress (and, for a per-shard
// cap, its shard's count in the scheduler's shard lists).
func (s *Scheduler) shape(j *job, p Limits, n int) {
	j.rank, j.hasCap = p.Rank, p.hasCap()
	j.hold = s.holds(j.st.Tenant, j.st.Level, p, n)
	if s.shardHeld(j, p) {
		j.hold |= holdCapped
	}
}

// shardHeld reports whether the per-shard cap of p holds the shard of j.
func (s *Scheduler) shardHeld(j *job, p Limits) bool {
	return p.MaxPerShard > 0 && p.shardCapped(shardN(s.shards[j.st.Tenant], j.shard()))
}

// capHeld reports whether a cap holds j, an unassigned job, now: its
// record's capped hold, or, for a tenant whose crossings of a cap this
// entry has not settled, its counts.
func (s *Scheduler) capHeld(j *job) bool {
	if s.unsettledOf(j.st.Tenant) == nil {
		return j.hold&holdCapped != 0
	}
	p := s.policy(j.st.Tenant)
	return p.capped(s.counts[j.st.Tenant]) || s.shardHeld(j, p)
}

// SetDefaultLimits sets the limits of the tenants without their own. The
// state machine calls it while applying an entry (and after [Restore]).
// It costs O(jobs of the tenants without their own policy) plus a lookup
// per tenant, and replaces exactly the job records whose rank, holds or
// cap presence change: re-keyed on a rank change, (de)activated on a hold
// change. Versions are kept.
func (s *Scheduler) SetDefaultLimits(p Limits) {
	s.settle()
	if p == s.def {
		return
	}
	old := s.def
	s.def = p
	// Every tenant with jobs and without a policy of its own, in order:
	// seek from one tenant to the next, past those with their own.
	from := tenantKey{}
	for {
		k, ok := s.firstKey(from)
		if !ok {
			break
		}
		t := k.tenant
		if _, own := s.policies[t]; !own {
			s.repolicy(t, old, p)
			s.syncRec(t)
		}
		from = tenantKey{tenant: successor(t)}
	}
}

// firstKey returns the first key of the tenant index at or after from.
func (s *Scheduler) firstKey(from tenantKey) (tenantKey, bool) {
	var (
		out tenantKey
		ok  bool
	)
	s.tenantIndex().AscendGreaterOrEqual(&from, func(k *tenantKey) bool {
		out, ok = *k, true
		return false
	})
	return out, ok
}

// SetLimits gives tenant limits of its own, in place of the default, or
// with nil returns it to the default. It costs O(the tenant's jobs), and
// replaces exactly the job records whose rank, holds or cap presence
// change, as SetDefaultLimits does. Versions are kept. The tenant name is
// not validated: the state machine validates its commands.
func (s *Scheduler) SetLimits(tenant string, l *Limits) {
	s.settle()
	if l == nil {
		s.clearLimits(tenant)
		return
	}
	p := *l
	old, own := s.policies[tenant]
	if own && old == p {
		return
	}
	if !own {
		old = s.def
	}
	if s.policies == nil {
		s.policies = make(map[string]Limits)
	}
	s.policies[tenant] = p
	s.repolicy(tenant, old, p)
	s.syncRec(tenant)
}

// clearLimits returns tenant to the default limits; a tenant without
// limits of its own is left as it is.
func (s *Scheduler) clearLimits(tenant string) {
	old, own := s.policies[tenant]
	if !own {
		return
	}
	delete(s.policies, tenant)
	s.repolicy(tenant, old, s.def)
	s.syncRec(tenant)
}

// BusyTenants returns the tenants with jobs in progress, in order. Its
// cost is linear in their number.
func (s *Scheduler) BusyTenants() []string {
	out := make([]string, 0, len(s.counts))
	for t := range s.counts {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// Capped reports whether tenant has a cap (MaxInProgress > 0) and as many
// jobs in progress as the cap, or more (a cap lowered below the count):
// its unassigned jobs wait until one ends.
func (s *Scheduler) Capped(tenant string) bool {
	return s.policy(tenant).capped(s.counts[tenant])
}

// shardInProgress returns the number of jobs of tenant in progress on
// shard (ck.AnyShard for the jobs of levels compacted across shards). The
// scheduler counts them only for the tenants whose effective limits have
// a per-shard cap (Limits.MaxPerShard); it returns 0 for the others.
func (s *Scheduler) shardInProgress(tenant string, shard uint32) int {
	return shardN(s.shards[tenant], shard)
}

// shardAtCap reports whether tenant has a per-shard cap and as many jobs
// in progress on shard as the cap, or more: the shard's unassigned jobs
// wait until one ends.
func (s *Scheduler) shardAtCap(tenant string, shard uint32) bool {
	return s.policy(tenant).shardCapped(shardN(s.shards[tenant], shard))
}

// shardsCapped counts the shards of a shard list at the per-shard cap of p.
func shardsCapped(list []shardCount, p Limits) int {
	k := 0
	for _, c := range list {
		if p.shardCapped(c.n) {
			k++
		}
	}
	return k
}

// repolicy changes the policy of tenant from old to p: the capped counts,
// the shard list and the jobs whose rank, holds or hasCap change.
func (s *Scheduler) repolicy(tenant string, old, p Limits) {
	n := s.counts[tenant]
	wasCapped, capped := old.capped(n), p.capped(n)
	switch {
	case capped && !wasCapped:
		s.nCapped++
	case wasCapped && !capped:
		s.nCapped--
	}
	perShard := old.MaxPerShard != p.MaxPerShard
	if perShard {
		s.nShardCapped -= shardsCapped(s.shards[tenant], old)
		s.setShards(tenant, old, p)
		s.nShardCapped += shardsCapped(s.shards[tenant], p)
	}
	if old.Rank == p.Rank && old.Closed == p.Closed && old.ClosedLevels == p.ClosedLevels && wasCapped == capped && old.hasCap() == p.hasCap() && !perShard {
		return // a cap changed without crossing the count: the tenant index has it
	}
	s.reshape(tenant, p, n)
}

// setShards keeps the shard list of tenant for its new policy p (old
// before): counted from its jobs in progress when p gains a per-shard cap,
// dropped when p has none. It costs O(the tenant's jobs) when it counts.
func (s *Scheduler) setShards(tenant string, old, p Limits) {
	switch {
	case p.MaxPerShard == 0:
		delete(s.shards, tenant)
		return
	case old.MaxPerShard > 0:
		return // kept up to date already
	}
	var list []shardCount
	s.tenantIndex().AscendRange(&tenantKey{tenant: tenant}, &tenantKey{tenant: successor(tenant)}, func(k *tenantKey) bool {
		if j := s.get(k.name.String()); j.st.Status == ck.StatusInProgress {
			list = withShard(list, j.shard(), 1)
		}
		return true
	})
	if list == nil {
		return
	}
	if s.shards == nil {
		s.shards = make(map[string][]shardCount)
	}
	s.shards[tenant] = list
}

// reshape gives every job of tenant the rank, hasCap and holds of policy
// p with n jobs in progress, replacing the records that change: re-keyed
// on a rank change, moved in or out of the assignment indexes on a hold
// change.
func (s *Scheduler) reshape(tenant string, p Limits, n int) {
	var names []string
	s.tenantIndex().AscendRange(&tenantKey{tenant: tenant}, &tenantKey{tenant: successor(tenant)}, func(k *tenantKey) bool {
		names = append(names, k.name.String())
		return true
	})
	for _, name := range names {
		s.reshapeJob(s.get(name), p, n)
	}
}

// reshapeJob gives j the rank, hasCap and holds of its tenant's policy p
// with n jobs in progress, replacing its record if they change.
func (s *Scheduler) reshapeJob(j *job, p Limits, n int) {
	nj := j.with()
	s.shape(nj, p, n)
	if nj.rank != j.rank || nj.hasCap != j.hasCap || nj.hold != j.hold {
		s.replace(j, nj)
	}
}

// unsettled is a tenant whose count of jobs in progress crossed a cap —
// its own or a shard's — in the entry being applied. Its jobs' records
// keep the holds they had before the first crossing until the entry is
// settled (settle): then, if the crossings cancel out — a completion and
// the assignment of the tenant's next job in one poll, the steady state of
// a capped tenant with a backlog under [Schedule.FreeCaps] — only the jobs
// added meanwhile are reshaped; otherwise every job of the tenant is,
// once. Meanwhile an assignment checks the tenant's counts (capHeld).
type unsettled struct {
	tenant string
	// flipped: the tenant's cap was crossed an odd number of times;
	// shards: the shards whose per-shard cap was.
	flipped bool
	shards  []uint32
	// added: the jobs added meanwhile, shaped by the counts of their time.
	added []string
}

// unsettledOf returns the entry of tenant in s.unsettled, or nil.
func (s *Scheduler) unsettledOf(tenant string) *unsettled {
	if len(s.unsettled) == 0 {
		return nil
	}
	if i, ok := s.unsettledAt[tenant]; ok {
		return &s.unsettled[i]
	}
	return nil
}

// unsettle returns the entry of tenant in s.unsettled, adding it.
func (s *Scheduler) unsettle(tenant string) *unsettled {
	if u := s.unsettledOf(tenant); u != nil {
		return u
	}
	if s.unsettledAt == nil {
		s.unsettledAt = make(map[string]int)
	}
	s.unsettledAt[tenant] = len(s.unsettled)
	s.unsettled = append(s.unsettled, unsettled{tenant: tenant})
	return &s.unsettled[len(s.unsettled)-1]
}

// settle reshapes the jobs of the tenants that crossed a cap since the
// last settle (see unsettled), in the order they first crossed it. Every
// reader of the holds (a schedule's view, the statistics, a snapshot) and
// every change to them but an entry's (pauses, policies) settles first,
// and so does the next entry.
func (s *Scheduler) settle() {
	if len(s.unsettled) == 0 {
		return
	}
	us := s.unsettled
	s.unsettled = nil
	clear(s.unsettledAt)
	for i := range us {
		u := &us[i]
		p, n := s.policy(u.tenant), s.counts[u.tenant]
		if u.flipped || len(u.shards) > 0 {
			s.reshape(u.tenant, p, n)
			continue
		}
		for _, name := range u.added {
			if j := s.get(name); j != nil {
				s.reshapeJob(j, p, n)
			}
		}
	}
}

// syncRec makes the tenant index entry of tenant agree with its policy and
// counts (see tenantRec).
func (s *Scheduler) syncRec(tenant string) {
	p, own := s.policies[tenant]
	n := s.counts[tenant]
	if own || (s.def.hasCap() && n > 0) {
		s.tenants.Mut(&s.vmu).ReplaceOrInsert(tenantRec{name: tenant, own: own, pol: p, count: n, shards: s.shards[tenant]})
		return
	}
	if s.tenants.Has(tenantRec{name: tenant}) {
		s.tenants.Mut(&s.vmu).Delete(tenantRec{name: tenant})
	}
}

// adjust counts delta jobs of tenant more in progress on shard, after the
// job that moved is in the indexes. When the count crosses the tenant's
// cap, or the shard's count its per-shard cap, the tenant's jobs gain or
// lose the capped hold when the entry is settled (see unsettled).
func (s *Scheduler) adjust(tenant string, shard uint32, delta int) {
	n := s.counts[tenant]
	m := n + delta
	if m == 0 {
		delete(s.counts, tenant)
	} else {
		if s.counts == nil {
			s.counts = make(map[string]int)
		}
		s.counts[tenant] = m
	}
	p, own := s.policies[tenant]
	if !own {
		if !s.def.hasCap() {
			return // no entry in the tenant index, no cap
		}
		p = s.def
	}
	if p.MaxPerShard > 0 {
		list := s.shards[tenant]
		k := shardN(list, shard)
		if list = withShard(list, shard, delta); list == nil {
			delete(s.shards, tenant)
		} else {
			if s.shards == nil {
				s.shards = make(map[string][]shardCount)
			}
			s.shards[tenant] = list
		}
		if was, now := p.shardCapped(k), p.shardCapped(k+delta); was != now {
			if now {
				s.nShardCapped++
			} else {
				s.nShardCapped--
			}
			u := s.unsettle(tenant)
			if i := slices.Index(u.shards, shard); i >= 0 {
				u.shards = slices.Delete(u.shards, i, i+1)
			} else {
				u.shards = append(u.shards, shard)
			}
		}
	}
	s.syncRec(tenant)
	if was, now := p.capped(n), p.capped(m); was != now {
		if now {
			s.nCapped++
		} else {
			s.nCapped--
		}
		u := s.unsettle(tenant)
		u.flipped = !u.flipped
	}
}

// capText says which cap holds j, an unassigned job with the capped hold.
func (s *Scheduler) capText(j *job) string {
	p, n := s.policy(j.st.Tenant), s.counts[j.st.Tenant]
	if p.capped(n) {
		return fmt.Sprintf("tenant %q: %d in progress, cap %d", j.st.Tenant, n, p.MaxInProgress)
	}
	shard := j.shard()
	return fmt.Sprintf("tenant %q shard %s: %d in progress, cap %d per shard", j.st.Tenant, shardText(shard), shardN(s.shards[j.st.Tenant], shard), p.MaxPerShard)
}

// shardText formats a shard, "any" for ck.AnyShard.
func shardText(shard uint32) string {
	if shard == ck.AnyShard {
		return "any"
	}
	return strconv.FormatUint(uint64(shard), 10)
}
