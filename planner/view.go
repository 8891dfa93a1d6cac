package planner

import (
	"cmp"
	"io"
	"slices"
	"strings"

	ck "github.com/compactkit/compactkit"
)

// View is a read-only, copy-on-write snapshot of a planner's state, for
// Prepare: it plans jobs ([View.Next]) without changing the planner, and it
// can write a snapshot of the state it was opened on ([View.Snapshot]).
//
// [Planner.View] opens a view in O(1); the view reads the planner's trees
// copy-on-write, as the package documentation's rule says. Open views on
// demand — one per Prepare, not after every Apply — and close them when
// done, so that Apply copies nothing for them.
//
// A view may be used on another goroutine while the planner keeps
// changing. A view itself is not safe for concurrent use: Next advances its
// own planning state.
type View struct {
	// s is the planner's state when the view was opened, its trees frozen
	// lazily (lazy.go); planning never changes it (the view's own progress
	// is in the fields below).
	s      state
	closed bool

	// Planning state: what the plans returned so far took.
	seq       uint64         // sequence number of the next plan's name
	cursor    string         // fairness cursor: tenant of the last plan (or claim)
	after     string         // cursor + "\x00", once computed
	hasCursor bool           // cursor is set (the empty tenant is a tenant)
	touched   []touch        // keys this view's plans took from
	walk      []walked       // scratch of first: touched keys a scan passed
	path      []int          // scratch of matPast
	byArr     map[uint64]int // touched by head arrival, once there are many
	pivot     queue          // B-tree search key

	// mat[r] holds the keys competing at level r because of their age or
	// aging, or because they are forced (not because they are full), as of
	// log time matNow and the Force entries matForce; matOK tells that mat
	// was computed, and force holds the valid entries of matForce. See
	// materialize.
	matNow   int64
	matOK    bool
	matForce []Force
	force    []Force
	mat      [][]cand
	// offers[r] holds the next batches of the touched keys that compete
	// at level r, as of matNow and force, sorted by (candCompare, touch):
	// one entry at most per touched key (see reoffer).
	offers [][]cand
	// matNext[r][i], once positive, tells that the entries of mat[r] from
	// i up to matNext[r][i] (excluded) are of keys the view took from (see
	// matPast); nil until a scan passes over one.
	matNext [][]int32
	sortTmp []cand // scratch of sortCands
	// unripe holds, when matNow is before the clock of the view's state,
	// the entries in full of batches ripe or aged at the clock but not
	// ready or aged at matNow.
	unripe map[fullEnt]struct{}
	// named holds the names of the view's plans, which Close hands to the
	// planner (see handoff).
	named viewNames

	handed map[ck.Tombstone]struct{} // tombstones attached to this view's plans
}

// touch is a key some plans of the view took blocks from.
type touch struct {
	k    key
	q    *queue
	arr0 uint64 // arrival of the key's head batch in the planner (and its indexes)
	off  int    // blocks taken
	rem  batch  // the batch that follows
	// offered tells that rem has an entry in View.offers: offer, at
	// competing level at.
	offered bool
	at      uint32
	offer   cand
	rank    uint8 // the tenant's rank
	// next[i], if nextN[i] > 0, is the entry of full (of the view's frozen
	// state) nextN[i] entries after the key's own entry i (see slot), all
	// of them touched keys' (the key's own included): a scan of full that
	// reaches this entry goes on from next[i] if that passes minLink
	// entries or more (see View.first). Touched keys stay touched, so
	// next stays valid; scans move it forward.
	next  [2]fullEnt
	nextN [2]int
	// lc is the key's level policy (looked up once: with many tenants of
	// their own the lookup is a search of a large tree).
	lc *LevelConfig
}

// slot returns which of the key's entries in full e is: 0 for the one at
// its own level and rank, 1 for its aged one (see agedEnt).
func (t *touch) slot(e fullEnt) int {
	if e.level != e.from || e.rank != t.rank {
		return 1
	}
	return 0
}

// cand is a key with a ready batch.
type cand struct {
	tenant string
	arr    uint64 // arrival of the batch's first block
	level  uint32
	shard  uint32
	touch  int   // index in View.touched + 1, or 0
	rank   uint8 // the rank it competes at
}

// manyTouched is the number of touched keys from which a map finds them.
const manyTouched = 32

// isTouched reports whether key k, whose head batch starts with arrival
// arr in the planner's indexes, was touched by this view. Arrivals are
// unique, so they find keys fast; the key is compared too, so that a
// restored state in which two blocks share an arrival number (which Restore
// does not look for: see [Restore]) can at worst make a plan inadmissible.
func (v *View) isTouched(k key, arr uint64) bool {
	_, ok := v.touchOf(k, arr)
	return ok
}

// touchOf returns the index in touched of key k whose head batch in the
// planner starts at arrival arr.
func (v *View) touchOf(k key, arr uint64) (int, bool) {
	if v.byArr != nil {
		i, ok := v.byArr[arr]
		return i, ok && v.touched[i].k == k
	}
	for i := range v.touched {
		if v.touched[i].arr0 == arr && v.touched[i].k == k {
			return i, true
		}
	}
	return 0, false
}

// candCompare orders candidates by (rank, tenant, first arrival).
func candCompare(a, b cand) int {
	if c := rankTenant(a, b); c != 0 {
		return c
	}
	return cmp.Compare(a.arr, b.arr)
}

func candLess(a, b cand) bool { return candCompare(a, b) < 0 }

// sortCands sorts cs by candCompare, and candidates of equal (rank,
// tenant, arrival) — which arrive only from a restored state in which two
// blocks share an arrival number — by (level, shard). A view sorts every
// batch ready by age once (see materialize), typically thousands of
// candidates of a few tenants each, gathered in the order they became
// ready, which is close to their arrivals'. So it groups them by (rank,
// tenant) with a map, orders the groups, places the candidates group by
// group, and sorts each group by arrival, which is cheap for a run that is
// nearly sorted: a few comparisons of strings per group, and of integers
// per candidate.
func (v *View) sortCands(cs []cand) {
	if len(cs) < 2 {
		return
	}
	// A group is a candidate with only its rank and tenant set.
	ids := make(map[cand]int32)
	var groups []cand
	gid := make([]int32, len(cs))
	for i := range cs {
		g := cand{rank: cs[i].rank, tenant: cs[i].tenant}
		id, ok := ids[g]
		if !ok {
			id = int32(len(groups))
			ids[g] = id
			groups = append(groups, g)
		}
		gid[i] = id
	}
	// start[id]: where group id's run begins, from the groups' order.
	order := make([]int32, len(groups))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return rankTenant(groups[a], groups[b]) })
	count := make([]int, len(groups))
	for _, id := range gid {
		count[id]++
	}
	start := make([]int, len(groups))
	at := 0
	for _, id := range order {
		start[id] = at
		at += count[id]
	}
	tmp := append(v.sortTmp[:0], cs...)
	next := slices.Clone(start)
	for i, id := range gid {
		cs[next[id]] = tmp[i]
		next[id]++
	}
	for id := range groups {
		run := cs[start[id] : start[id]+count[id]]
		if !slices.IsSortedFunc(run, byArrival) {
			slices.SortFunc(run, byArrival)
		}
	}
	v.sortTmp = tmp[:0]
}

// byArrival orders candidates of one rank and tenant by arrival, then by
// level and shard (see sortCands).
func byArrival(a, b cand) int {
	if c := cmp.Compare(a.arr, b.arr); c != 0 {
		return c
	}
	if c := cmp.Compare(a.level, b.level); c != 0 {
		return c
	}
	return cmp.Compare(a.shard, b.shard)
}

// rankTenant orders candidates by (rank, tenant): a search with it in a
// list sorted by candCompare finds the first candidate not below a rank
// and tenant.
func rankTenant(a, b cand) int {
	if a.rank != b.rank {
		return cmp.Compare(a.rank, b.rank)
	}
	return strings.Compare(a.tenant, b.tenant)
}

// PlanOptions are the caller's inputs to one call of [View.Next].
type PlanOptions struct {
	// Skip reports whether a tenant's jobs of a level must not be planned
	// now (a paused tenant or level: the scheduler owns the paused set).
	// Skip and Tombstones run while the view reads the planner's trees:
	// they must not call the planner or its views.
	// The blocks of skipped keys stay queued. Nil skips nothing. Each call
	// of Next costs a B-tree seek per skipped tenant with a ready batch:
	// for many tenants left out for long, hold them ([Planner.SetHold]).
	Skip func(tenant string, level uint32) bool
	// Tombstones pulls the next releasable tombstone not attached to any
	// job (from the index's view), or false when there is none. Nil
	// attaches no tombstones.
	Tombstones func() (ck.Tombstone, bool)
	// Force lists the batches an operator wants compacted now, whatever
	// their size and age (see [Force]); malformed entries are ignored. Nil
	// forces nothing.
	Force []Force
	// Release lists tenants whose hold of every level (the all of
	// [Planner.SetHold]; a hold of some levels stays) the view lifts, from
	// this call on, for its own planning: it plans their ready batches
	// again, where Skip lets it. The state machine releases a tenant held
	// at its cap of jobs in progress once a poll's completions bring it
	// below the cap, so that the poll may start the tenant's next job. The
	// planner and other views keep their holds. Each tenant costs a B-tree
	// lookup per call, and the first call that lifts its hold the cost of
	// SetHold.
	Release []string
}

// maxDuplicatePulls bounds how many tombstones already handed out Next
// skips for one job, in case the iterator cycles.
const maxDuplicatePulls = 1 << 12

// View returns a read-only view of the planner's current state (see
// [View]). It must be called where the planner's other methods are (on the
// Apply goroutine or under its lock); the view may then be used anywhere.
func (p *Planner) View() *View {
	v := &View{s: p.openView(), seq: p.s.nextSeq, cursor: p.s.cursor, hasCursor: p.s.hasCursor, named: p.named.spare}
	p.named.spare = viewNames{}
	return v
}

// Snapshot writes the state the view was opened on (see the format in
// snapshot.go); planning on the view does not change it. Equal states
// write identical bytes. It may run while the planner keeps changing.
func (v *View) Snapshot(w io.Writer) error {
	v.read(needAll)
	return v.s.snapshot(w)
}

// Next plans the next job at log time now: the oldest batch of the next
// tenant in rotation among the ready batches of the lowest rank at the
// lowest competing level.
// It returns false when no batch is ready. Successive calls return
// disjoint plans, as if each earlier plan had been claimed: the fairness
// rotation and the job sequence number advance within the view. The
// planner is never changed.
//
// The policy, in full:
//
//   - A key's next batch is formed from its oldest queued blocks by the
//     level's rules (see [LevelConfig]); it is ready when it is full, or when
//     its oldest block has waited longer than the level's MaxAge at now.
//   - A ready batch competes at its level, or at level 0 once it has been
//     ready for longer than the level's AgingThreshold (it became ready when
//     it filled up or when its MaxAge passed, whichever came first).
//   - The lowest competing level with a ready batch is served. Among its
//     ready batches, those of the lowest rank compete ([Terms],
//     as of the view's opening): a batch competes at its tenant's rank,
//     except that one competing at level 0 because of aging competes at
//     rank 0, the best, whatever its tenant's rank; so does a level-0
//     batch of a rank above 0 once it has been ready for longer than level
//     0's AgingThreshold (it ages without changing level). Among them, the
//     tenant is the first one after the fairness cursor (the tenant of the
//     last claimed job, of any rank) in tenant order, wrapping around;
//     among that tenant's batches, the one whose first block arrived
//     first. With every tenant at one rank, ranks change nothing.
//   - A batch that is not ready but is forced by an entry of opts.Force
//     (its key matches the entry and its first block arrived at or before
//     the entry's Before) is ready at its own level; after it is planned,
//     the key's next batch is forced on the same terms.
//   - Keys for which opts.Skip(tenant, level) is true are passed over,
//     forced or not.
//   - Keys of held tenants ([Planner.SetHold], as of the view's opening)
//     are never visited, forced or not.
//
// A job of a level within the configured tombstone range carries up to
// TombstonesPerJob tombstones pulled from opts.Tombstones. They are pulled
// one at a time, only as many as the job takes, so none is left pulled and
// unattached; a tombstone this view already attached to a job is skipped
// if the iterator yields it again, so none is handed out twice.
//
// The cost is O(log n) per job plus the blocks of the plan, a search and
// an insertion in the view's list of the keys it took from, and a seek per
// run of keys it took from between the cursor and the batch it picks (a
// scan links the keys it passes over to the entry after them, so a run is
// walked once per view and then passed in one step); plus, once per view,
// time and set of Force entries, the number of batches that became ready
// by age or aged between the planner's clock (the time of the latest
// entry applied: those ready or aged before it are indexed with the full
// ones) and now, and the number of keys of the forced tenants (which are
// gathered and sorted by rank and tenant). Ranks cost nothing per tenant:
// the indexes are ordered by rank, so the tenants of higher ranks are not
// visited while a lower rank has a ready batch. Held tenants cost nothing;
// each skipped tenant costs a B-tree seek per call.
func (v *View) Next(now int64, opts *PlanOptions) (ck.JobPlan, bool) {
	var skip func(string, uint32) bool
	var force []Force
	if opts != nil {
		skip, force = opts.Skip, opts.Force
	}
	if opts != nil && len(opts.Release) > 0 {
		v.read(needIndexes | needPolicy)
		for _, t := range opts.Release {
			v.release(t)
		}
	}
	// Planning reads the trees in place until it returns (lazy.go).
	v.borrow(needIndexes | needPolicy | needKeys)
	defer v.giveBack()
	v.materialize(now, force)
	for r := range v.s.cfg.FinalLevel {
		if c, ok := v.pick(r, skip); ok {
			return v.plan(c, opts), true
		}
	}
	return ck.JobPlan{}, false
}

// materialize gathers, per competing level, the keys that are ready at now
// because of their age (and not because they are full) but were not at the
// clock, those that compete at level 0 because of aging (level-0 batches
// of ranks above 0 included) but did not at the clock, and those that
// force makes ready, sorted by (rank, tenant, arrival); aged batches
// compete at rank 0. At a time before the clock, it records the entries
// of full not ready or aged then instead (unripe).
func (v *View) materialize(now int64, force []Force) {
	if v.matOK && v.matNow == now && slices.Equal(v.matForce, force) {
		return
	}
	v.matOK, v.matNow = true, now
	v.matForce = append(v.matForce[:0], force...)
	v.force = v.force[:0]
	for i := range force {
		if force[i].Validate() == nil {
			v.force = append(v.force, force[i])
		}
	}
	if v.mat == nil {
		v.mat = make([][]cand, v.s.cfg.FinalLevel)
		v.matNext = make([][]int32, v.s.cfg.FinalLevel)
	}
	for r := range v.mat {
		v.mat[r], v.matNext[r] = v.mat[r][:0], nil
	}
	clear(v.unripe)
	for l := range v.s.cfg.FinalLevel {
		lc := v.s.cfg.level(l)
		// Partial batches ready by age: their entries' times are the times
		// from which they are (ready strictly after). Those ripe at the
		// view's clock are in full and aging already (see state.ready);
		// at a time before the clock, those not ready then are passed over.
		if now < v.s.clock {
			v.s.timed.AscendGreaterOrEqual(timeEnt{level: l, t: now}, func(e timeEnt) bool {
				if e.level != l || e.t >= v.s.clock {
					return false
				}
				v.pass(fullOf(e))
				return true
			})
		}
		v.s.timed.AscendGreaterOrEqual(timeEnt{level: l, t: v.s.clock}, func(e timeEnt) bool {
			if e.level != l || now <= e.t {
				return false
			}
			c := cand{tenant: e.tenant, arr: e.arr, level: l, shard: e.shard, rank: e.rank}
			if ages(l, e.rank, lc) && olderThan(e.t, now, lc.AgingThreshold) {
				c.rank = 0 // aged: the best rank
				v.mat[0] = append(v.mat[0], c)
			} else {
				v.mat[l] = append(v.mat[l], c)
			}
			return true
		})
		// Full and ripe batches that age have aging entries: at level 0,
		// only those of ranks above 0. An aged one competes at level 0 and
		// rank 0 (at level 0 it is in the full index at its tenant's rank
		// too, where this better candidate of the same key always wins).
		// Those aged at the view's clock are in full already (see
		// state.aged); at a time before the clock, those not aged then
		// are passed over.
		if at := lc.AgingThreshold; at > 0 {
			if now < v.s.clock {
				v.s.aging.AscendGreaterOrEqual(timeEnt{level: l, t: satSub(now, int64(at))}, func(e timeEnt) bool {
					if e.level != l || !olderThan(e.t, v.s.clock, at) {
						return false
					}
					if !olderThan(e.t, now, at) {
						v.pass(agedEnt(e))
					}
					return true
				})
			}
			v.s.aging.AscendGreaterOrEqual(timeEnt{level: l, t: satSub(v.s.clock, int64(at))}, func(e timeEnt) bool {
				if e.level != l || !olderThan(e.t, now, at) {
					return false
				}
				if !olderThan(e.t, v.s.clock, at) {
					v.mat[0] = append(v.mat[0], cand{tenant: e.tenant, arr: e.arr, level: l, shard: e.shard}) // rank 0: aged
				}
				return true
			})
		}
	}
	if len(v.force) > 0 {
		v.materializeForced(now)
	}
	for r := range v.mat {
		v.sortCands(v.mat[r])
	}
	if v.offers == nil {
		v.offers = make([][]cand, v.s.cfg.FinalLevel)
	}
	for r := range v.offers {
		v.offers[r] = v.offers[r][:0]
	}
	for i := range v.touched {
		v.touched[i].offered = false
		v.reoffer(i)
	}
}

// pass records that full's entry e, of a batch ripe or aged at the clock,
// is not ready or aged at matNow, before it.
func (v *View) pass(e fullEnt) {
	if v.unripe == nil {
		v.unripe = make(map[fullEnt]struct{})
	}
	v.unripe[e] = struct{}{}
}

// materializeForced adds to mat the keys that v.force makes ready at now:
// those of the forced tenants (every key if one entry forces all tenants)
// whose head batch is not ready anyway and is forced. Held tenants have no
// index entries and are not forced either.
func (v *View) materializeForced(now int64) {
	visit := func(q *queue) {
		h := &q.head
		if q.k.level >= v.s.cfg.FinalLevel || h.count == 0 || h.ready(now, v.s.levelOf(q.k.tenant, q.k.level)) {
			return
		}
		if before, ok := v.forceBefore(q.k); !ok || h.first > before {
			return
		}
		v.mat[q.k.level] = append(v.mat[q.k.level], cand{tenant: q.k.tenant, arr: h.arr, level: q.k.level, shard: q.k.shard,
			rank: v.s.rankOf(q.k.tenant)})
	}
	tenants := make([]string, 0, len(v.force))
	for i := range v.force {
		if v.force[i].AllTenants {
			v.s.keys.Ascend(func(q *queue) bool {
				if !v.s.isHeld(q.k.tenant, q.k.level) {
					visit(q)
				}
				return true
			})
			return
		}
		tenants = append(tenants, v.force[i].Tenant)
	}
	slices.Sort(tenants)
	for _, t := range slices.Compact(tenants) {
		v.s.eachKey(t, func(q *queue) {
			if !v.s.isHeld(t, q.k.level) {
				visit(q)
			}
		})
	}
}

// forceBefore returns the latest Before of the valid Force entries of the
// current call that match key k, and whether any does.
func (v *View) forceBefore(k key) (before int64, ok bool) {
	for i := range v.force {
		if f := &v.force[i]; f.matches(k) && (!ok || f.Before > before) {
			before, ok = f.Before, true
		}
	}
	return before, ok
}

// pick returns the batch to plan at competing level r, if any: among the
// ready batches of the lowest rank, the first tenant's after the cursor
// (wrapping around), and its oldest batch.
func (v *View) pick(r uint32, skip func(string, uint32) bool) (cand, bool) {
	if v.hasCursor {
		if v.after == "" {
			v.after = v.cursor + "\x00" // the least tenant after the cursor
		}
		// Rank 0 is the best: a tenant of rank 0 after the cursor goes
		// first. (With every tenant at rank 0, this and the wrap-around
		// below are the only searches.)
		if c, ok := v.first(r, skip, 0, v.after, true); ok {
			return c, true
		}
	}
	c, ok := v.first(r, skip, 0, "", false)
	if !ok || !v.hasCursor || c.rank == 0 || c.tenant > v.cursor {
		return c, ok
	}
	// The best rank's first tenant is not after the cursor: look for one
	// of that rank that is, or wrap around to it.
	if d, ok := v.first(r, skip, c.rank, v.after, true); ok {
		return d, true
	}
	return c, true
}

// first returns the ready batch competing at level r with the least
// (rank, tenant, first arrival) not below (rank, low): of exactly that
// rank if same is set, of that rank or a higher one otherwise. Ready and
// competing are as of matNow, for which materialize gathered mat and
// offers.
func (v *View) first(r uint32, skip func(string, uint32) bool, rank uint8, low string, same bool) (best cand, found bool) {
	consider := func(c cand) {
		if !found || candLess(c, best) {
			best, found = c, true
		}
	}
	// Keys whose head batch is full, ripe or aged at the clock, by (rank,
	// tenant, own level, arrival), but those not ready or aged at matNow
	// (unripe). A run of touched keys' entries is passed over in one seek
	// once a scan has walked it (touch.next), so that a view's scans do
	// not walk the keys it took from again and again. A skipped tenant's
	// keys of a level are passed over in one seek; a tenant not skipped
	// is asked once per level, however many of its keys the view took
	// from.
	pivot := fullEnt{level: r, rank: rank, tenant: low}
	var passed string // a tenant skip passed at level passedAt, if passedOK
	var passedAt uint32
	passedOK := false
	// The touched keys passed since the last untouched entry, and the
	// number of their entries.
	walk, n := v.walk[:0], 0
	for again := true; again; {
		again = false
		ended := true // unless the callback stops the scan
		v.s.full.AscendGreaterOrEqual(pivot, func(e fullEnt) bool {
			ended = false
			if e.level != r || same && e.rank != rank || found && (e.tenant != best.tenant || e.rank != best.rank) {
				walk, n = v.link(walk, n, e)
				return false
			}
			if i, ok := v.touchOf(key{tenant: e.tenant, shard: e.shard, level: e.from}, e.arr); ok {
				t := &v.touched[i]
				sl := t.slot(e)
				walk = append(walk, walked{i: i, at: n, slot: sl})
				if t.nextN[sl] >= minLink {
					pivot, again = t.next[sl], true
					n += t.nextN[sl]
					return false
				}
				n++
				ended = true
				return true
			}
			walk, n = v.link(walk, n, e)
			if len(v.unripe) > 0 {
				if _, ok := v.unripe[e]; ok {
					ended = true
					return true
				}
			}
			// The entries of a tenant and rank are grouped by their keys'
			// own level (more than one only at level 0, rank 0, with aged
			// entries), and skip is asked per own level.
			next := fullEnt{level: r, rank: e.rank, tenant: e.tenant, from: e.from + 1}
			if skip != nil && (!passedOK || passed != e.tenant || passedAt != e.from) {
				if skip(e.tenant, e.from) {
					pivot, again = next, true
					return false
				}
				passed, passedAt, passedOK = e.tenant, e.from, true
			}
			consider(cand{tenant: e.tenant, arr: e.arr, level: e.from, shard: e.shard, rank: e.rank})
			if r == 0 && e.rank == 0 && v.s.agedN > 0 {
				// The tenant's oldest batch may be in a later group.
				pivot, again = next, true
			}
			return false
		})
		if ended {
			// The scan walked the last entries: nothing follows them but
			// the entries of the next level (r is below maxLevels).
			walk, n = v.link(walk, n, fullEnt{level: r + 1})
		}
	}
	v.walk = walk[:0]
	// Keys ready by age, or by aging (r = 0), or forced.
	m := v.mat[r]
	i, _ := slices.BinarySearchFunc(m, cand{rank: rank, tenant: low}, rankTenant)
	var skipped cand
	skipOK := false
	for ; i < len(m); i++ {
		if i = v.matPast(r, i); i == len(m) {
			break
		}
		c := m[i]
		if found && !candLess(c, best) || same && c.rank != rank {
			break
		}
		if skip != nil {
			if skipOK && skipped.tenant == c.tenant && skipped.level == c.level {
				continue
			}
			if skip(c.tenant, c.level) {
				skipped, skipOK = c, true
				continue
			}
		}
		consider(c)
		break
	}
	// Keys this view already took from: their next batch, where it
	// competes (see offerOf), in order.
	o := v.offers[r]
	i, _ = slices.BinarySearchFunc(o, cand{rank: rank, tenant: low}, rankTenant)
	for ; i < len(o); i++ {
		c := o[i]
		if found && !candLess(c, best) || same && c.rank != rank {
			break
		}
		if skip != nil && skip(c.tenant, c.level) {
			continue
		}
		consider(c)
		break
	}
	return best, found
}

// matPast returns the first position from i on, in mat[r], of an entry
// whose key the view has not taken from. The entries it passes over are
// linked to it (matNext), so that later calls pass over them in one step.
func (v *View) matPast(r uint32, i int) int {
	m := v.mat[r]
	path := v.path[:0]
	j := i
	for j < len(m) && v.isTouched(key{tenant: m[j].tenant, shard: m[j].shard, level: m[j].level}, m[j].arr) {
		if v.matNext[r] == nil {
			v.matNext[r] = make([]int32, len(m))
		}
		path = append(path, j)
		if n := v.matNext[r][j]; n > 0 {
			j = int(n)
		} else {
			j++
		}
	}
	for _, p := range path {
		v.matNext[r][p] = int32(j)
	}
	v.path = path[:0]
	return j
}

// minLink is the number of entries a scan of the full heads must pass for
// a touched key's link to be worth the seek it costs.
const minLink = 16

// walked is a touched key a scan of the full heads passed: its index in
// View.touched, and the number of touched keys' entries the scan had
// passed before its own.
type walked struct{ i, at, slot int }

// link records in the touched keys of walk that e follows them, n entries
// after the scan's first (all of them touched keys'), where that passes
// minLink entries or more, and returns walk emptied and 0.
func (v *View) link(walk []walked, n int, e fullEnt) ([]walked, int) {
	for _, w := range walk {
		if n-w.at < minLink {
			break // the keys after it pass fewer entries still
		}
		v.touched[w.i].next[w.slot], v.touched[w.i].nextN[w.slot] = e, n-w.at
	}
	return walk[:0], 0
}

// reoffer puts the entry of touched key i in offers where its next batch
// competes now (matNow, force), replacing the one it had.
func (v *View) reoffer(i int) {
	t := &v.touched[i]
	if t.offered {
		o := v.offers[t.at]
		j, ok := slices.BinarySearchFunc(o, t.offer, offerCompare)
		if !ok {
			panic("planner: a touched key's offer is missing") // a bug: offers follow the touched keys
		}
		v.offers[t.at] = slices.Delete(o, j, j+1)
		t.offered = false
	}
	r, c, ok := v.offerOf(i)
	if !ok {
		return
	}
	o := v.offers[r]
	j, _ := slices.BinarySearchFunc(o, c, offerCompare)
	v.offers[r] = slices.Insert(o, j, c)
	t.offered, t.at, t.offer = true, r, c
}

// offerOf returns the competing level and the candidate of touched key
// i's next batch at matNow, if it competes: at the level and rank where
// it competes if it is ready (its own, or level 0 and rank 0 once aged),
// at its own level and rank if the Force entries make it ready.
func (v *View) offerOf(i int) (uint32, cand, bool) {
	t := &v.touched[i]
	b, now := &t.rem, v.matNow
	var r uint32
	var rk uint8
	switch {
	case b.count == 0:
		return 0, cand{}, false
	case b.ready(now, t.lc):
		r, rk = b.competes(t.k.level, t.rank, now, t.lc)
	default:
		if before, ok := v.forceBefore(t.k); !ok || b.first > before {
			return 0, cand{}, false
		}
		// A batch that is not ready has not aged either.
		r, rk = t.k.level, t.rank
	}
	return r, cand{tenant: t.k.tenant, arr: b.arr, level: t.k.level, shard: t.k.shard, touch: i + 1, rank: rk}, true
}

// offerCompare orders offers by candCompare, then by touched key: two
// batches share an arrival only in a restored state with repeated
// arrivals (see isTouched), and then the key touched first goes first.
func offerCompare(a, b cand) int {
	if c := candCompare(a, b); c != 0 {
		return c
	}
	return cmp.Compare(a.touch, b.touch)
}

// plan turns the chosen batch into a job plan and records what it took.
func (v *View) plan(c cand, opts *PlanOptions) ck.JobPlan {
	k := key{tenant: c.tenant, shard: c.shard, level: c.level}
	ti := c.touch - 1
	if ti < 0 {
		lc := v.s.levelOf(k.tenant, k.level)
		q := v.s.getQueue(k, &v.pivot)
		if q == nil {
			panic("planner: index entry without a queue") // a bug: the indexes follow the queues
		}
		if v.touched == nil {
			v.touched = make([]touch, 0, 16)
		}
		ti = len(v.touched)
		v.touched = append(v.touched, touch{k: k, q: q, arr0: q.head.arr, rem: q.head, rank: v.s.rankOf(k.tenant), lc: lc})
		if v.byArr != nil {
			v.byArr[q.head.arr] = ti
		} else if len(v.touched) > manyTouched {
			v.byArr = make(map[uint64]int, 2*len(v.touched))
			for i := range v.touched {
				v.byArr[v.touched[i].arr0] = i
			}
		}
	}
	t := &v.touched[ti]
	n := t.rem.count
	sources := make([]string, 0, n)
	t.q.visit(t.off, func(items []item) bool {
		for i := range items {
			if len(sources) == n {
				return false
			}
			sources = append(sources, items[i].id)
		}
		return len(sources) < n
	})
	t.off += n
	t.rem = formBatch(t.q, t.off, t.lc)
	v.reoffer(ti)

	plan := ck.JobPlan{Tenant: k.tenant, Shard: k.shard, Level: k.level, Sources: sources}
	plan.Name = jobName(k, v.seq, sources)
	v.named.add(k, v.seq, sources, plan.Name)
	v.seq++
	if !v.hasCursor || v.cursor != k.tenant {
		v.cursor, v.hasCursor, v.after = k.tenant, true, ""
	}
	if opts != nil && opts.Tombstones != nil && v.s.cfg.tombstoneLevel(k.level) {
		plan.Tombstones = v.tombstones(opts.Tombstones)
	}
	return plan
}

// tombstones pulls up to TombstonesPerJob tombstones not yet handed out.
func (v *View) tombstones(next func() (ck.Tombstone, bool)) []ck.Tombstone {
	var out []ck.Tombstone
	for dups := 0; len(out) < v.s.cfg.TombstonesPerJob && dups < maxDuplicatePulls; {
		t, ok := next()
		if !ok {
			break
		}
		if _, seen := v.handed[t]; seen {
			dups++
			continue
		}
		if v.handed == nil {
			v.handed = make(map[ck.Tombstone]struct{})
		}
		v.handed[t] = struct{}{}
		out = append(out, t)
	}
	return out
}
