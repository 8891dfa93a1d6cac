package scheduler

import (
	"math"
	"slices"
	"sync"

	"github.com/google/btree"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/internal/bloom"
	"github.com/compactkit/compactkit/internal/cow"
	"github.com/compactkit/compactkit/internal/namekey"
)

// degree is the B-tree degree of every index.
const degree = 32

// Scheduler is the replicated job queue: jobs by name, with the indexes that
// let a poll find the next job to assign, an abandoned job or an evictable
// one in O(log n).
//
// A Scheduler is not safe for concurrent use: the state machine calls its
// methods from its single Apply goroutine (or under its lock). A [Schedule]
// opened with [Scheduler.Schedule] is a read-only view that may be used on
// another goroutine while Apply goes on.
type Scheduler struct {
	cfg Config

	// trees holds the indexes a schedule reads: byName holds every job,
	// the others are indexes over it.
	trees
	// idle holds the paused or closed in-progress jobs by (deadline, name);
	// no schedule reads it.
	idle cow.Tree[*job]
	// pending is the last job added, unassigned and without a hold, while
	// it is in neither ready nor aging: a poll that creates a job usually
	// assigns it in its next change, and the job then never enters them.
	// It enters them (flush) before the next job is added and before a
	// schedule opens: nothing else reads the two trees.
	pending *job
	// completedAt holds the remembered completions by time, for expiry.
	completedAt *btree.BTreeG[*done]

	pauses *pauses
	// def is the default tenant policy and policies the tenants' own;
	// counts holds every tenant's jobs in progress (no zero entry), and
	// nCapped the number of tenants at their cap. tenants is the part of
	// it schedules read (see tenantRec). The maps are for lookups only.
	def      Limits
	policies map[string]Limits
	counts   map[string]int
	nCapped  int
	// shards holds the jobs in progress per shard of the tenants whose
	// effective policy has a per-shard cap (sorted by shard, no zero entry;
	// a list is replaced, never modified: tenant index entries share it),
	// and nShardCapped the number of (tenant, shard) pairs at that cap.
	shards       map[string][]shardCount
	nShardCapped int
	// unsettled holds the tenants that crossed a cap in the entry being
	// applied, in the order they first did, and unsettledAt their
	// positions (see settle).
	unsettled   []unsettled
	unsettledAt map[string]int
	// tenantNames holds one copy of the name of each tenant with jobs,
	// and its number of jobs: every job of a tenant shares it, so that
	// byTenant's searches compare equal tenants without reading them.
	tenantNames map[string]*tenantName

	// names holds the names of every job and remembered completion, and
	// some of those gone since (see addName).
	names *bloom.Filter

	// keys holds the tenant index entries not yet in byTenant (keyPending)
	// and some of jobs removed since (keyDropped), nPending the number of
	// the first: a job without a cap enters byTenant only when a reader
	// of it needs it (see tenantIndex), so a job created and completed
	// with no pause, policy change or listing in between never does.
	keys     []*tenantKey
	nPending int

	levels    []LevelStats // sorted by level; no empty entry
	counters  Counters
	lastEntry uint64 // index of the last entry given to Begin

	// gen is the generation of the job records: it moves on when a tree
	// that holds them has been frozen for a view (cow.Tree.MutGen), whose
	// records are then shared with it. A record of the current generation
	// was made since, so no view can reach it once the trees are settled
	// (see replace).
	gen uint64
	// draft is the scratch copy of a record that Tx.Apply changes (see
	// draftOf); it never enters an index.
	draft job

	// vmu guards the slots of the trees shared with schedules (see
	// view).
	vmu sync.Mutex
}

// trees are the indexes a schedule reads, each lazily frozen for the open
// schedules (see view). The scheduler reads them directly and mutates them
// through Mut.
type trees struct {
	byName cow.Tree[named]
	// byTenant holds the jobs by (tenant, level, name), for pauses,
	// policy changes and List: every job with a cap, and every other job
	// but those whose key is still in Scheduler.keys (see tenantIndex).
	byTenant cow.Tree[*tenantKey]
	// ready holds the unassigned jobs without a hold by (level, rank,
	// failures, deadline, name); aging holds the same jobs by (level,
	// added, name).
	ready, aging cow.Tree[*job]
	// held holds the unassigned jobs held by a cap alone (the tenant's
	// or their shard's) by (tenant, level, failures, deadline, name): a
	// schedule that frees a tenant's cap (FreeCaps) reads its next jobs
	// there.
	held cow.Tree[*job]
	// expiry holds the in-progress jobs neither paused nor closed by
	// (level, rank, failures, deadline, name): the expired ones of a level
	// are, per rank and failure count, a prefix.
	expiry cow.Tree[*job]
	// excluded holds the excluded jobs by (version, name).
	excluded cow.Tree[*job]
	// completed remembers completed jobs by name.
	completed cow.Tree[doneRef]
	// tenants holds the tenant policies and counts schedules read.
	tenants cow.Tree[tenantRec]
}

// list returns the trees as the views that open, read and close them need
// them.
func (t *trees) list() []cow.Lazy {
	return []cow.Lazy{&t.byName, &t.byTenant, &t.ready, &t.aging, &t.held, &t.expiry, &t.excluded, &t.completed, &t.tenants}
}

// view is the state a schedule reads (see doc.go, "Cost", for the
// copy-on-write rule, and internal/cow). The configuration, pauses and
// default policy are copied when it is opened (none of them is modified
// in place: its AgingThreshold, the pauses and the default are replaced);
// the trees are the scheduler's, read under mu with Peek: the
// scheduler's own until it is about to mutate one while the schedule is
// open, then that tree's frozen clone.
type view struct {
	cfg    Config
	pauses *pauses
	def    Limits
	mu     *sync.Mutex // the scheduler's vmu
	// names is the scheduler's name filter as it was when the view was
	// opened: it only grows, so a name it lacks is neither a job nor a
	// remembered completion of the view.
	names *bloom.Filter
	trees
}

// New returns an empty scheduler with the given configuration, or an error
// wrapping [ErrInvalidConfig].
func New(cfg Config) (*Scheduler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return newScheduler(cfg.clone()), nil
}

func newScheduler(cfg Config) *Scheduler {
	return &Scheduler{
		cfg: cfg,
		trees: trees{
			byName:    cow.New(btree.NewG(degree, byName)),
			byTenant:  cow.New(btree.NewG(degree, byTenant)),
			ready:     cow.New(btree.NewG(degree, byPriority)),
			aging:     cow.New(btree.NewG(degree, byAge)),
			held:      cow.New(btree.NewG(degree, byHeld)),
			expiry:    cow.New(btree.NewG(degree, byPriority)),
			excluded:  cow.New(btree.NewG(degree, byExclusion)),
			completed: cow.New(btree.NewG(degree, doneByName)),
			tenants:   cow.New(btree.NewG(degree, recByName)),
		},
		idle:        cow.New(btree.NewG(degree, byDeadline)),
		names:       bloom.New(0),
		completedAt: btree.NewG(degree, doneByTime),
		pauses:      newPauses(nil),
	}
}

// Config returns the current configuration.
func (s *Scheduler) Config() Config { return s.cfg.clone() }

// SetConfig replaces the configuration; the state machine calls it when it
// applies a config command. An invalid configuration returns an error
// wrapping [ErrInvalidConfig] and changes nothing.
//
// A new configuration applies from then on: a lower failure limit does not
// exclude jobs by itself (their next failure or expiry does), a higher one
// does not return excluded jobs (an operator retry does), a smaller queue
// limit evicts nothing by itself, and existing deadlines are kept.
func (s *Scheduler) SetConfig(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	s.cfg = cfg.clone()
	return nil
}

// open opens v, a schedule's view, on the scheduler as it is.
func (s *Scheduler) open(v *view) {
	s.settle()
	s.flush()
	*v = view{cfg: s.cfg, pauses: s.pauses, def: s.def, mu: &s.vmu, names: s.names}
	cow.Open(&s.vmu, s.trees.list(), v.trees.list())
}

// get returns the job named name, or nil.
func (s *Scheduler) get(name string) *job {
	// The job an entry added last is usually the next change's (a poll
	// adds a job, then assigns it).
	if p := s.pending; p != nil && p.st.Name == name {
		return p
	}
	if !s.names.MayHave(name) {
		return nil
	}
	r, _ := s.byName.Get(nameProbe(name))
	return r.j
}

// Job returns the state and plan of the named job. The plan is shared and
// must not be modified.
func (s *Scheduler) Job(name string) (ck.JobState, *ck.JobPlan, bool) {
	j := s.get(name)
	if j == nil {
		return ck.JobState{}, nil, false
	}
	return j.st, j.plan, true
}

// CompletedToken returns the token with which the named job was completed,
// if the completion is still remembered (see Config.CompletedRetention). The
// state machine answers "completed" to a success report carrying that token.
func (s *Scheduler) CompletedToken(name string) (fencing.Token, bool) {
	r, ok := s.completed.Get(doneProbe(name))
	if !ok {
		return 0, false
	}
	return r.d.token, true
}

// hasCompleted reports whether the named job's completion is remembered.
func (s *Scheduler) hasCompleted(name string) bool {
	return s.names.MayHave(name) && s.completed.Has(doneProbe(name))
}

// Expire forgets the completions older than Config.CompletedRetention at log
// time now (completed at a time t with now - t > retention). The state
// machine calls it while applying an entry; the work is proportional to the
// number of completions forgotten.
func (s *Scheduler) Expire(now int64) int {
	cut := now - int64(s.cfg.CompletedRetention)
	if cut > now { // underflow: nothing is old enough
		return 0
	}
	var old []*done
	s.completedAt.Ascend(func(d *done) bool {
		if d.at >= cut {
			return false
		}
		old = append(old, d)
		return true
	})
	for _, d := range old {
		s.forget(d)
	}
	return len(old)
}

func (s *Scheduler) remember(d *done) {
	s.addName(d.name)
	if prev, ok := s.completed.Mut(&s.vmu).ReplaceOrInsert(doneOf(d)); ok {
		s.completedAt.Delete(prev.d)
	}
	s.completedAt.ReplaceOrInsert(d)
}

func (s *Scheduler) forget(d *done) {
	s.completed.Mut(&s.vmu).Delete(doneProbe(d.name))
	s.completedAt.Delete(d)
}

// addName puts name in the filter of the names of the jobs and remembered
// completions (a completed job's is there since its job was added), first
// replacing a full filter by one built from the two trees. The schedules
// open keep the filter they were opened on.
//
// A new filter is sized for four times the names it starts with, so that
// it is rebuilt after three times as many names are added: a rebuild
// hashes every name of both trees, which costs a poll more than the few
// kilobytes the larger filter takes.
func (s *Scheduler) addName(name string) {
	h := bloom.Hash(name)
	if s.names.Has(h) {
		return
	}
	if s.names.Full() {
		f := bloom.New(4 * (s.byName.Len() + s.completed.Len()))
		s.byName.Ascend(func(r named) bool {
			f.Add(bloom.Hash(r.n.String()))
			return true
		})
		s.completed.Ascend(func(r doneRef) bool {
			f.Add(bloom.Hash(r.n.String()))
			return true
		})
		s.names = f
	}
	s.names.Add(h)
}

// insert adds a new job to every index.
func (s *Scheduler) insert(j *job) {
	j.st.Tenant = s.internTenant(j.st.Tenant)
	if j.key == nil {
		j.key = &tenantKey{tenant: j.st.Tenant, level: j.st.Level, name: namekey.Of(j.st.Name)}
	}
	s.addName(j.st.Name)
	s.byName.MutGen(&s.vmu, &s.gen).ReplaceOrInsert(nameOf(j))
	s.addKey(j)
	s.index(j)
	s.count(j, 1)
	if j.st.Status == ck.StatusInProgress {
		s.adjust(j.st.Tenant, j.shard(), 1)
	}
	j.gen = s.gen
}

// insertPending is insert for a job an entry adds: if it belongs in ready
// and aging, it becomes pending instead (see Scheduler.pending).
func (s *Scheduler) insertPending(j *job) {
	s.flush()
	if s.treesOf(j)[0] == &s.ready {
		s.pending = j
	}
	s.insert(j)
}

// flush puts the pending job, if any, into ready and aging.
func (s *Scheduler) flush() {
	if j := s.pending; j != nil {
		s.pending = nil
		s.index(j)
	}
}

// remove drops a job from every index.
func (s *Scheduler) remove(j *job) {
	s.releaseTenant(j.st.Tenant)
	s.byName.MutGen(&s.vmu, &s.gen).Delete(nameProbe(j.st.Name))
	s.dropKey(j.key)
	s.unindex(j)
	s.count(j, -1)
	if j.st.Status == ck.StatusInProgress {
		s.adjust(j.st.Tenant, j.shard(), -1)
	}
}

// Where a job's tenant index entry is (tenantKey.at).
const (
	keyNowhere uint8 = iota // in no index: a new or removed job's
	keyIndexed              // in byTenant
	keyPending              // in keys, not in byTenant
	keyDropped              // in keys, its job removed
)

// addKey puts the key of a job being inserted in the tenant index: at once
// if the job has a cap (a schedule reads a capped tenant's jobs there when
// one of them ends, see Schedule.free), else in keys for tenantIndex. A
// key is new (keyNowhere): a job once removed is never inserted again.
func (s *Scheduler) addKey(j *job) {
	k := j.key
	if j.hasCap {
		s.byTenant.Mut(&s.vmu).ReplaceOrInsert(k)
		k.at = keyIndexed
		return
	}
	s.keys = append(s.keys, k)
	k.at = keyPending
	s.nPending++
	if len(s.keys) >= 2*s.nPending+1024 {
		s.compactKeys()
	}
}

// dropKey takes the key of a job being removed out of the tenant index.
func (s *Scheduler) dropKey(k *tenantKey) {
	switch k.at {
	case keyIndexed:
		s.byTenant.Mut(&s.vmu).Delete(k)
		k.at = keyNowhere
	case keyPending:
		k.at = keyDropped
		s.nPending--
	}
}

// compactKeys drops from keys the entries of removed jobs, so that keys
// holds at most twice the pending entries (plus a constant): each entry
// is passed over O(1) times, amortized.
func (s *Scheduler) compactKeys() {
	out := s.keys[:0]
	s.sweepKeys(func(k *tenantKey) { out = append(out, k) })
	clear(s.keys[len(out):])
	s.keys = out
}

// tenantIndex returns the tenant index with every job in it, putting the
// pending keys in first: each reader of byTenant but a schedule (which
// reads only capped jobs there) reads it through tenantIndex. The keys go
// in in the order their jobs were added, which decides nothing but the
// tree's shape: byTenant is read only in key order.
func (s *Scheduler) tenantIndex() *cow.Tree[*tenantKey] {
	if len(s.keys) > 0 {
		s.sweepKeys(func(k *tenantKey) {
			s.byTenant.Mut(&s.vmu).ReplaceOrInsert(k)
			k.at = keyIndexed
		})
		clear(s.keys)
		s.keys = s.keys[:0]
		s.nPending = 0
	}
	return &s.byTenant
}

// sweepKeys passes over keys in order: it forgets the entries of removed
// jobs and calls fn for each pending key.
func (s *Scheduler) sweepKeys(fn func(*tenantKey)) {
	for _, k := range s.keys {
		switch k.at {
		case keyPending:
			fn(k)
		case keyDropped:
			k.at = keyNowhere
		}
	}
}

// tenantName is a tenant's name as its jobs share it, and their number.
type tenantName struct {
	s    string
	jobs int
}

// internTenant returns the copy of tenant's name the jobs of the tenant
// share, counting one more job.
func (s *Scheduler) internTenant(tenant string) string {
	n := s.tenantNames[tenant]
	if n == nil {
		if s.tenantNames == nil {
			s.tenantNames = make(map[string]*tenantName)
		}
		n = &tenantName{s: tenant}
		s.tenantNames[tenant] = n
	}
	n.jobs++
	return n.s
}

// releaseTenant counts one job less of tenant.
func (s *Scheduler) releaseTenant(tenant string) {
	if n := s.tenantNames[tenant]; n != nil {
		if n.jobs--; n.jobs == 0 {
			delete(s.tenantNames, tenant)
		}
	}
}

// replace gives old's job the record draft describes (same name, tenant
// and level): written over old if no view can reach it, else a new record
// in old's place in every index. A job that starts or stops being in
// progress changes its tenant's count, and at the tenant's cap the holds
// of its other jobs.
func (s *Scheduler) replace(old, draft *job) {
	s.unindex(old)
	prev, nj := *old, old
	if s.settleJobs() && old.gen == s.gen {
		*nj = *draft // no view can reach old: it changes in place
	} else {
		if nj = draft; draft == &s.draft {
			nj = new(job)
			*nj = *draft
		}
		s.byName.MutGen(&s.vmu, &s.gen).ReplaceOrInsert(nameOf(nj))
	}
	s.index(nj)
	nj.gen = s.gen // a new record: no tree frozen before it was in it holds it
	if prev.st.Status != nj.st.Status || prev.hold != nj.hold {
		s.count(&prev, -1)
		s.count(nj, 1)
	}
	if was, is := prev.st.Status == ck.StatusInProgress, nj.st.Status == ck.StatusInProgress; was != is {
		if is {
			s.adjust(nj.st.Tenant, nj.shard(), 1)
		} else {
			s.adjust(nj.st.Tenant, nj.shard(), -1)
		}
	}
}

// draftOf returns a draft of j's next record (see replace): the
// scheduler's scratch copy of it, valid until the next draft.
func (s *Scheduler) draftOf(j *job) *job {
	s.draft = *j
	return &s.draft
}

// settleJobs settles the trees that hold job records unless an open
// schedule holds one of them (cow.Tree.SettleClosed), and reports whether
// it settled them all: a record of the current generation is then
// reachable by no view. A schedule still open keeps the trees it holds
// pending (it may read them in place), and the records are replaced, not
// changed.
func (s *Scheduler) settleJobs() bool {
	if !s.byName.SettleClosed(&s.vmu, &s.gen) {
		return false
	}
	for _, t := range [...]*cow.Tree[*job]{&s.ready, &s.aging, &s.held, &s.expiry, &s.excluded, &s.idle} {
		if !t.SettleClosed(&s.vmu, &s.gen) {
			return false
		}
	}
	return true
}

// treesOf returns the indexes j belongs to by its status and holds.
func (s *Scheduler) treesOf(j *job) (ts [2]*cow.Tree[*job]) {
	switch j.st.Status {
	case ck.StatusUnassigned:
		switch j.hold {
		case 0:
			ts = [2]*cow.Tree[*job]{&s.ready, &s.aging}
		case holdCapped:
			ts[0] = &s.held
		}
	case ck.StatusInProgress:
		if !idles(j.hold) {
			ts[0] = &s.expiry
		} else {
			ts[0] = &s.idle
		}
	case ck.StatusExcluded:
		ts[0] = &s.excluded
	}
	return ts
}

// index adds j to the indexes of its status (the pending job waits).
func (s *Scheduler) index(j *job) {
	if j == s.pending {
		return
	}
	for _, t := range s.treesOf(j) {
		if t != nil {
			t.MutGen(&s.vmu, &s.gen).ReplaceOrInsert(j)
		}
	}
}

// unindex removes j from the indexes of its status (the pending job is in
// none yet).
func (s *Scheduler) unindex(j *job) {
	if j == s.pending {
		s.pending = nil
		return
	}
	for _, t := range s.treesOf(j) {
		if t != nil {
			t.MutGen(&s.vmu, &s.gen).Delete(j)
		}
	}
}

// count adds delta to the per-level statistics of j.
func (s *Scheduler) count(j *job, delta int) {
	i, found := slices.BinarySearchFunc(s.levels, j.st.Level, func(l LevelStats, level uint32) int {
		switch {
		case l.Level < level:
			return -1
		case l.Level > level:
			return 1
		}
		return 0
	})
	if !found {
		s.levels = slices.Insert(s.levels, i, LevelStats{Level: j.st.Level})
	}
	l := &s.levels[i]
	switch j.st.Status {
	case ck.StatusUnassigned:
		l.Unassigned += delta
	case ck.StatusInProgress:
		l.InProgress += delta
	case ck.StatusExcluded:
		l.Excluded += delta
	}
	if j.hold&holdPaused != 0 {
		l.Paused += delta
	}
	if j.st.Status == ck.StatusUnassigned && j.hold&(holdClosed|holdCapped) != 0 {
		l.Held += delta
	}
	if l.empty() {
		s.levels = slices.Delete(s.levels, i, i+1)
	}
}

// successor returns the smallest string greater than s.
func successor(s string) string { return s + "\x00" }

// maxLevel is the largest level.
const maxLevel = math.MaxUint32
