package planner

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/internal/ident"
	"github.com/compactkit/compactkit/policy"
)

// This file checks the planner against a plain model: maps and sorted
// slices, and planning by brute force over every key.

type mBlock struct {
	id                string
	arr               uint64
	t, minT, maxT, sz int64
}

type mClaim struct {
	k      key
	blocks []mBlock
}

type mQuar struct {
	b      mBlock
	k      key
	job    string
	reason string
	since  int64
}

type model struct {
	cfg       Config
	queues    map[key][]mBlock
	claims    map[string]mClaim
	quar      map[string]mQuar
	clock     int64
	nextArr   uint64
	nextSeq   uint64
	cursor    string
	hasCursor bool
	missed    uint64
	held      mHolds    // held tenants (SetHold)
	ranks     mRanks    // tenants' ranks (SetRank, SetDefaultRank)
	levels    mBatching // tenants' batching (SetLevels, SetDefaultLevels)
}

// mBatching holds the tenants' own level overrides and the default ones.
type mBatching struct {
	own map[string][]policy.Level
	def []policy.Level
}

func (l mBatching) clone() mBatching { return mBatching{own: maps.Clone(l.own), def: l.def} }

// of returns the level policy of a tenant's blocks of a level under cfg:
// the fields its overrides (its own, or else the default) set replace the
// configured ones.
func (l mBatching) of(cfg *Config, tenant string, level uint32) LevelConfig {
	over, ok := l.own[tenant]
	if !ok {
		over = l.def
	}
	lc := cfg.Levels[level]
	for _, o := range over {
		if o.Level != level {
			continue
		}
		if o.MaxBlocks != 0 {
			lc.MaxBlocks = o.MaxBlocks
		}
		if o.MaxBytes != 0 {
			lc.MaxBytes = o.MaxBytes
		}
		if o.MaxAge != 0 {
			lc.MaxAge = o.MaxAge
		}
		switch o.CrossShard {
		case policy.On:
			lc.CrossShard = true
		case policy.Off:
			lc.CrossShard = false
		}
	}
	return lc
}

// mRanks are the tenants' own ranks and the default rank.
type mRanks struct {
	own map[string]uint8
	def uint8
}

func (r mRanks) of(tenant string) uint8 {
	if rk, ok := r.own[tenant]; ok {
		return rk
	}
	return r.def
}

func (r mRanks) clone() mRanks { return mRanks{own: maps.Clone(r.own), def: r.def} }

func newModel(cfg Config) *model {
	return &model{cfg: cfg.clone(), queues: map[key][]mBlock{}, claims: map[string]mClaim{}, quar: map[string]mQuar{}, nextArr: 1, nextSeq: 1,
		held: mHolds{all: map[string]bool{}, lv: map[string]uint64{}}, ranks: mRanks{own: map[string]uint8{}}, levels: mBatching{own: map[string][]policy.Level{}}}
}

// mForced reports whether a Force entry of force makes a batch of key k
// whose first block arrived at time first ready: an entry that matches the
// key (and does not name a tenant while forcing all) and whose Before is
// not earlier than first.
func mForced(force []Force, k key, first int64) bool {
	for _, f := range force {
		if f.AllTenants && f.Tenant != "" {
			continue
		}
		if (f.AllTenants || f.Tenant == k.tenant) && (f.AllLevels || f.Level == k.level) && first <= f.Before {
			return true
		}
	}
	return false
}

func (m *model) keyOf(tenant string, shard, level uint32) key {
	if m.levels.of(&m.cfg, tenant, level).CrossShard {
		shard = ck.AnyShard
	}
	return key{tenant, shard, level}
}

func (m *model) insert(k key, bs []mBlock) {
	if len(bs) == 0 {
		return
	}
	q := append(slices.Clone(m.queues[k]), bs...)
	slices.SortFunc(q, func(a, b mBlock) int { return cmp.Compare(a.arr, b.arr) })
	m.queues[k] = q
}

// mBatch forms the batch at the front of bs under lc: the number of blocks,
// whether it is full, and the arrival time of the block that completed it.
func mBatch(bs []mBlock, lc LevelConfig) (n int, full bool, done int64) {
	n = 1
	bytes := bs[0].sz
	lo, hi := bs[0].minT, bs[0].maxT
	for {
		if n >= lc.MaxBlocks || lc.MaxBytes > 0 && bytes >= lc.MaxBytes {
			return n, true, bs[n-1].t
		}
		if n == len(bs) {
			return n, false, 0
		}
		b := bs[n]
		if lc.MaxBytes > 0 && bytes+b.sz > lc.MaxBytes {
			return n, true, b.t
		}
		if lc.MaxSpan > 0 && max(hi, b.maxT)-min(lo, b.minT) > int64(lc.MaxSpan) {
			return n, true, b.t
		}
		n++
		bytes += b.sz
		lo, hi = min(lo, b.minT), max(hi, b.maxT)
	}
}

type mPlan struct {
	k       key
	sources []string
}

// plan plans by brute force: every key's next batch is formed and judged.
// Keys of held tenants are left out; a batch that is not ready but forced
// competes at its level. Among the batches of the lowest competing level,
// those of the lowest rank compete (rank 0 for aged batches, of level 0
// too); among them, the first tenant after the cursor, wrapping, and its
// oldest batch.
func (m *model) plan(off map[key]int, cursor string, hasCursor bool, now int64, skip func(string, uint32) bool,
	held mHolds, ranks mRanks, levels mBatching, force []Force) (mPlan, bool) {
	for r := range m.cfg.FinalLevel {
		type c struct {
			k    key
			arr  uint64
			n    int
			rank uint8
		}
		var cs []c
		for k, q := range m.queues {
			q = q[off[k]:]
			if len(q) == 0 || k.level >= m.cfg.FinalLevel || held.at(k.tenant, k.level) || skip != nil && skip(k.tenant, k.level) {
				continue
			}
			lc := levels.of(&m.cfg, k.tenant, k.level)
			n, full, done := mBatch(q, lc)
			ready := full || lc.MaxAge > 0 && now-q[0].t > int64(lc.MaxAge)
			if !ready {
				if mForced(force, k, q[0].t) && k.level == r {
					cs = append(cs, c{k, q[0].arr, n, ranks.of(k.tenant)})
				}
				continue
			}
			var since int64
			switch {
			case full && lc.MaxAge > 0:
				since = min(done, q[0].t+int64(lc.MaxAge))
			case full:
				since = done
			default:
				since = q[0].t + int64(lc.MaxAge)
			}
			eff, rank := k.level, ranks.of(k.tenant)
			// Aging: at level 0 as well, for the tenants of ranks above 0.
			if (k.level > 0 || rank > 0) && lc.AgingThreshold > 0 && now-since > int64(lc.AgingThreshold) {
				eff, rank = 0, 0
			}
			if eff == r {
				cs = append(cs, c{k, q[0].arr, n, rank})
			}
		}
		if len(cs) == 0 {
			continue
		}
		low := slices.MinFunc(cs, func(a, b c) int { return cmp.Compare(a.rank, b.rank) }).rank
		cs = slices.DeleteFunc(cs, func(x c) bool { return x.rank != low })
		slices.SortFunc(cs, func(a, b c) int {
			if x := strings.Compare(a.k.tenant, b.k.tenant); x != 0 {
				return x
			}
			return cmp.Compare(a.arr, b.arr)
		})
		best := cs[0]
		if hasCursor {
			for _, x := range cs {
				if x.k.tenant > cursor {
					best = x
					break
				}
			}
		}
		q := m.queues[best.k][off[best.k]:]
		p := mPlan{k: best.k}
		for _, b := range q[:best.n] {
			p.sources = append(p.sources, b.id)
		}
		return p, true
	}
	return mPlan{}, false
}

// admissible is the model's rule: the sources are the key's oldest blocks
// and the name's sequence number is not used yet.
func (m *model) admissible(pl *ck.JobPlan) bool {
	if len(pl.Sources) == 0 || pl.Level >= m.cfg.FinalLevel {
		return false
	}
	seq, ok := nameSeq(pl.Name)
	if !ok || seq < m.nextSeq {
		return false
	}
	k := key{pl.Tenant, pl.Shard, pl.Level}
	q := m.queues[k]
	if len(q) < len(pl.Sources) {
		return false
	}
	for i, id := range pl.Sources {
		if q[i].id != id {
			return false
		}
	}
	return jobName(k, seq, pl.Sources) == pl.Name
}

func (m *model) claim(pl *ck.JobPlan, t int64) {
	seq, _ := nameSeq(pl.Name)
	k := key{pl.Tenant, pl.Shard, pl.Level}
	q := m.queues[k]
	n := len(pl.Sources)
	m.claims[pl.Name] = mClaim{k: k, blocks: slices.Clone(q[:n])}
	if len(q) == n {
		delete(m.queues, k)
	} else {
		m.queues[k] = slices.Clone(q[n:])
	}
	m.nextSeq = seq + 1
	m.cursor, m.hasCursor = pl.Tenant, true
	m.clock = max(m.clock, t)
}

// harness drives a planner (and, after a restore, its restored twin) and
// the model with the same calls.
type harness struct {
	t       *rapid.T
	p       *Planner
	twin    *Planner // Restore(Snapshot(p)) at some point, driven alike
	m       *model
	entry   uint64
	blocks  map[string]ck.BlockMeta // every block ever enqueued
	nextID  int
	pending []ck.JobPlan // plans not claimed yet, possibly stale
	// wide, if set, spreads blocks over 48 shards and lets a view plan up
	// to 400 jobs (TestViewLinks).
	wide bool
}

func (h *harness) planners() []*Planner {
	if h.twin != nil {
		return []*Planner{h.p, h.twin}
	}
	return []*Planner{h.p}
}

func (h *harness) nextEntry(t int64) ck.Entry {
	h.entry++
	return ck.Entry{Index: h.entry, Term: 1, Time: t}
}

func snap(t require.TestingT, p *Planner) []byte {
	var b bytes.Buffer
	require.NoError(t, p.View().Snapshot(&b))
	return b.Bytes()
}

var (
	mTenants = []string{"", "a", "b", "c"}
	mLevels  = []uint32{0, 1, 2, 3}
	mSteps   = []time.Duration{-5 * time.Second, 0, 5 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute}
	mBefores = []time.Duration{-time.Minute, -10 * time.Second, -5 * time.Second, 0, 5 * time.Second, time.Minute}
	mNows    = []time.Duration{-5 * time.Second, 0, 10 * time.Second, 30 * time.Second, 40 * time.Second,
		70 * time.Second, 100 * time.Second, 130 * time.Second, 190 * time.Second, 10 * time.Minute}
)

func genLevelConfig(t *rapid.T, l int) LevelConfig {
	return LevelConfig{
		MaxBlocks:      rapid.IntRange(1, 5).Draw(t, fmt.Sprintf("maxBlocks%d", l)),
		MaxBytes:       rapid.SampledFrom([]int64{0, 0, 100, 250}).Draw(t, fmt.Sprintf("maxBytes%d", l)),
		MaxAge:         rapid.SampledFrom([]time.Duration{0, 10 * time.Second, time.Minute}).Draw(t, fmt.Sprintf("maxAge%d", l)),
		MaxSpan:        rapid.SampledFrom([]time.Duration{0, 30 * time.Second, 5 * time.Minute}).Draw(t, fmt.Sprintf("maxSpan%d", l)),
		AgingThreshold: rapid.SampledFrom([]time.Duration{0, 30 * time.Second, 2 * time.Minute}).Draw(t, fmt.Sprintf("aging%d", l)),
		CrossShard:     rapid.IntRange(0, 3).Draw(t, fmt.Sprintf("cross%d", l)) == 0,
	}
}

func genConfig(t *rapid.T) Config {
	final := rapid.Uint32Range(1, 3).Draw(t, "final")
	cfg := Config{FinalLevel: final}
	for l := range int(final) {
		cfg.Levels = append(cfg.Levels, genLevelConfig(t, l))
	}
	cfg.TombstonesPerJob = rapid.IntRange(0, 3).Draw(t, "tombstonesPerJob")
	cfg.TombstoneMinLevel = rapid.Uint32Range(0, 1).Draw(t, "tombMin")
	cfg.TombstoneMaxLevel = cfg.TombstoneMinLevel + rapid.Uint32Range(0, 2).Draw(t, "tombSpan")
	return cfg
}

// TestPlannerModel is the state-machine test: random enqueues, plans,
// claims, returns, completions, evictions, re-queues, retention, config
// changes and snapshot/restore, against the model.
func TestPlannerModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		cfg := genConfig(rt)
		p, err := New(cfg)
		require.NoError(rt, err)
		h := &harness{t: rt, p: p, m: newModel(cfg), blocks: map[string]ck.BlockMeta{}}
		rt.Repeat(map[string]func(*rapid.T){
			"":           h.check,
			"enqueue":    h.enqueue,
			"enqueueBad": h.enqueueBad,
			"plan":       h.plan,
			"claimStale": h.claimStale,
			"complete":   h.complete,
			"return":     h.returnJob,
			"quarantine": h.quarantine,
			"requeue":    h.requeue,
			"drop":       h.drop,
			"setConfig":  h.setConfig,
			"restore":    h.restore,
			"setHeld":    h.setHeld,
			"setTerms":   h.setTerms,
		})
	})
}

// TestViewLinks plans hundreds of jobs on views of many keys a tenant, so
// that scans pass over long runs of the keys a view took from (which they
// then pass in one seek), against the model.
func TestViewLinks(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		cfg := genConfig(rt)
		p, err := New(cfg)
		require.NoError(rt, err)
		h := &harness{t: rt, p: p, m: newModel(cfg), blocks: map[string]ck.BlockMeta{}, wide: true}
		for range rapid.IntRange(1, 3).Draw(rt, "rounds") {
			for range rapid.IntRange(20, 150).Draw(rt, "enqueues") {
				h.enqueue(rt)
			}
			h.plan(rt)
			h.check(rt)
		}
	})
}

func (h *harness) enqueue(t *rapid.T) {
	n := rapid.IntRange(1, 8).Draw(t, "n")
	// Coarse times and sizes, so that limits are hit exactly and
	// thresholds are crossed often.
	e := h.nextEntry(h.m.clock + int64(rapid.SampledFrom(mSteps).Draw(t, "dt")))
	for range n {
		h.nextID++
		minT := int64(rapid.IntRange(0, 60).Draw(t, "minT")) * int64(10*time.Second)
		b := ck.BlockMeta{
			ID:      fmt.Sprintf("blk-%d", h.nextID),
			Tenant:  rapid.SampledFrom(mTenants).Draw(t, "tenant"),
			Shard:   rapid.Uint32Range(0, 2).Draw(t, "shard"),
			Level:   rapid.SampledFrom(mLevels).Draw(t, "level"),
			MinTime: minT,
			MaxTime: minT + int64(rapid.IntRange(0, 12).Draw(t, "span"))*int64(10*time.Second),
			Size:    rapid.SampledFrom([]int64{0, 25, 50, 100, 120}).Draw(t, "size"),
		}
		if h.wide {
			b.Shard = rapid.Uint32Range(0, 47).Draw(t, "wideShard")
		}
		if rapid.IntRange(0, 9).Draw(t, "longID") == 0 {
			b.ID = fmt.Sprintf("tenant/segments/%d/01J%023d", h.nextID, h.nextID) // more than 32 bytes
		}
		if rapid.IntRange(0, 9).Draw(t, "anyShard") == 0 {
			b.Shard = ck.AnyShard // the output of a cross-shard job
		}
		h.blocks[b.ID] = b
		for _, p := range h.planners() {
			queued, err := p.Enqueue(e, &b)
			require.NoError(t, err)
			require.Equal(t, b.Level < h.m.cfg.FinalLevel, queued)
		}
		if b.Level < h.m.cfg.FinalLevel {
			m := h.m
			m.clock = max(m.clock, e.Time)
			k := m.keyOf(b.Tenant, b.Shard, b.Level)
			m.queues[k] = append(m.queues[k], mBlock{id: b.ID, arr: m.nextArr, t: m.clock, minT: b.MinTime, maxT: b.MaxTime, sz: b.Size})
			m.nextArr++
		}
	}
}

func (h *harness) enqueueBad(t *rapid.T) {
	b := ck.BlockMeta{ID: "ok", Tenant: "a", MinTime: 1, MaxTime: 2}
	switch rapid.IntRange(0, 4).Draw(t, "defect") {
	case 0:
		b.ID = ""
	case 1:
		b.ID = "a//b"
	case 2:
		b.MinTime = 3
	case 3:
		b.Size = -1
	case 4:
		b.Tenant = "bad\x01tenant"
	}
	before := snap(t, h.p)
	_, err := h.p.Enqueue(h.nextEntry(h.m.clock+1), &b)
	require.Error(t, err)
	_, err = h.p.Enqueue(ck.Entry{}, &ck.BlockMeta{ID: "x", Tenant: "a"})
	require.Error(t, err)
	require.Equal(t, before, snap(t, h.p), "a refused block changed the planner")
}

func (h *harness) plan(t *rapid.T) {
	now := h.m.clock + int64(rapid.SampledFrom(mNows).Draw(t, "now"))
	paused := map[string]bool{}
	pause := func() {
		clear(paused)
		for _, tn := range mTenants {
			for l := range uint32(3) {
				if rapid.IntRange(0, 7).Draw(t, "paused") == 0 {
					paused[fmt.Sprint(tn, "/", l)] = true
				}
			}
		}
	}
	pause()
	skip := func(tenant string, level uint32) bool { return paused[fmt.Sprint(tenant, "/", level)] }
	var force []Force
	reforce := func() {
		force = nil
		for range rapid.IntRange(0, 2).Draw(t, "forces") {
			f := Force{
				Tenant:     rapid.SampledFrom(mTenants).Draw(t, "forceTenant"),
				AllTenants: rapid.IntRange(0, 3).Draw(t, "forceAllTenants") == 0,
				Level:      rapid.SampledFrom(mLevels).Draw(t, "forceLevel"),
				AllLevels:  rapid.IntRange(0, 2).Draw(t, "forceAllLevels") == 0,
				Before:     h.m.clock + int64(rapid.SampledFrom(mBefores).Draw(t, "forceBefore")),
			}
			if f.AllTenants && rapid.IntRange(0, 3).Draw(t, "forceValid") > 0 {
				f.Tenant = "" // valid; otherwise the entry is ignored
			}
			force = append(force, f)
		}
	}
	reforce()
	// A pool of tombstones with repeats, served by an iterator that
	// restarts on every call (as Pyroscope's planner did).
	pool := []ck.Tombstone{}
	for i := range rapid.IntRange(0, 6).Draw(t, "tombstones") {
		pool = append(pool, ck.Tombstone{Kind: ck.TombstoneBlock, Target: fmt.Sprintf("old-%d", i)})
	}
	iter := func() func() (ck.Tombstone, bool) {
		i := 0
		return func() (ck.Tombstone, bool) {
			if i == len(pool) {
				return ck.Tombstone{}, false
			}
			i++
			return pool[i-1], true
		}
	}
	before := make([][]byte, 0, 2)
	for _, p := range h.planners() {
		before = append(before, snap(t, p))
	}
	views := []*View{}
	for _, p := range h.planners() {
		views = append(views, p.View())
	}

	want := h.m
	held := want.held.clone()     // the held set the views were opened with
	ranks := want.ranks.clone()   // and the ranks
	levels := want.levels.clone() // and the batching
	off := map[key]int{}
	cursor, hasCursor, seq := want.cursor, want.hasCursor, want.nextSeq
	handed := map[ck.Tombstone]bool{}
	var plans []ck.JobPlan
	maxPlans := 12
	if h.wide {
		maxPlans = 400
	}
	for range rapid.IntRange(1, maxPlans).Draw(t, "plans") {
		if rapid.IntRange(0, 3).Draw(t, "repause") == 0 {
			pause() // the paused set may change between calls
		}
		if rapid.IntRange(0, 3).Draw(t, "reforce") == 0 {
			reforce() // so may the forced batches
		}
		if rapid.IntRange(0, 5).Draw(t, "holdMidView") == 0 {
			h.setHeld(t) // views opened before plan with the former held set
		}
		if rapid.IntRange(0, 5).Draw(t, "termsMidView") == 0 {
			h.setTerms(t) // and the former ranks and batching
		}
		mp, ok := want.plan(off, cursor, hasCursor, now, skip, held, ranks, levels, force)
		var got []ck.JobPlan
		for _, v := range views {
			pl, gotOK := v.Next(now, &PlanOptions{Skip: skip, Tombstones: iter(), Force: force})
			require.Equal(t, ok, gotOK, "plan exists")
			got = append(got, pl)
		}
		if !ok {
			break
		}
		pl := got[0]
		for _, other := range got[1:] {
			require.Equal(t, pl, other, "the restored twin plans differently")
		}
		require.Equal(t, mp.k, key{pl.Tenant, pl.Shard, pl.Level}, "plan key")
		require.Equal(t, mp.sources, pl.Sources, "plan sources")
		require.NoError(t, pl.Validate())
		gotSeq, ok := nameSeq(pl.Name)
		require.True(t, ok)
		require.Equal(t, seq, gotSeq)
		// Batch rules.
		lc := levels.of(&want.cfg, pl.Tenant, pl.Level)
		q := want.queues[mp.k][off[mp.k]:]
		require.LessOrEqual(t, len(pl.Sources), lc.MaxBlocks)
		n, full, _ := mBatch(q, lc)
		require.Equal(t, n, len(pl.Sources))
		require.True(t, full || lc.MaxAge > 0 && now-q[0].t > int64(lc.MaxAge) || mForced(force, mp.k, q[0].t), "batch neither full nor old nor forced")
		require.False(t, held.at(pl.Tenant, pl.Level), "a held key planned")
		if len(pl.Sources) > 1 {
			var bytes int64
			lo, hi := q[0].minT, q[0].maxT
			for _, b := range q[:n] {
				bytes += b.sz
				lo, hi = min(lo, b.minT), max(hi, b.maxT)
			}
			require.True(t, lc.MaxBytes == 0 || bytes <= lc.MaxBytes, "bytes")
			require.True(t, lc.MaxSpan == 0 || hi-lo <= int64(lc.MaxSpan), "span")
		}
		// Tombstones: each at most once per view, only on levels in range,
		// as many as available.
		if want.cfg.tombstoneLevel(pl.Level) {
			avail := 0
			for _, tb := range pool {
				if !handed[tb] {
					avail++
				}
			}
			require.Len(t, pl.Tombstones, min(avail, want.cfg.TombstonesPerJob))
		} else {
			require.Empty(t, pl.Tombstones)
		}
		for _, tb := range pl.Tombstones {
			require.False(t, handed[tb], "tombstone %s handed out twice", tb)
			handed[tb] = true
		}
		off[mp.k] += len(pl.Sources)
		cursor, hasCursor = pl.Tenant, true
		seq++
		plans = append(plans, pl)
	}
	// The views changed nothing.
	for i, p := range h.planners() {
		require.Equal(t, before[i], snap(t, p), "planning changed the planner")
		var vb bytes.Buffer
		require.NoError(t, views[i].Snapshot(&vb))
		require.Equal(t, before[i], vb.Bytes(), "the view's snapshot differs from the planner's")
	}
	// Claim a prefix of the plans, in order, as Apply would.
	claim := rapid.IntRange(0, len(plans)).Draw(t, "claim")
	for _, pl := range plans[:claim] {
		h.tryClaim(t, pl)
	}
	h.pending = append(h.pending, plans[claim:]...)
}

func (h *harness) tryClaim(t *rapid.T, pl ck.JobPlan) {
	ok := h.m.admissible(&pl)
	e := h.nextEntry(h.m.clock + rapid.Int64Range(0, int64(time.Second)).Draw(t, "claimDt"))
	for _, p := range h.planners() {
		err := p.Admissible(&pl)
		require.Equal(t, ok, err == nil, "admissible: %v", err)
		if err != nil {
			require.ErrorIs(t, err, ErrNotAdmissible)
		}
		err = p.Claim(e, &pl)
		require.Equal(t, ok, err == nil, "claim: %v", err)
	}
	if ok {
		h.m.claim(&pl, e.Time)
	}
}

func (h *harness) claimStale(t *rapid.T) {
	if len(h.pending) == 0 {
		// rapid: the action does not apply now; another is drawn.
		// Not a skipped test: rapid draws another action.
		t.Skip("no pending plan")
	}
	i := rapid.IntRange(0, len(h.pending)-1).Draw(t, "pending")
	pl := h.pending[i]
	h.pending = slices.Delete(h.pending, i, i+1)
	if rapid.Bool().Draw(t, "tamper") && len(pl.Sources) > 1 {
		pl.Sources = pl.Sources[:len(pl.Sources)-1] // the name no longer matches
	}
	h.tryClaim(t, pl)
}

func (h *harness) pickJob(t *rapid.T) string {
	if len(h.m.claims) == 0 {
		// rapid: the action does not apply now; another is drawn.
		// Not a skipped test: rapid draws another action.
		t.Skip("no job")
	}
	names := make([]string, 0, len(h.m.claims))
	for n := range h.m.claims {
		names = append(names, n)
	}
	slices.Sort(names)
	return rapid.SampledFrom(names).Draw(t, "job")
}

func (h *harness) complete(t *rapid.T) {
	if rapid.IntRange(0, 5).Draw(t, "unknown") == 0 {
		for _, p := range h.planners() {
			require.ErrorIs(t, p.Complete("nope"), errUnknownJob)
		}
		return
	}
	job := h.pickJob(t)
	for _, p := range h.planners() {
		require.NoError(t, p.Complete(job))
	}
	delete(h.m.claims, job)
}

func (h *harness) returnJob(t *rapid.T) {
	job := h.pickJob(t)
	c := h.m.claims[job]
	var keep []string
	var kept []mBlock
	for _, b := range c.blocks {
		if rapid.IntRange(0, 3).Draw(t, "keep") > 0 {
			keep = append(keep, b.id)
			kept = append(kept, b)
		}
	}
	if rapid.IntRange(0, 6).Draw(t, "badKeep") == 0 {
		before := snap(t, h.p)
		require.ErrorIs(t, h.p.Return(job, append(slices.Clone(keep), "not-a-source")), errNotSource)
		require.Equal(t, before, snap(t, h.p))
	}
	for _, p := range h.planners() {
		require.NoError(t, p.Return(job, keep))
		got, ok := p.Claimed(job)
		require.False(t, ok)
		require.Nil(t, got)
	}
	delete(h.m.claims, job)
	h.m.insert(c.k, kept)
}

func (h *harness) quarantine(t *rapid.T) {
	job := h.pickJob(t)
	c := h.m.claims[job]
	ids, ok := h.p.Claimed(job)
	require.True(t, ok)
	require.Len(t, ids, len(c.blocks))
	e := h.nextEntry(h.m.clock + int64(time.Second))
	reason := rapid.SampledFrom([]string{"failed 3 times", "", strings.Repeat("é", 600)}).Draw(t, "reason")
	for _, p := range h.planners() {
		require.NoError(t, p.Quarantine(e, job, reason))
	}
	h.m.clock = max(h.m.clock, e.Time)
	for _, b := range c.blocks {
		h.m.quar[b.id] = mQuar{b: b, k: c.k, job: job, reason: ident.ClipReason(reason), since: h.m.clock}
	}
	delete(h.m.claims, job)
}

func (h *harness) requeue(t *rapid.T) {
	var ids []string
	for id := range h.m.quar {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var pick []string
	for _, id := range ids {
		if rapid.Bool().Draw(t, "requeue") {
			pick = append(pick, id)
		}
	}
	want := len(pick)
	if len(pick) > 0 && rapid.Bool().Draw(t, "repeat") {
		pick = append(pick, pick[0]) // a repeated ID counts once
	}
	pick = append(pick, "unknown-block")
	for _, p := range h.planners() {
		n, err := p.Requeue(pick)
		require.NoError(t, err)
		require.Equal(t, want, n)
	}
	for _, id := range pick {
		if q, ok := h.m.quar[id]; ok {
			h.m.insert(q.k, []mBlock{q.b})
			delete(h.m.quar, id)
		}
	}
	_, err := h.p.Requeue([]string{"../bad"})
	require.Error(t, err)
}

func (h *harness) drop(t *rapid.T) {
	var ids []string
	for id := range h.blocks {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var blocks []ck.BlockMeta
	for _, id := range ids {
		if rapid.IntRange(0, 4).Draw(t, "drop") == 0 {
			blocks = append(blocks, h.blocks[id])
		}
	}
	if rapid.Bool().Draw(t, "unknown") {
		blocks = append(blocks, ck.BlockMeta{ID: "never-added", Tenant: "a"})
	}
	m := h.m
	var jobs []string
	seen := map[string]bool{}
	for _, b := range blocks {
		if b.Level >= m.cfg.FinalLevel || seen[b.ID] {
			continue
		}
		seen[b.ID] = true
		if _, ok := m.quar[b.ID]; ok {
			delete(m.quar, b.ID)
			continue
		}
		found := false
		for _, k := range []key{{b.Tenant, b.Shard, b.Level}, {b.Tenant, ck.AnyShard, b.Level}} {
			q := m.queues[k]
			if i := slices.IndexFunc(q, func(x mBlock) bool { return x.id == b.ID }); i >= 0 {
				q = slices.Delete(slices.Clone(q), i, i+1)
				if len(q) == 0 {
					delete(m.queues, k)
				} else {
					m.queues[k] = q
				}
				found = true
				break
			}
		}
		if !found {
			for name, c := range m.claims {
				if slices.ContainsFunc(c.blocks, func(x mBlock) bool { return x.id == b.ID }) {
					jobs = append(jobs, name)
					found = true
				}
			}
		}
		if !found {
			m.missed++
		}
	}
	slices.Sort(jobs)
	jobs = slices.Compact(jobs)
	for _, p := range h.planners() {
		got := p.Drop(blocks)
		if len(jobs) == 0 {
			require.Empty(t, got)
		} else {
			require.Equal(t, jobs, got)
		}
	}
}

func (h *harness) setConfig(t *rapid.T) {
	cfg := genConfig(t)
	highest, occupied := uint32(0), false
	see := func(k key) {
		if !occupied || k.level > highest {
			highest, occupied = k.level, true
		}
	}
	for k := range h.m.queues {
		see(k)
	}
	for _, c := range h.m.claims {
		see(c.k)
	}
	for _, q := range h.m.quar {
		see(q.k)
	}
	ok := !occupied || highest < cfg.FinalLevel
	for _, p := range h.planners() {
		err := p.SetConfig(cfg)
		require.Equal(t, ok, err == nil, "set config: %v", err)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalidConfig)
		}
	}
	if ok {
		h.m.cfg = cfg.clone()
	}
	bad := cfg
	bad.FinalLevel = 0
	require.ErrorIs(t, h.p.SetConfig(bad), ErrInvalidConfig)
}

func (h *harness) restore(t *rapid.T) {
	b := snap(t, h.p)
	r, err := Restore(bytes.NewReader(b))
	require.NoError(t, err)
	require.Equal(t, b, snap(t, r), "a restored planner re-snapshots differently")
	// Holds are not in snapshots: the state machine re-installs them.
	for _, tn := range mTenants {
		require.False(t, r.s.holdOf(tn).all)
		require.Zero(t, r.s.holdOf(tn).levels)
	}
	for _, tn := range slices.Sorted(maps.Keys(h.m.held.all)) {
		r.SetHold(tn, true, r.s.holdOf(tn).levels)
	}
	for _, tn := range slices.Sorted(maps.Keys(h.m.held.lv)) {
		r.SetHold(tn, r.s.holdOf(tn).all, h.m.held.lv[tn])
	}
	// So are terms: ranks and batching.
	for _, tn := range mTenants {
		require.Zero(t, r.s.rankOf(tn))
		require.False(t, r.s.levels.Has(tenantLevels{tenant: tn}))
	}
	require.NoError(t, r.SetDefaultTerms(Terms{Rank: h.m.ranks.def, Levels: h.m.levels.def}))
	for _, tn := range slices.Sorted(maps.Keys(h.m.ranks.own)) {
		require.NoError(t, r.SetTerms(tn, &Terms{Rank: h.m.ranks.own[tn], Levels: h.m.levels.own[tn]}))
	}
	if h.twin == nil || rapid.Bool().Draw(t, "newTwin") {
		h.twin = r
	} else {
		h.p = r
	}
}

// setHeld holds or releases a tenant, at every level or at some (one
// without blocks, sometimes).
func (h *harness) setHeld(t *rapid.T) {
	tenant := rapid.SampledFrom(append([]string{"none"}, mTenants...)).Draw(t, "heldTenant")
	before := snap(t, h.p)
	setLevels := func(levels uint64) {
		if levels != 0 {
			h.m.held.lv[tenant] = levels
		} else {
			delete(h.m.held.lv, tenant)
		}
	}
	setAll := func(held bool) {
		if held {
			h.m.held.all[tenant] = true
		} else {
			delete(h.m.held.all, tenant)
		}
	}
	switch rapid.IntRange(0, 2).Draw(t, "holdCall") {
	case 0:
		levels := rapid.Uint64Range(0, 7).Draw(t, "levels")
		for _, p := range h.planners() {
			p.SetHold(tenant, p.s.holdOf(tenant).all, levels)
			require.Equal(t, levels, p.s.holdOf(tenant).levels)
		}
		setLevels(levels)
	case 1:
		held := rapid.Bool().Draw(t, "held")
		for _, p := range h.planners() {
			p.SetHold(tenant, held, p.s.holdOf(tenant).levels)
			require.Equal(t, held, p.s.holdOf(tenant).all)
		}
		setAll(held)
	default:
		held, levels := rapid.Bool().Draw(t, "held"), rapid.Uint64Range(0, 7).Draw(t, "levels")
		for _, p := range h.planners() {
			p.SetHold(tenant, held, levels)
			require.Equal(t, held, p.s.holdOf(tenant).all)
			require.Equal(t, levels, p.s.holdOf(tenant).levels)
		}
		setAll(held)
		setLevels(levels)
	}
	require.Equal(t, before, snap(t, h.p), "a hold changed the snapshot")
}

// mHolds is the model's held set: tenants held at every level, and the
// levels held of others.
type mHolds struct {
	all map[string]bool
	lv  map[string]uint64
}

func (m mHolds) at(tenant string, level uint32) bool {
	return m.all[tenant] || level < 64 && m.lv[tenant]&(1<<level) != 0
}

func (m mHolds) clone() mHolds { return mHolds{all: maps.Clone(m.all), lv: maps.Clone(m.lv)} }

// setTerms gives a tenant terms of its own (a rank and batching), takes
// them away, or sets the default terms, before or after holding it (a
// tenant without blocks, sometimes), and checks that bad overrides are
// refused and change nothing.
func (h *harness) setTerms(t *rapid.T) {
	tenant := rapid.SampledFrom(append([]string{"none"}, mTenants...)).Draw(t, "termsTenant")
	rank := uint8(rapid.IntRange(0, 3).Draw(t, "rank"))
	over := genLevels(t)
	before := snap(t, h.p)
	switch rapid.IntRange(0, 3).Draw(t, "termsOp") {
	case 0:
		for _, p := range h.planners() {
			require.NoError(t, p.SetDefaultTerms(Terms{Rank: rank, Levels: over}))
			require.Equal(t, rank, p.s.defRank)
		}
		h.m.ranks.def = rank
		h.m.levels.def = over
	case 1:
		for _, p := range h.planners() {
			require.NoError(t, p.SetTerms(tenant, nil))
		}
		delete(h.m.ranks.own, tenant)
		delete(h.m.levels.own, tenant)
	default:
		for _, p := range h.planners() {
			require.NoError(t, p.SetTerms(tenant, &Terms{Rank: rank, Levels: over}))
		}
		h.m.ranks.own[tenant] = rank
		h.m.levels.own[tenant] = over
	}
	for _, p := range h.planners() {
		require.Equal(t, h.m.ranks.of(tenant), p.s.rankOf(tenant))
	}
	bad := []policy.Level{{Level: 1, MaxBlocks: maxBlocksPerJob + 1}}
	if rapid.Bool().Draw(t, "badOrder") {
		bad = []policy.Level{{Level: 2, MaxBlocks: 1}, {Level: 1, MaxBlocks: 1}}
	}
	require.ErrorIs(t, h.p.SetTerms(tenant, &Terms{Rank: rank + 1, Levels: bad}), ErrInvalidConfig)
	require.ErrorIs(t, h.p.SetDefaultTerms(Terms{Rank: rank + 1, Levels: bad}), ErrInvalidConfig)
	require.Equal(t, before, snap(t, h.p), "terms changed the snapshot")
}

// genLevels draws level overrides: some levels (some beyond the final
// level), each overriding some fields.
func genLevels(t *rapid.T) []policy.Level {
	var out []policy.Level
	for l := range uint32(4) {
		if !rapid.Bool().Draw(t, fmt.Sprintf("override%d", l)) {
			continue
		}
		o := policy.Level{Level: l,
			MaxBlocks:  rapid.SampledFrom([]int{0, 1, 2, 3}).Draw(t, "oMaxBlocks"),
			MaxBytes:   rapid.SampledFrom([]int64{0, 100, 250}).Draw(t, "oMaxBytes"),
			MaxAge:     rapid.SampledFrom([]time.Duration{0, time.Second, 10 * time.Second}).Draw(t, "oMaxAge"),
			CrossShard: policy.Toggle(rapid.IntRange(0, 2).Draw(t, "oCross")),
		}
		if o == (policy.Level{Level: l}) {
			o.MaxBlocks = 1
		}
		out = append(out, o)
	}
	return out
}

// check compares every planner with the model, and the planners'
// internals with their invariants.
func (h *harness) check(t *rapid.T) {
	for _, p := range h.planners() {
		checkPlanner(t, p, h.m)
	}
	if h.twin != nil {
		require.Equal(t, snap(t, h.p), snap(t, h.twin), "planner and restored twin diverged")
		require.Equal(t, h.p.Stats(0), h.twin.Stats(0))
	}
}

func checkPlanner(t require.TestingT, p *Planner, m *model) {
	s := &p.s
	require.Equal(t, m.cfg, s.cfg)
	require.Equal(t, m.nextSeq, s.nextSeq)
	require.Equal(t, m.nextArr, s.nextArrival)
	require.Equal(t, m.clock, s.clock)
	require.Equal(t, m.hasCursor, s.hasCursor)
	require.Equal(t, m.cursor, s.cursor)
	require.Equal(t, m.missed, s.counters.MissedRemovals)
	for _, tn := range append([]string{"none"}, mTenants...) {
		require.Equal(t, m.held.all[tn], p.s.holdOf(tn).all, "held %q", tn)
		require.Equal(t, m.held.lv[tn], p.s.holdOf(tn).levels, "held levels of %q", tn)
		require.Equal(t, m.ranks.of(tn), p.s.rankOf(tn), "rank %q", tn)
		tl, own := p.s.levels.Get(tenantLevels{tenant: tn})
		over := tl.over
		want, wantOwn := m.levels.own[tn]
		require.Equal(t, wantOwn, own, "own batching of %q", tn)
		require.Equal(t, len(want), len(over), "overrides of %q", tn)
		for l := range m.cfg.FinalLevel {
			lc, ok := p.LevelConfig(tn, l)
			require.True(t, ok)
			require.Equal(t, m.levels.of(&m.cfg, tn, l), lc, "level %d policy of %q", l, tn)
		}
	}
	// The count of tenants whose batching overrides something.
	own := 0
	s.levels.Ascend(func(tl tenantLevels) bool {
		if tl.levels != nil {
			own++
		}
		return true
	})
	require.Equal(t, own, s.ownLevels, "tenants with overriding batching")
	// Queues, and their invariants.
	got := map[key][]mBlock{}
	fulls, timed, aging, agedN := 0, 0, 0, 0
	s.keys.Ascend(func(q *queue) bool {
		require.Positive(t, q.n)
		var bs []mBlock
		var sumSec int64
		q.visit(0, func(items []item) bool {
			for _, it := range items {
				bs = append(bs, mBlock{id: it.id, arr: it.arrival, t: it.time, minT: it.minT, maxT: it.maxT, sz: it.size})
				sumSec += it.seconds()
			}
			return true
		})
		require.Len(t, bs, q.n)
		require.Equal(t, sumSec, q.sumSec)
		require.Same(t, q, p.lookup(q.k))
		got[q.k] = bs
		lc := s.levelOf(q.k.tenant, q.k.level)
		require.Equal(t, formBatch(q, 0, lc), q.head, "head batch of %v", q.k)
		rank := m.ranks.of(q.k.tenant)
		fe := fullEnt{level: q.k.level, shard: q.k.shard, tenant: q.k.tenant, arr: q.head.arr, from: q.k.level, rank: rank}
		if m.held.at(q.k.tenant, q.k.level) {
			// A held key has no index entries.
			require.False(t, s.full.Has(fe))
			require.False(t, s.timed.Has(timeEnt{level: q.k.level, shard: q.k.shard, t: satAdd(q.head.first, int64(lc.MaxAge)), arr: q.head.arr, tenant: q.k.tenant}))
			return true
		}
		// ages checks the aging entry of a batch ready since rs, if it ages,
		// and its aged entry in full once it is aged at the clock.
		ages := func(rs int64) {
			if (q.k.level == 0 && rank == 0) || lc.AgingThreshold <= 0 {
				return
			}
			aging++
			te, ok := s.aging.Get(timeEnt{level: q.k.level, shard: q.k.shard, t: rs, arr: q.head.arr, tenant: q.k.tenant})
			require.True(t, ok, "aging entry of %v", q.k)
			require.Equal(t, rank, te.rank, "aging entry's rank")
			at := s.cfg.level(q.k.level).AgingThreshold
			aged := olderThan(rs, s.clock, at)
			require.Equal(t, aged, s.full.Has(agedEnt(te)), "aged entry of %v", q.k)
			if aged {
				fulls++
				agedN++
			} else {
				require.LessOrEqual(t, s.nextRipe, agesAt(rs, at), "nextRipe of a head of %v not aged", q.k)
			}
		}
		switch {
		case q.head.full:
			fulls++
			require.True(t, s.full.Has(fe))
			rs, _ := q.head.readySince(lc)
			ages(rs)
		case lc.MaxAge > 0:
			timed++
			te := satAdd(q.head.first, int64(lc.MaxAge))
			e, ok := s.timed.Get(timeEnt{level: q.k.level, shard: q.k.shard, t: te, arr: q.head.arr, tenant: q.k.tenant})
			require.True(t, ok)
			require.Equal(t, rank, e.rank, "timed entry's rank")
			// Ripe: indexed as a full batch that became ready at te; not
			// yet: the clock has not passed nextRipe.
			ripe := te < s.clock
			require.Equal(t, ripe, s.full.Has(fe), "ripe head of %v in full", q.k)
			if !ripe {
				require.LessOrEqual(t, s.nextRipe, te, "nextRipe of an unripe head of %v", q.k)
				break
			}
			fulls++
			ages(te)
		}
		return true
	})
	require.Equal(t, fulls, s.full.Len())
	require.Equal(t, agedN, s.agedN, "aged entries")
	require.Equal(t, timed, s.timed.Len())
	require.Equal(t, aging, s.aging.Len())
	want := map[key][]mBlock{}
	for k, q := range m.queues {
		if len(q) > 0 {
			want[k] = q
		}
	}
	require.Equal(t, want, got)
	// Claims.
	require.Equal(t, len(m.claims), s.claims.Len())
	byKey := map[key][]string{}
	for name, c := range m.claims {
		byKey[c.k] = append(byKey[c.k], name)
	}
	for k, names := range byKey { // each key's walk finds its claims, in name order
		var found []string
		s.eachClaimOf(k, func(c *claim) bool { found = append(found, c.name.String()); return true })
		slices.Sort(names)
		require.Equal(t, names, found, "claims of %+v", k)
	}
	for name, c := range m.claims {
		gc, ok := s.getClaim(name)
		require.True(t, ok, "claim %s", name)
		require.Equal(t, c.k, gc.k)
		require.Len(t, gc.items, len(c.blocks))
		for i, it := range gc.items {
			require.Equal(t, c.blocks[i], mBlock{id: it.id, arr: it.arrival, t: it.time, minT: it.minT, maxT: it.maxT, sz: it.size})
		}
	}
	// Quarantine, through the paged listing.
	var listed []QuarantinedBlock
	for cursor := ""; ; {
		page, next := p.Quarantined(cursor, 3)
		listed = append(listed, page...)
		if next == "" {
			break
		}
		cursor = next
	}
	require.Len(t, listed, len(m.quar))
	for _, qb := range listed {
		q, ok := m.quar[qb.ID]
		require.True(t, ok)
		require.Equal(t, QuarantinedBlock{ID: q.b.id, Tenant: q.k.tenant, Shard: q.k.shard, Level: q.k.level, Job: q.job,
			Reason: q.reason, Since: q.since, Arrived: q.b.t, MinTime: q.b.minT, MaxTime: q.b.maxT, Size: q.b.sz}, qb)
	}
	// Stats agree with the model.
	st := p.Stats(0)
	queued, claimed := 0, 0
	for _, q := range m.queues {
		queued += len(q)
	}
	for _, c := range m.claims {
		claimed += len(c.blocks)
	}
	require.Equal(t, queued, st.Queued)
	require.Equal(t, claimed, st.Claimed)
	require.Equal(t, len(m.quar), st.Quarantined)
	require.Equal(t, len(m.claims), st.Jobs)
	require.Equal(t, len(want), st.Keys)
}

// TestNoTwoAdmissiblePlansShareABlock plans many jobs on one view and
// checks, at every step, that claiming one plan makes every other plan
// sharing a block inadmissible, and that every queued block is planned
// exactly once when every plan is claimed.
func TestNoTwoAdmissiblePlansShareABlock(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		cfg := genConfig(rt)
		p, err := New(cfg)
		require.NoError(rt, err)
		queued := map[string]bool{}
		n := rapid.IntRange(1, 200).Draw(rt, "blocks")
		for i := range n {
			b := ck.BlockMeta{ID: fmt.Sprintf("b%d", i), Tenant: rapid.SampledFrom(mTenants).Draw(rt, "tenant"),
				Shard: rapid.Uint32Range(0, 2).Draw(rt, "shard"), Level: rapid.Uint32Range(0, cfg.FinalLevel-1).Draw(rt, "level"),
				MaxTime: rapid.Int64Range(0, int64(time.Hour)).Draw(rt, "maxT"), Size: rapid.Int64Range(0, 120).Draw(rt, "size")}
			ok, err := p.Enqueue(ck.Entry{Index: uint64(i + 1), Time: int64(i) * int64(time.Second)}, &b)
			require.NoError(rt, err)
			require.True(rt, ok)
			queued[b.ID] = true
		}
		// Far in the future, every batch is ready by age if it has an age
		// limit; force one everywhere.
		for l := range cfg.Levels {
			cfg.Levels[l].MaxAge = time.Second
		}
		require.NoError(rt, p.SetConfig(cfg))
		now := int64(1000 * time.Hour)
		v := p.View()
		var plans []ck.JobPlan
		for {
			pl, ok := v.Next(now, nil)
			if !ok {
				break
			}
			plans = append(plans, pl)
		}
		planned := map[string]int{}
		for _, pl := range plans {
			for _, id := range pl.Sources {
				planned[id]++
			}
		}
		for id := range queued {
			require.Equal(rt, 1, planned[id], "block %s planned %d times", id, planned[id])
		}
		// A second view of the same state plans the same jobs.
		v2 := p.View()
		for _, pl := range plans {
			pl2, ok := v2.Next(now, nil)
			require.True(rt, ok)
			require.Equal(rt, pl, pl2)
		}
		// Claim in a random order: a plan is admissible only when every
		// plan before it of the same key is claimed; once a plan is claimed,
		// no plan sharing its blocks is.
		order := rapid.Permutation(plans).Draw(rt, "order")
		claimed := map[string]bool{}
		for i := 0; i < len(order); i++ {
			pl := order[i]
			err := p.Admissible(&pl)
			if err == nil {
				for _, id := range pl.Sources {
					require.False(rt, claimed[id], "block %s claimed twice", id)
				}
				require.NoError(rt, p.Claim(ck.Entry{Index: uint64(n + 1 + i), Time: now}, &pl))
				for _, id := range pl.Sources {
					claimed[id] = true
				}
				require.Error(rt, p.Admissible(&pl), "a claimed plan stays admissible")
			}
		}
		if len(claimed) < len(queued) {
			// The rest was refused only because of the order; plans of a
			// fresh view cover what is left.
			v3 := p.View()
			for {
				pl, ok := v3.Next(now, nil)
				if !ok {
					break
				}
				require.NoError(rt, p.Claim(ck.Entry{Index: uint64(3 * n), Time: now}, &pl))
				for _, id := range pl.Sources {
					require.False(rt, claimed[id])
					claimed[id] = true
				}
			}
		}
		require.Len(rt, claimed, len(queued))
		require.Zero(rt, p.Stats(0).Queued)
	})
}
