package scheduler

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"unsafe"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/internal/cow"
	"github.com/compactkit/compactkit/internal/namekey"
)

// CheckDerived checks the state the scheduler derives from its jobs,
// pauses and tenant policies against a recomputation from scratch: every
// job's rank, hasCap and holds, the indexes it is in, the tenants' counts
// of jobs in progress, the tenant index, the capped count and the
// per-level statistics. It returns the first disagreement.
func CheckDerived(s *Scheduler) error { return s.checkDerived() }

func equalRecs(a, b tenantRec) bool {
	return a.name == b.name && a.own == b.own && a.pol == b.pol && a.count == b.count && slices.Equal(a.shards, b.shards)
}

func (s *Scheduler) checkDerived() error {
	s.settle()
	counts := map[string]int{}
	jobs := map[string]int{}
	var err error
	s.byName.Ascend(func(r named) bool {
		j := r.j
		if j.st.Status == ck.StatusInProgress {
			counts[j.st.Tenant]++
		}
		jobs[j.st.Tenant]++
		if n := s.tenantNames[j.st.Tenant]; n == nil || unsafe.StringData(n.s) != unsafe.StringData(j.st.Tenant) ||
			j.key.tenant != j.st.Tenant || unsafe.StringData(j.key.tenant) != unsafe.StringData(j.st.Tenant) {
			err = fmt.Errorf("job %s: tenant %q is not the tenant's shared name", j.st.Name, j.st.Tenant)
			return false
		}
		if n := namekey.Of(j.st.Name); j.key.name != n || r.n != n {
			err = fmt.Errorf("job %s: name keys %q (tenant index), %q (by name)", j.st.Name, j.key.name, r.n)
			return false
		}
		return true
	})
	if err != nil {
		return err
	}
	if len(jobs) != len(s.tenantNames) {
		return fmt.Errorf("%d tenants with jobs, %d shared names", len(jobs), len(s.tenantNames))
	}
	for t, n := range jobs {
		if s.tenantNames[t].jobs != n {
			return fmt.Errorf("tenant %q: %d jobs, its shared name counts %d", t, n, s.tenantNames[t].jobs)
		}
	}
	if len(counts) == 0 {
		counts = nil
	}
	if !maps.Equal(counts, s.counts) {
		return fmt.Errorf("counts %v, want %v", s.counts, counts)
	}
	// The shard lists of the tenants with a per-shard cap.
	shards := map[string]map[uint32]int{}
	s.byName.Ascend(func(r named) bool {
		j := r.j
		if j.st.Status == ck.StatusInProgress && s.policy(j.st.Tenant).MaxPerShard > 0 {
			if shards[j.st.Tenant] == nil {
				shards[j.st.Tenant] = map[uint32]int{}
			}
			shards[j.st.Tenant][j.shard()]++
		}
		return true
	})
	wantShards := map[string][]shardCount{}
	shardsCappedWant := 0
	for t, m := range shards {
		for _, sh := range slices.Sorted(maps.Keys(m)) {
			wantShards[t] = append(wantShards[t], shardCount{shard: sh, n: m[sh]})
			if s.policy(t).shardCapped(m[sh]) {
				shardsCappedWant++
			}
		}
	}
	if !maps.EqualFunc(wantShards, s.shards, slices.Equal) || len(s.shards) != len(wantShards) {
		return fmt.Errorf("shard lists %v, want %v", s.shards, wantShards)
	}
	if shardsCappedWant != s.nShardCapped {
		return fmt.Errorf("%d capped shards, want %d", s.nShardCapped, shardsCappedWant)
	}

	levels := map[uint32]*LevelStats{}
	s.byName.Ascend(func(r named) bool {
		j := r.j
		p := s.policy(j.st.Tenant)
		want := *j
		s.shape(&want, p, counts[j.st.Tenant])
		if want.rank != j.rank || want.hasCap != j.hasCap || want.hold != j.hold {
			err = fmt.Errorf("job %s: rank %d cap %t hold %b, want %d %t %b", j.st.Name, j.rank, j.hasCap, j.hold, want.rank, want.hasCap, want.hold)
			return false
		}
		in := func(t interface{ Has(*job) bool }) bool { return t.Has(j) }
		inReady, inAging := in(s.ready), in(s.aging)
		if j == s.pending { // in neither ready nor aging yet
			if j.st.Status != ck.StatusUnassigned || j.hold != 0 || inReady || inAging {
				err = fmt.Errorf("job %s (%s, hold %b) pending, in ready %t, in aging %t", j.st.Name, j.st.Status, j.hold, inReady, inAging)
				return false
			}
			inReady, inAging = true, true
		}
		unassigned, running := j.st.Status == ck.StatusUnassigned, j.st.Status == ck.StatusInProgress
		for _, c := range []struct {
			name     string
			in, want bool
		}{
			{"ready", inReady, unassigned && j.hold == 0},
			{"aging", inAging, unassigned && j.hold == 0},
			{"held", in(s.held), unassigned && j.hold == holdCapped},
			{"expiry", in(s.expiry), running && !idles(j.hold)},
			{"idle", in(s.idle), running && idles(j.hold)},
			{"excluded", in(s.excluded), j.st.Status == ck.StatusExcluded},
		} {
			if c.in != c.want {
				err = fmt.Errorf("job %s (%s, hold %b): in %s %t, want %t", j.st.Name, j.st.Status, j.hold, c.name, c.in, c.want)
				return false
			}
		}
		l := TallyLevel(levels, j.st.Level, j.st.Status)
		if j.hold&holdPaused != 0 {
			l.Paused++
		}
		if unassigned && j.hold&(holdClosed|holdCapped) != 0 {
			l.Held++
		}
		return true
	})
	if err != nil {
		return err
	}
	if s.pending != nil {
		if r, ok := s.byName.Get(nameProbe(s.pending.st.Name)); !ok || r.j != s.pending {
			return fmt.Errorf("pending job %s is not the job of that name", s.pending.st.Name)
		}
	}
	if n := s.ready.Len() + s.held.Len() + s.expiry.Len() + s.idle.Len() + s.excluded.Len(); n > s.byName.Len() {
		return fmt.Errorf("%d indexed jobs, %d jobs", n, s.byName.Len())
	}
	var wantLevels []LevelStats
	for _, level := range slices.Sorted(maps.Keys(levels)) {
		wantLevels = append(wantLevels, *levels[level])
	}
	if !slices.Equal(wantLevels, s.levels) {
		return fmt.Errorf("levels %v, want %v", s.levels, wantLevels)
	}
	// The tenant index and the capped count.
	var want []tenantRec
	names := map[string]bool{}
	for t := range s.policies {
		names[t] = true
	}
	for t := range counts {
		names[t] = true
	}
	capped := 0
	for _, t := range slices.Sorted(maps.Keys(names)) {
		p, own := s.policies[t]
		n := counts[t]
		if own || (s.def.hasCap() && n > 0) {
			want = append(want, tenantRec{name: t, own: own, pol: p, count: n, shards: wantShards[t]})
		}
		if s.policy(t).capped(n) {
			capped++
		}
	}
	var got []tenantRec
	s.tenants.Ascend(func(r tenantRec) bool { got = append(got, r); return true })
	if !slices.EqualFunc(got, want, equalRecs) {
		return fmt.Errorf("tenant index %v, want %v", got, want)
	}
	if capped != s.nCapped {
		return fmt.Errorf("%d capped tenants, want %d", s.nCapped, capped)
	}
	s.vmu.Lock()
	defer s.vmu.Unlock()
	for i, t := range s.trees.list() {
		if t.Frozen() {
			return fmt.Errorf("the schedules read a copy of the %s tree before any change", treeNames[i])
		}
	}
	return nil
}

// TallyLevel counts a job of a level and status in levels, making the
// level's entry if needed, and returns the entry.
func TallyLevel(levels map[uint32]*LevelStats, level uint32, status ck.JobStatus) *LevelStats {
	l := levels[level]
	if l == nil {
		l = &LevelStats{Level: level}
		levels[level] = l
	}
	switch status {
	case ck.StatusUnassigned:
		l.Unassigned++
	case ck.StatusInProgress:
		l.InProgress++
	case ck.StatusExcluded:
		l.Excluded++
	}
	return l
}

// ViewFrozen reports whether the schedule's view holds a frozen clone of
// a tree, made when the scheduler changed it while the schedule was open.
func ViewFrozen(sc *Schedule) bool { return len(FrozenTrees(sc)) > 0 }

// treeNames names the trees of trees.list, in order.
var treeNames = [...]string{"byName", "byTenant", "ready", "aging", "held", "expiry", "excluded", "completed", "tenants"}

// FrozenTrees names the trees the schedule's view holds a frozen clone of.
func FrozenTrees(sc *Schedule) []string {
	sc.v.mu.Lock()
	defer sc.v.mu.Unlock()
	var out []string
	for i, t := range sc.v.list() {
		if t.Frozen() {
			out = append(out, treeNames[i])
		}
	}
	return out
}

// What the package's tests read of the scheduler beyond its API.

// Len returns the number of jobs, whatever their status (Stats().Jobs).
func (s *Scheduler) Len() int { return s.byName.Len() }

// Paused reports whether jobs of tenant at level are paused.
func (s *Scheduler) Paused(tenant string, level uint32) bool { return s.pauses.paused(tenant, level) }

// Limits returns the effective limits of tenant: its own, or the default.
func (s *Scheduler) Limits(tenant string) Limits { return s.policy(tenant) }

// InProgress returns the number of jobs of tenant in progress.
func (s *Scheduler) InProgress(tenant string) int { return s.counts[tenant] }

// ShardInProgress returns the number of jobs of tenant in progress on shard.
func (s *Scheduler) ShardInProgress(tenant string, shard uint32) int {
	return s.shardInProgress(tenant, shard)
}

// ShardCapped reports whether tenant's shard is at its per-shard cap.
func (s *Scheduler) ShardCapped(tenant string, shard uint32) bool { return s.shardAtCap(tenant, shard) }

// Skip reasons the tests name.
const (
	ReasonLeaseExpired  = reasonLeaseExpired
	ReasonUnstated      = reasonUnstated
	SkippedPaused       = skippedPaused
	SkippedNoLease      = skippedNoLease
	SkippedStaleVersion = skippedStaleVersion
)

// Record returns the record of the named job (nil if none), to tell
// whether a change wrote over it or replaced it.
func Record(s *Scheduler, name string) any { return s.get(name) }

// SettleTrees settles every tree of s for the open schedules, as changes
// to all of them would.
func SettleTrees(s *Scheduler) {
	for _, t := range s.trees.list() {
		switch t := t.(type) {
		case *cow.Tree[*job]:
			t.MutGen(&s.vmu, &s.gen)
		case *cow.Tree[named]:
			t.MutGen(&s.vmu, &s.gen)
		default:
			t.(interface{ Settle(*sync.Mutex) bool }).Settle(&s.vmu)
		}
	}
}
