package index

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/internal/ident"
)

// model is a plain reimplementation of the index's rules on maps and
// sorted slices.
type model struct {
	cfg        Config
	clock      int64
	floor      int64
	live       map[string]ck.BlockMeta
	tombs      map[ck.Tombstone]*mtomb
	gone       map[ck.Tombstone]int64
	results    map[mresKey]ReplaceResult
	resultAt   map[mresKey]int64
	wmSet      bool
	wm         int64
	applied    uint64
	refused    uint64
	duplicates uint64
	records    bool // replacements make records (SetRecords)
}

// mtomb is a pending tombstone. The sources of a record share one srcs
// (sorted) and always have the same holder.
type mtomb struct {
	created, release int64
	index            uint64
	job              string
	srcs             []ck.Tombstone // the record's sources; nil if it stands alone
}

// lead returns the tombstone k (pending, with state t) stands with: its
// record's first source, or itself.
func (t *mtomb) lead(k ck.Tombstone) ck.Tombstone {
	if t.srcs != nil {
		return t.srcs[0]
	}
	return k
}

func cmpTombstone(a, b ck.Tombstone) int {
	return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Target, b.Target))
}

type mresKey struct {
	job   string
	token fencing.Token
}

func newModel(cfg Config) *model {
	return &model{
		cfg:      cfg,
		live:     map[string]ck.BlockMeta{},
		tombs:    map[ck.Tombstone]*mtomb{},
		gone:     map[ck.Tombstone]int64{},
		results:  map[mresKey]ReplaceResult{},
		resultAt: map[mresKey]int64{},
	}
}

func (m *model) advance(now int64) int64 {
	m.clock = max(m.clock, now)
	return m.clock
}

func (m *model) refusedID(id string, now int64) bool {
	if _, ok := m.live[id]; ok {
		return true
	}
	bt := ck.Tombstone{Kind: ck.TombstoneBlock, Target: id}
	if _, ok := m.tombs[bt]; ok {
		return true
	}
	if at, ok := m.gone[bt]; ok && now < addSat(at, m.cfg.DedupHorizon) {
		return true
	}
	key := ck.ObjectKey(id)
	for i := range key {
		if key[i] != '/' {
			continue
		}
		pt := ck.Tombstone{Kind: ck.TombstonePrefix, Target: key[:i+1]}
		if _, ok := m.tombs[pt]; ok {
			return true
		}
		if at, ok := m.gone[pt]; ok && now < addSat(at, m.cfg.DedupHorizon) {
			return true
		}
	}
	return false
}

func (m *model) liveUnder(prefix string) bool {
	for id := range m.live {
		if strings.HasPrefix(ck.ObjectKey(id), prefix) {
			return true
		}
	}
	return false
}

func (m *model) newTomb(t ck.Tombstone, index uint64) {
	rel := max(addSat(m.clock, m.cfg.CleanupDelay), m.floor)
	m.floor = rel
	m.tombs[t] = &mtomb{created: m.clock, release: rel, index: index}
}

func (m *model) add(now int64, b ck.BlockMeta) (dup bool, err error) {
	now = m.advance(now)
	if err := b.Validate(); err != nil {
		return false, err
	}
	if m.refusedID(b.ID, now) {
		m.duplicates++
		return true, nil
	}
	m.live[b.ID] = b.Clone()
	delete(m.gone, ck.Tombstone{Kind: ck.TombstoneBlock, Target: b.ID})
	return false, nil
}

func (m *model) replace(e ck.Entry, now int64, job string, token fencing.Token, sources []string, outputs []ck.BlockMeta) ReplaceResult {
	now = m.advance(now)
	key := mresKey{job, token}
	valid := ident.ValidateJobName(job) == nil && token != 0
	if valid {
		if r, ok := m.results[key]; ok && now < addSat(m.resultAt[key], m.cfg.CompletedRetention) {
			r.Replayed = true
			return r
		}
	}
	var r ReplaceResult
	for _, id := range sources {
		if _, ok := m.live[id]; ok {
			r.Surviving = append(r.Surviving, id)
		} else {
			r.Missing = append(r.Missing, id)
		}
	}
	switch {
	case !valid:
		r.Reason = refusedInvalid
	case len(r.Missing) > 0:
		r.Reason = refusedSourcesMissing
	default:
		r.Reason = m.check(now, job, token, sources, outputs)
	}
	if r.Reason != notRefused {
		r.Missing, r.Surviving = firstEach(r.Missing), firstEach(r.Surviving)
		m.refused++
		if !valid {
			return r
		}
		p := ck.Tombstone{Kind: ck.TombstonePrefix, Target: ck.AttemptPrefix(job, token)}
		if _, ok := m.tombs[p]; ok {
			r.Orphan = p.Target
		} else if !m.liveUnder(p.Target) {
			m.newTomb(p, e.Index)
			r.Orphan = p.Target
		}
		m.results[key], m.resultAt[key] = r, now
		return r
	}
	var srcs []ck.Tombstone
	for _, id := range sources {
		delete(m.live, id)
		srcs = append(srcs, ck.Tombstone{Kind: ck.TombstoneBlock, Target: id})
	}
	if m.records {
		slices.SortFunc(srcs, cmpTombstone)
		m.newTomb(srcs[0], e.Index)
		rec := m.tombs[srcs[0]]
		rec.srcs = srcs
		for _, k := range srcs[1:] {
			c := *rec
			m.tombs[k] = &c
		}
	} else {
		for _, k := range srcs {
			m.newTomb(k, e.Index)
		}
	}
	for _, o := range outputs {
		m.live[o.ID] = o.Clone()
		delete(m.gone, ck.Tombstone{Kind: ck.TombstoneBlock, Target: o.ID})
	}
	r = ReplaceResult{Applied: true}
	m.applied++
	m.results[key], m.resultAt[key] = r, now
	return r
}

// firstEach keeps the first occurrence of each string, in order.
func firstEach(ss []string) []string {
	var out []string
	for _, s := range ss {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func (m *model) check(now int64, job string, token fencing.Token, sources []string, outputs []ck.BlockMeta) Refusal {
	if len(sources) == 0 || len(outputs) == 0 {
		return refusedInvalid
	}
	seen := map[string]bool{}
	for _, id := range sources {
		if seen[id] {
			return refusedInvalid
		}
		seen[id] = true
	}
	prefix := ck.AttemptPrefix(job, token)
	for _, o := range outputs {
		if o.Validate() != nil || !strings.HasPrefix(ck.ObjectKey(o.ID), prefix) {
			return refusedInvalid
		}
		if seen[o.ID] {
			if _, ok := m.live[o.ID]; ok {
				return refusedOutputsNotNew
			}
			return refusedInvalid
		}
		seen[o.ID] = true
		if m.refusedID(o.ID, now) {
			return refusedOutputsNotNew
		}
	}
	return notRefused
}

func (m *model) releasable(t *mtomb, now int64) bool {
	if now < t.release || t.job != "" {
		return false
	}
	if !m.wmSet || t.created < m.wm {
		return true
	}
	return m.cfg.ReaderTimeout > 0 && now >= addSat(t.created, m.cfg.ReaderTimeout)
}

func (m *model) releasableList(now int64) []ck.Tombstone {
	var out []ck.Tombstone
	for k, t := range m.tombs {
		if m.releasable(t, now) {
			out = append(out, k)
		}
	}
	slices.SortFunc(out, func(a, b ck.Tombstone) int {
		ta, tb := m.tombs[a], m.tombs[b]
		return cmp.Or(cmp.Compare(ta.release, tb.release), cmp.Compare(ta.created, tb.created),
			cmpTombstone(ta.lead(a), tb.lead(b)), cmpTombstone(a, b))
	})
	return out
}

func (m *model) attach(now int64, job string, ts []ck.Tombstone) (out []ck.Tombstone) {
	now = m.advance(now)
	for _, k := range ts {
		t, ok := m.tombs[k]
		if ident.ValidateJobName(job) != nil || !ok || !m.releasable(t, now) {
			continue
		}
		// A record's sources all at once, or the tombstone that stands
		// alone.
		members := t.srcs
		if members == nil {
			members = []ck.Tombstone{k}
		}
		for _, src := range members {
			m.tombs[src].job = job
		}
		out = append(out, members...)
	}
	return out
}

func (m *model) confirm(now int64, job string) int {
	now = m.advance(now)
	n := 0
	for k, t := range m.tombs {
		if t.job == job {
			delete(m.tombs, k)
			m.gone[k] = now
			n++
		}
	}
	return n
}

func (m *model) detach(job string) int {
	n := 0
	for _, t := range m.tombs {
		if t.job == job {
			t.job = ""
			n++
		}
	}
	return n
}

func (m *model) dropBefore(e ck.Entry, now int64, tenant string, all bool, before int64) []string {
	m.advance(now)
	var ids []string
	for id, b := range m.live {
		if b.MaxTime >= before {
			continue
		}
		drop := all
		if !all && tenant != "" {
			if b.Tenant != "" {
				drop = b.Tenant == tenant
			} else {
				drop = true
				for _, d := range b.Datasets {
					drop = drop && d.Tenant == tenant
				}
			}
		}
		if drop {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		delete(m.live, id)
		m.newTomb(ck.Tombstone{Kind: ck.TombstoneBlock, Target: id}, e.Index)
	}
	return ids
}

func (m *model) expire(now int64) int {
	now = m.advance(now)
	n := 0
	for k, at := range m.gone {
		if now >= addSat(at, m.cfg.DedupHorizon) {
			delete(m.gone, k)
			n++
		}
	}
	for k, at := range m.resultAt {
		if now >= addSat(at, m.cfg.CompletedRetention) {
			delete(m.results, k)
			delete(m.resultAt, k)
			n++
		}
	}
	return n
}

func (m *model) query(tenant string, from, to int64, shard *uint32) []string {
	var out []ck.BlockMeta
	if tenant == "" || from > to {
		return nil
	}
	for _, b := range m.live {
		if b.MinTime > to || b.MaxTime < from || shard != nil && b.Shard != *shard {
			continue
		}
		has := b.Tenant == tenant
		if b.Tenant == "" {
			for _, d := range b.Datasets {
				has = has || d.Tenant == tenant
			}
		}
		if has {
			out = append(out, b)
		}
	}
	slices.SortFunc(out, func(a, b ck.BlockMeta) int {
		return cmp.Or(cmp.Compare(a.MinTime, b.MinTime), cmp.Compare(a.ID, b.ID))
	})
	ids := make([]string, len(out))
	for i, b := range out {
		ids[i] = b.ID
	}
	return ids
}

func (m *model) tombstoneInfos() []TombstoneInfo {
	var out []TombstoneInfo
	for k, t := range m.tombs {
		out = append(out, TombstoneInfo{Tombstone: k, Created: t.created, Index: t.index, ReleaseAt: t.release, Job: t.job})
	}
	slices.SortFunc(out, func(a, b TombstoneInfo) int { return cmpTombstone(a.Tombstone, b.Tombstone) })
	return out
}

// Generators.

var (
	modelTenants = []string{"t0", "t1", "t2"}
	modelJobs    = []string{"j0", "j1", "j2"}
)

func genTimes(t *rapid.T) (int64, int64) {
	if rapid.IntRange(0, 30).Draw(t, "extreme") == 0 {
		r := rapid.SampledFrom([][2]int64{{minInt64, maxInt64}, {minInt64, minInt64 + 5}, {maxInt64 - 5, maxInt64}, {minInt64, 0}}).Draw(t, "range")
		return r[0], r[1]
	}
	lo := rapid.Int64Range(0, 2000).Draw(t, "min")
	span := rapid.SampledFrom([]int64{0, 1, 2, 3, 5, 7, 30, 63, 100, 255, 400, 1023, 1500}).Draw(t, "span")
	return lo, lo + span
}

func genBlockWithID(t *rapid.T, id string, tenant string) ck.BlockMeta {
	lo, hi := genTimes(t)
	b := ck.BlockMeta{
		ID: id, Tenant: tenant,
		Shard: rapid.Uint32Range(0, 2).Draw(t, "shard"), Level: rapid.Uint32Range(0, 2).Draw(t, "level"),
		MinTime: lo, MaxTime: hi, Size: rapid.Int64Range(0, 1000).Draw(t, "size"),
	}
	n := rapid.IntRange(0, 3).Draw(t, "datasets")
	if tenant == "" {
		n = max(n, 1)
	}
	for i := range n {
		d := ck.DatasetMeta{Name: fmt.Sprintf("svc%d", i), Size: int64(i), Records: int64(i * 2), MinTime: lo, MaxTime: hi}
		if tenant == "" {
			d.Tenant = rapid.SampledFrom(modelTenants).Draw(t, "dtenant")
		} else if rapid.Bool().Draw(t, "explicit tenant") {
			d.Tenant = tenant
		}
		b.Datasets = append(b.Datasets, d)
	}
	if rapid.IntRange(0, 40).Draw(t, "malformed") == 0 {
		b.MinTime, b.MaxTime = 10, 5
	}
	return b
}

func genTenant(t *rapid.T) string {
	return rapid.SampledFrom(append([]string{""}, modelTenants...)).Draw(t, "tenant")
}

type modelMachine struct {
	x      *Index
	m      *model
	index  uint64
	calls  []replaceCall
	frozen []frozenView
}

type replaceCall struct {
	job     string
	token   fencing.Token
	sources []string
	outputs []ck.BlockMeta
}

type frozenView struct {
	v     *View
	ids   []string
	tombs []TombstoneInfo
	q     []string
}

func (mm *modelMachine) entry() ck.Entry {
	mm.index++
	return ck.Entry{Index: mm.index, Term: 1, Time: mm.m.clock}
}

func (mm *modelMachine) now(t *rapid.T) int64 {
	return mm.m.clock + rapid.SampledFrom([]int64{0, 0, 1, 3, 10, 50, 200, 1000}).Draw(t, "dt")
}

func (mm *modelMachine) liveIDs() []string {
	ids := make([]string, 0, len(mm.m.live))
	for id := range mm.m.live {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (mm *modelMachine) tombKeys() []ck.Tombstone {
	var ks []ck.Tombstone
	for k := range mm.m.tombs {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, cmpTombstone)
	return ks
}

func (mm *modelMachine) Add(t *rapid.T) {
	var id string
	if ids := mm.liveIDs(); len(ids) > 0 && rapid.IntRange(0, 5).Draw(t, "reuse") == 0 {
		id = rapid.SampledFrom(ids).Draw(t, "live id")
	} else {
		id = rapid.SampledFrom([]string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "k", "x/1", "x/2", "j0/1/0", "j1/2/0"}).Draw(t, "id")
	}
	b := genBlockWithID(t, id, genTenant(t))
	now := mm.now(t)
	e := mm.entry()
	dup, merr := mm.m.add(now, b)
	err := mm.x.Add(e, now, &b)
	switch {
	case merr != nil:
		require.Error(t, err)
		require.NotErrorIs(t, err, ErrDuplicate)
	case dup:
		require.ErrorIs(t, err, ErrDuplicate)
	default:
		require.NoError(t, err)
	}
}

func (mm *modelMachine) Replace(t *rapid.T) {
	job := rapid.SampledFrom(append(modelJobs, "bad/name")).Draw(t, "job")
	token := fencing.Token(rapid.Uint64Range(0, 4).Draw(t, "token"))
	var sources []string
	if ids := mm.liveIDs(); len(ids) > 0 {
		sources = rapid.SliceOfNDistinct(rapid.SampledFrom(ids), 0, 4, rapid.ID[string]).Draw(t, "sources")
	}
	if rapid.IntRange(0, 4).Draw(t, "add missing") == 0 {
		sources = append(sources, rapid.SampledFrom([]string{"a", "zz", "x/1"}).Draw(t, "missing"))
	}
	if len(sources) > 0 && rapid.IntRange(0, 15).Draw(t, "repeat") == 0 {
		sources = append(sources, rapid.SampledFrom(sources).Draw(t, "repeated"))
	}
	n := rapid.IntRange(0, 2).Draw(t, "outputs")
	if rapid.IntRange(0, 10).Draw(t, "no outputs") != 0 {
		n = max(n, 1)
	}
	tenant := rapid.SampledFrom(modelTenants).Draw(t, "out tenant")
	var outputs []ck.BlockMeta
	for i := range n {
		id := ck.OutputID(job, token, i)
		switch rapid.IntRange(0, 8).Draw(t, "output kind") {
		case 0:
			if ids := mm.liveIDs(); len(ids) > 0 {
				id = rapid.SampledFrom(ids).Draw(t, "colliding")
			}
		case 1:
			id = "elsewhere/" + id
		case 2:
			if i > 0 {
				id = outputs[0].ID
			}
		}
		outputs = append(outputs, genBlockWithID(t, id, tenant))
	}
	mm.doReplace(t, replaceCall{job, token, sources, outputs})
}

func (mm *modelMachine) doReplace(t *rapid.T, c replaceCall) {
	now := mm.now(t)
	e := mm.entry()
	liveBefore := blockIDs(mm.x.View().Blocks("", 0))
	tombsBefore := mm.x.View().Tombstones(ck.Tombstone{}, 0)
	want := mm.m.replace(e, now, c.job, c.token, c.sources, c.outputs)
	got := mm.x.Replace(e, now, c.job, c.token, c.sources, c.outputs)
	require.Equal(t, got.Applied, got.Reason == notRefused)
	liveAfter := blockIDs(mm.x.View().Blocks("", 0))
	tombsAfter := mm.x.View().Tombstones(ck.Tombstone{}, 0)
	switch {
	case got.Replayed || !got.Applied:
		// Nothing enters or leaves the index; a refusal adds at most the
		// attempt's orphan prefix.
		require.Equal(t, liveBefore, liveAfter)
		added := len(tombsAfter) - len(tombsBefore)
		if got.Replayed || got.Orphan == "" {
			require.Equal(t, tombsBefore, tombsAfter)
		} else {
			require.LessOrEqual(t, added, 1)
			ti, ok := mm.x.View().Tombstone(ck.Tombstone{Kind: ck.TombstonePrefix, Target: got.Orphan})
			require.True(t, ok, "orphan prefix not tombstoned")
			require.Equal(t, added == 1, ti.Index == e.Index)
		}
		if !got.Applied && !got.Replayed {
			// A refusal accounts for every source: missing or surviving.
			require.Equal(t, len(firstEach(c.sources)), len(got.Missing)+len(got.Surviving))
		}
	default:
		// All or nothing: every source left and is tombstoned exactly
		// once by this entry; every output entered.
		for _, id := range c.sources {
			require.False(t, mm.x.View().Live(id))
			ti, ok := mm.x.View().Tombstone(ck.Tombstone{Kind: ck.TombstoneBlock, Target: id})
			require.True(t, ok)
			require.Equal(t, e.Index, ti.Index)
		}
		for _, o := range c.outputs {
			require.True(t, mm.x.View().Live(o.ID))
		}
		require.Equal(t, len(tombsBefore)+len(c.sources), len(tombsAfter))
		require.Equal(t, len(liveBefore)-len(c.sources)+len(c.outputs), len(liveAfter))
	}
	got.Detail = ""
	require.Equal(t, want, got)
	mm.calls = append(mm.calls, c)
}

func (mm *modelMachine) Replay(t *rapid.T) {
	if len(mm.calls) == 0 {
		// rapid: the action does not apply now; another is drawn.
		t.Skip("no replacement yet")
	}
	mm.doReplace(t, rapid.SampledFrom(mm.calls).Draw(t, "call"))
}

func (mm *modelMachine) Orphan(t *rapid.T) {
	job := rapid.SampledFrom(modelJobs).Draw(t, "job")
	token := fencing.Token(rapid.Uint64Range(1, 4).Draw(t, "token"))
	prefix := ck.AttemptPrefix(job, token)
	if rapid.IntRange(0, 10).Draw(t, "bad prefix") == 0 {
		prefix = "nope"
	}
	now := mm.now(t)
	mm.m.advance(now)
	err := mm.x.AddOrphan(now, prefix)
	k := ck.Tombstone{Kind: ck.TombstonePrefix, Target: prefix}
	switch {
	case k.Validate() != nil:
		require.Error(t, err)
	case mm.m.tombs[k] != nil:
		require.NoError(t, err)
	case mm.m.liveUnder(prefix):
		require.ErrorIs(t, err, ErrLiveUnderPrefix)
	default:
		require.NoError(t, err)
		mm.m.newTomb(k, 0)
	}
}

func (mm *modelMachine) Attach(t *rapid.T) {
	job := rapid.SampledFrom(append(modelJobs, "")).Draw(t, "job")
	var ts []ck.Tombstone
	if ks := mm.tombKeys(); len(ks) > 0 {
		ts = rapid.SliceOfN(rapid.SampledFrom(ks), 0, 5).Draw(t, "tombstones")
	}
	if rapid.IntRange(0, 5).Draw(t, "unknown") == 0 {
		ts = append(ts, ck.Tombstone{Kind: ck.TombstoneBlock, Target: "nothing"})
	}
	now := mm.now(t)
	want := mm.m.attach(now, job, ts)
	got := mm.x.Attach(now, job, ts)
	require.Equal(t, want, got)
}

func (mm *modelMachine) AttachReleasable(t *rapid.T) {
	job := rapid.SampledFrom(modelJobs).Draw(t, "job")
	now := mm.now(t)
	next := mm.x.View().Releasable(now)
	var ts []ck.Tombstone
	for range rapid.IntRange(0, 4).Draw(t, "n") {
		tb, ok := next()
		if !ok {
			break
		}
		ts = append(ts, tb)
	}
	want := mm.m.attach(now, job, ts)
	got := mm.x.Attach(now, job, ts)
	requireHandedOut(t, mm.m, ts, got)
	require.Equal(t, want, got)
}

// requireHandedOut checks that the tombstones ts, pulled in release order,
// attach as they are, and a record whole: got is ts followed by the rest
// of the last one's record, if it is a source of a record.
func requireHandedOut(t *rapid.T, m *model, ts, got []ck.Tombstone) {
	require.Equal(t, nonNilT(ts), nonNilT(got[:min(len(ts), len(got))]), "tombstones handed out as releasable must attach")
	var rest []ck.Tombstone
	if len(ts) > 0 {
		last := ts[len(ts)-1]
		if srcs := m.tombs[last].srcs; srcs != nil {
			rest = srcs[slices.Index(srcs, last)+1:]
		}
	}
	require.Equal(t, nonNilT(rest), nonNilT(got[min(len(ts), len(got)):]), "a record attaches whole")
}

func (mm *modelMachine) Release(t *rapid.T) {
	job := rapid.SampledFrom(append(modelJobs, "bad/job")).Draw(t, "job")
	limit := rapid.IntRange(-1, 4).Draw(t, "limit")
	now := mm.now(t)
	mm.m.advance(now)
	var want []ck.Tombstone
	if ident.ValidateJobName(job) == nil {
		pulled := mm.m.releasableList(now)
		if limit > 0 && len(pulled) > limit {
			pulled = pulled[:limit]
		}
		want = mm.m.attach(now, job, pulled)
		requireHandedOut(t, mm.m, pulled, want)
	}
	got := ReleaseTo(mm.x, now, job, limit)
	require.Equal(t, nonNilT(want), nonNilT(got))
}

func (mm *modelMachine) Confirm(t *rapid.T) {
	job := rapid.SampledFrom(modelJobs).Draw(t, "job")
	now := mm.now(t)
	require.Equal(t, mm.m.confirm(now, job), mm.x.Confirm(now, job))
}

func (mm *modelMachine) Detach(t *rapid.T) {
	job := rapid.SampledFrom(modelJobs).Draw(t, "job")
	require.Equal(t, mm.m.detach(job), mm.x.Detach(job))
}

func (mm *modelMachine) SetRecords(t *rapid.T) {
	on := rapid.IntRange(0, 3).Draw(t, "records") > 0
	mm.m.records = on
	mm.x.SetRecords(on)
}

func (mm *modelMachine) Watermark(t *rapid.T) {
	now := mm.now(t)
	w := now - rapid.Int64Range(-5, 3000).Draw(t, "age")
	mm.m.advance(now)
	mm.m.wmSet, mm.m.wm = true, min(w, mm.m.clock)
	mm.x.SetWatermark(now, w)
}

func (mm *modelMachine) DropBefore(t *rapid.T) {
	tenant := genTenant(t)
	all := rapid.IntRange(0, 3).Draw(t, "all") == 0
	before := rapid.Int64Range(-10, 3500).Draw(t, "before")
	if rapid.IntRange(0, 20).Draw(t, "extreme") == 0 {
		before = rapid.SampledFrom([]int64{minInt64, maxInt64}).Draw(t, "before extreme")
	}
	now := mm.now(t)
	e := mm.entry()
	want := mm.m.dropBefore(e, now, tenant, all, before)
	got := mm.x.DropBefore(e, now, tenant, all, before)
	ids := make([]string, len(got))
	for i, b := range got {
		ids[i] = b.ID
	}
	if want == nil {
		want = []string{}
	}
	require.Equal(t, want, ids)
}

func (mm *modelMachine) Expire(t *rapid.T) {
	now := mm.now(t)
	require.Equal(t, mm.m.expire(now), mm.x.Expire(now))
}

func (mm *modelMachine) SetConfig(t *rapid.T) {
	cfg := genConfig(t)
	require.NoError(t, mm.x.SetConfig(cfg))
	mm.m.cfg = cfg
	require.Equal(t, cfg, mm.x.View().Config())
}

func (mm *modelMachine) SnapshotRestore(t *rapid.T) {
	var a bytes.Buffer
	require.NoError(t, mm.x.View().Snapshot(&a))
	y, err := Restore(bytes.NewReader(a.Bytes()))
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, y.View().Snapshot(&b))
	require.Equal(t, a.Bytes(), b.Bytes(), "re-snapshot differs")
	require.Equal(t, mm.x.Stats(), y.Stats())
	// The record flag is not in the snapshot: the state machine sets it.
	y.SetRecords(mm.m.records)
	mm.x = y
}

func (mm *modelMachine) OpenView(t *rapid.T) {
	v := mm.x.View()
	f := frozenView{v: v, ids: mm.liveIDs(), tombs: mm.m.tombstoneInfos(), q: mm.m.query("t1", 0, 1000, nil)}
	mm.frozen = append(mm.frozen, f)
	if len(mm.frozen) > 3 {
		// The oldest view is closed: the index may then mutate the trees
		// it did not read in place, and the other views must not notice.
		mm.frozen[0].v.Close()
		mm.frozen = mm.frozen[1:]
	}
}

func genConfig(t *rapid.T) Config {
	d := func(name string) time.Duration {
		return time.Duration(rapid.SampledFrom([]int64{0, 1, 10, 100, 500, 3000}).Draw(t, name))
	}
	return Config{DedupHorizon: d("horizon"), CleanupDelay: d("delay"), CompletedRetention: d("retention"), ReaderTimeout: d("timeout")}
}

func blockIDs(bs []ck.BlockMeta) []string {
	ids := make([]string, len(bs))
	for i, b := range bs {
		ids[i] = b.ID
	}
	return ids
}

func (mm *modelMachine) Check(t *rapid.T) {
	x, m := mm.x, mm.m
	require.Equal(t, m.clock, x.View().Now())
	v := x.View()
	defer v.Close()
	// Live blocks equal the model's, metadata included.
	require.Equal(t, len(m.live), x.View().Len())
	all := v.Blocks("", 0)
	require.Equal(t, mm.liveIDs(), nonNil(blockIDs(all)))
	for _, b := range all {
		want := m.live[b.ID]
		require.Equal(t, normalize(want), normalize(b))
		require.True(t, x.View().Live(b.ID))
	}
	// Tombstones equal the model's; never live and tombstoned; one holder.
	infos := x.View().Tombstones(ck.Tombstone{}, 0)
	require.Equal(t, m.tombstoneInfos(), infos)
	held := map[string][]ck.Tombstone{}
	for i, ti := range infos {
		// A record is held by at most one job: its sources have one holder.
		if srcs := m.tombs[ti.Tombstone].srcs; srcs != nil {
			lead, _ := x.View().Tombstone(srcs[0])
			require.Equal(t, lead.Job, infos[i].Job, "sources of one record held apart")
		}
		if ti.Kind == ck.TombstoneBlock {
			require.False(t, x.View().Live(ti.Target), "%s live and tombstoned", ti.Target)
		}
		if ti.Job != "" {
			held[ti.Job] = append(held[ti.Job], ti.Tombstone)
		}
	}
	for _, j := range modelJobs {
		require.Equal(t, held[j], nonNilT(HeldBy(x, j)))
	}
	// Pagination.
	if len(infos) > 2 {
		p1 := x.View().Tombstones(ck.Tombstone{}, 2)
		p2 := x.View().Tombstones(p1[1].Tombstone, 0)
		require.Equal(t, infos, append(p1, p2...))
	}
	// Releasable tombstones, at the clock and a bit later.
	for _, dt := range []int64{0, 100, 5000} {
		now := m.clock + dt
		var got []ck.Tombstone
		next := v.Releasable(now)
		for tb, ok := next(); ok; tb, ok = next() {
			got = append(got, tb)
		}
		want := m.releasableList(now)
		require.Equal(t, want, got)
		at, ok := v.OldestUnattachedReleasable(now)
		require.Equal(t, len(want) > 0, ok)
		if ok {
			require.Equal(t, m.tombs[want[0]].release, at)
		}
	}
	// Queries equal the model's filter.
	for _, tenant := range []string{"t0", "t1", "t2", "", "nobody"} {
		for _, r := range [][2]int64{{0, 3000}, {100, 200}, {500, 500}, {minInt64, maxInt64}, {1000, 999}, {minInt64, minInt64}, {maxInt64, maxInt64}} {
			want := m.query(tenant, r[0], r[1], nil)
			require.Equal(t, nonNil(want), nonNil(v.QueryIDs(tenant, r[0], r[1], nil)), "query %s %v", tenant, r)
			require.Equal(t, len(want), v.ReadAmplification(tenant, r[0], r[1]))
			shard := uint32(1)
			require.Equal(t, nonNil(m.query(tenant, r[0], r[1], &shard)), nonNil(v.QueryIDs(tenant, r[0], r[1], &shard)))
		}
	}
	// Queries touching block boundaries exactly.
	for i, id := range mm.liveIDs() {
		if i >= 6 {
			break
		}
		b := m.live[id]
		for _, r := range [][2]int64{{b.MaxTime, b.MaxTime}, {b.MinTime, b.MinTime}, {b.MaxTime, addSat(b.MaxTime, 7)}, {addSat(b.MinTime, -7), b.MinTime}, {addSat(b.MaxTime, 1), addSat(b.MaxTime, 1)}} {
			for _, tenant := range modelTenants {
				require.Equal(t, nonNil(m.query(tenant, r[0], r[1], nil)), nonNil(v.QueryIDs(tenant, r[0], r[1], nil)), "query %s %v", tenant, r)
			}
		}
	}
	var viaSeq []string
	for b := range v.Query("t0", 0, 1000, nil) {
		viaSeq = append(viaSeq, b.ID)
		require.Equal(t, normalize(m.live[b.ID]), normalize(b))
	}
	require.Equal(t, nonNil(m.query("t0", 0, 1000, nil)), nonNil(viaSeq))
	// Stats.
	st := x.Stats()
	var blocks, bytes int64
	for _, b := range m.live {
		blocks++
		bytes += b.Size
	}
	require.Equal(t, blocks, st.Blocks)
	require.Equal(t, bytes, st.Bytes)
	orphans, attached := 0, 0
	for k, tb := range m.tombs {
		if k.Kind == ck.TombstonePrefix {
			orphans++
		}
		if tb.job != "" {
			attached++
		}
	}
	require.Equal(t, orphans, st.Orphans)
	require.Equal(t, attached, st.TombstonesAttached)
	require.Equal(t, len(m.releasableList(m.clock)), st.TombstonesReleasable)
	require.Equal(t, len(m.tombs)-attached-st.TombstonesReleasable, st.TombstonesPending)
	require.Equal(t, m.applied, st.ReplacementsApplied)
	require.Equal(t, m.refused, st.ReplacementsRefused)
	require.Equal(t, m.duplicates, st.DuplicatesRefused)
	// Frozen views still show the state they were opened on.
	for _, f := range mm.frozen {
		require.Equal(t, f.ids, nonNil(blockIDs(f.v.Blocks("", 0))))
		require.Equal(t, f.tombs, f.v.Tombstones(ck.Tombstone{}, 0))
		require.Equal(t, nonNil(f.q), nonNil(f.v.QueryIDs("t1", 0, 1000, nil)))
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func nonNilT(s []ck.Tombstone) []ck.Tombstone {
	if len(s) == 0 {
		return nil
	}
	return s
}

func normalize(b ck.BlockMeta) ck.BlockMeta {
	if len(b.Datasets) == 0 {
		b.Datasets = nil
	}
	return b
}

func TestIndexModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := genConfig(t)
		x, err := New(cfg)
		require.NoError(t, err)
		mm := &modelMachine{x: x, m: newModel(cfg)}
		t.Repeat(rapid.StateMachineActions(mm))
	})
}

// TestRecordsDeleteEachSourceOnce: with records, jobs that attach,
// detach and confirm in any order delete every source of every applied
// replacement exactly once, a record is held whole by one job at a time
// (Detach returns it whole to the pool), Confirm writes a deletion record
// for each of its sources, and a replica restored mid-history behaves like
// the one that applied the whole history.
func TestRecordsDeleteEachSourceOnce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := Config{DedupHorizon: 1000, CleanupDelay: 10, CompletedRetention: 1000}
		x, err := New(cfg)
		require.NoError(t, err)
		x.SetRecords(true)
		var y *Index // the replica restored mid-history, once there is one
		now, e := int64(0), uint64(0)
		apply := func(fn func(*Index)) {
			fn(x)
			if y != nil {
				fn(y)
			}
		}
		var live, sources []string // live blocks; sources of applied replacements
		for i := range rapid.IntRange(4, 16).Draw(t, "blocks") {
			id := fmt.Sprintf("b%02d", i)
			e++
			apply(func(x *Index) { require.NoError(t, x.Add(ck.Entry{Index: e}, now, gblock(id, "acme", 0, 0, 0, 10))) })
			live = append(live, id)
		}
		deleted := map[string]int{}
		confirm := func(job string) {
			held := HeldBy(x, job)
			n := x.Confirm(now, job)
			require.Equal(t, len(held), n)
			for _, tb := range held {
				deleted[tb.Target]++
				_, ok := x.View().Tombstone(tb)
				require.False(t, ok, "%s confirmed but pending", tb)
			}
			if y != nil {
				require.Equal(t, n, y.Confirm(now, job))
			}
			for _, tb := range held {
				apply(func(x *Index) {
					err := x.Add(ck.Entry{Index: e}, now, gblock(tb.Target, "acme", 0, 0, 0, 10))
					require.ErrorIs(t, err, ErrDuplicate, "no deletion record for %s", tb)
				})
			}
		}
		jobs := []string{"j0", "j1", "j2"}
		for step := range rapid.IntRange(1, 40).Draw(t, "steps") {
			now += rapid.SampledFrom([]int64{0, 1, 5, 20}).Draw(t, "dt")
			job := rapid.SampledFrom(jobs).Draw(t, "job")
			switch rapid.IntRange(0, 4).Draw(t, "op") {
			case 0:
				if len(live) == 0 {
					continue
				}
				n := rapid.IntRange(1, len(live)).Draw(t, "sources")
				src := slices.Clone(live[:n])
				out := fmt.Sprintf("%s/%d/0", job, step+1)
				e++
				apply(func(x *Index) {
					r := x.Replace(ck.Entry{Index: e}, now, job, fencing.Token(step+1), src, []ck.BlockMeta{*gblock(out, "acme", 0, 1, 0, 10)})
					require.True(t, r.Applied, r.Detail)
				})
				live = append(live[n:], out)
				sources = append(sources, src...)
			case 1:
				limit := rapid.IntRange(0, 3).Draw(t, "limit")
				got := ReleaseTo(x, now, job, limit)
				if y != nil {
					require.Equal(t, got, ReleaseTo(y, now, job, limit))
				}
			case 2:
				before := HeldBy(x, job)
				n := x.Detach(job)
				require.Equal(t, len(before), n)
				for _, tb := range before {
					ti, ok := x.View().Tombstone(tb)
					require.True(t, ok)
					require.Empty(t, ti.Job)
				}
				if y != nil {
					require.Equal(t, n, y.Detach(job))
				}
			case 3:
				confirm(job)
			case 4:
				if y == nil {
					var err error
					y, err = Restore(bytes.NewReader(snapshotBytes(t, x)))
					require.NoError(t, err)
					y.SetRecords(true)
				}
			}
			// A record is held by one job at most: the holders of its
			// sources agree (the record of a source is the objects that
			// share its creation entry and time).
			type recKey struct {
				index   uint64
				created int64
			}
			holders := map[recKey]map[string]bool{}
			for _, ti := range x.View().Tombstones(ck.Tombstone{}, 0) {
				k := recKey{ti.Index, ti.Created}
				if holders[k] == nil {
					holders[k] = map[string]bool{}
				}
				holders[k][ti.Job] = true
			}
			for k, hs := range holders {
				require.Len(t, hs, 1, "record %v held by %v", k, hs)
			}
			if y != nil {
				require.Equal(t, snapshotBytes(t, x), snapshotBytes(t, y), "the restored replica differs")
				vx, vy := x.View(), y.View()
				require.Equal(t, vx.Tombstones(ck.Tombstone{}, 0), vy.Tombstones(ck.Tombstone{}, 0), "the restored replica's tombstones differ")
				require.Equal(t, vx.Blocks("", 0), vy.Blocks("", 0), "the restored replica's blocks differ")
				require.Equal(t, x.Stats(), y.Stats(), "the restored replica's counts differ")
			}
		}
		// Every job done; everything left goes to one last job.
		now += 1000
		apply(func(x *Index) {
			for _, j := range jobs {
				x.Detach(j)
			}
			ReleaseTo(x, now, "last", 0)
		})
		confirm("last")
		require.Zero(t, x.Stats().TombstonesAttached+x.Stats().TombstonesPending+x.Stats().TombstonesReleasable)
		for _, id := range sources {
			require.Equal(t, 1, deleted[id], "source %s deleted %d times", id, deleted[id])
		}
		require.Len(t, deleted, len(sources))
	})
}

func snapshotBytes(t *rapid.T, x *Index) []byte {
	var b bytes.Buffer
	require.NoError(t, x.View().Snapshot(&b))
	return b.Bytes()
}
