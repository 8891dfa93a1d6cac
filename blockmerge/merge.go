package blockmerge

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/internal/ident"
)

// DatasetMerger merges the datasets with the same (tenant, name) of a
// job's source blocks into one output dataset. The built-in one,
// [MergeRecords], merges records; hosts whose datasets have their own
// internal structure (a TSDB index, a symbols table, a parquet file stored
// as records) plug in their own with [WithDatasetMerger], and may delegate
// the datasets they do not specialise to MergeRecords.
//
// A DatasetMerger reads inputs — the dataset's iterators, at least one,
// one per source block holding it, in the plan's source order, none
// advanced yet; their [DatasetIterator.Meta] names the dataset — and
// appends the merged records to out, in strictly increasing [Compare]
// order. It must not close the inputs. If it appends nothing, the dataset
// is left out of the output. Merge fails if it returns an error or if an
// input's Err is set afterwards.
type DatasetMerger func(ctx context.Context, out *DatasetWriter, inputs []*DatasetIterator) error

// MergeRecords is the built-in [DatasetMerger]: a streaming k-way merge of
// the inputs' records in [Compare] order, in which identical records (same
// key, timestamp and value) collapse into one. It holds one page per input
// and a loser tree of the inputs keyed by their current record, so each
// record costs about log2(inputs) comparisons, most of them of a cached
// 8-byte key prefix.
func MergeRecords(ctx context.Context, out *DatasetWriter, inputs []*DatasetIterator) error {
	if err := out.usable(); err != nil {
		return err
	}
	if len(inputs) == 0 {
		return nil
	}
	t := newLoserTree(inputs)
	for i := range inputs {
		if err := t.advance(i); err != nil {
			return err
		}
	}
	t.tree[0] = t.build(1)
	var lastPrefix uint64
	if out.records > 0 {
		lastPrefix = keyPrefix(out.lastKey)
	}
	for n := 0; ; n++ {
		w := t.tree[0]
		if t.done[w] {
			return nil // every input is exhausted
		}
		if n&4095 == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("blockmerge: merge dataset %s: %w", out.name, err)
			}
		}
		top := inputs[w]
		// The winner is never below the last record written (inputs are
		// checked to be strictly increasing), so a different key prefix
		// means a new record.
		c := 1
		if out.records > 0 && top.prefix == lastPrefix {
			c = out.compareLast(top.cur)
		}
		switch {
		case c > 0:
			if err := out.append(top.cur); err != nil {
				return err
			}
			lastPrefix = top.prefix
		case c < 0:
			// Cannot happen with checked inputs.
			return fmt.Errorf("blockmerge: merge dataset %s: block %s yields record (key %x, ts %d) out of order: %w",
				out.name, top.block, top.cur.Key, top.cur.Timestamp, ErrOutOfOrder)
		}
		// c == 0: identical to the record just written; it collapses.
		if err := t.advance(w); err != nil {
			return err
		}
		t.replay(w)
	}
}

// loserTree is a tournament tree over k inputs: leaves k..2k-1 are the
// inputs, internal node i (1 ≤ i < k) holds the loser of the match between
// its children's winners, and tree[0] holds the overall winner. Exhausted
// inputs lose every match. The inputs' key prefixes are kept in a flat
// slice, so most matches are one integer comparison.
type loserTree struct {
	its  []*DatasetIterator
	pfx  []uint64 // current key prefix of each input; MaxUint64 once exhausted
	done []bool
	tree []int
}

func newLoserTree(its []*DatasetIterator) *loserTree {
	k := len(its)
	return &loserTree{its: its, pfx: make([]uint64, k), done: make([]bool, k), tree: make([]int, k)}
}

// advance moves input i to its next record, or marks it exhausted.
func (t *loserTree) advance(i int) error {
	it := t.its[i]
	if it.Next() {
		t.pfx[i] = it.prefix
		return nil
	}
	if err := it.Err(); err != nil {
		return err
	}
	t.done[i] = true
	t.pfx[i] = math.MaxUint64
	return nil
}

// less reports whether input a's current record is before input b's.
func (t *loserTree) less(a, b int) bool {
	if pa, pb := t.pfx[a], t.pfx[b]; pa != pb {
		return pa < pb
	}
	return t.lessSlow(a, b)
}

func (t *loserTree) lessSlow(a, b int) bool {
	if t.done[a] {
		return false
	}
	if t.done[b] {
		return true
	}
	if c := Compare(t.its[a].cur, t.its[b].cur); c != 0 {
		return c < 0
	}
	return a < b
}

// build plays the matches of the subtree rooted at node and returns its
// winner.
func (t *loserTree) build(node int) int {
	k := len(t.its)
	if node >= k {
		return node - k
	}
	l, r := t.build(2*node), t.build(2*node+1)
	if t.less(r, l) {
		t.tree[node] = l
		return r
	}
	t.tree[node] = r
	return l
}

// replay replays the matches on the path of input w, the previous
// winner, after it advanced.
func (t *loserTree) replay(w int) {
	for node := (w + len(t.its)) / 2; node >= 1; node /= 2 {
		if l := t.tree[node]; t.less(l, w) {
			t.tree[node], w = w, l
		}
	}
	t.tree[0] = w
}

// Merge runs a compaction job: it merges the datasets with the same
// (tenant, name) of the plan's source blocks and writes one output block
// per tenant, one level up, to store. It returns the outputs' metadata,
// ready for the success report.
//
// Sources are read by ID (compactkit.ObjectKey(id)); their footers carry
// their metadata. Every source must hold only the plan's tenant when the
// plan has one. Outputs are ordered by tenant name; the n-th has ID
// compactkit.OutputID(plan.Name, token, n), so all lie under
// compactkit.AttemptPrefix(plan.Name, token), and has the plan's shard,
// level max(source levels)+1, the tenant's datasets in (name) order with
// their Tenant left empty (the block's tenant), and exact statistics. A
// plan with a tenant always yields exactly one output, empty if the sources
// hold no records. A cleanup-only plan yields no output.
//
// Merge streams: it holds one page per source being read and one page of
// output, whatever the blocks' sizes. Outputs are written with
// [CreateObject]: directly into the store when it can stream a write (the
// memory and filesystem stores), else staged in a file of the system's
// temporary directory ($TMPDIR) and put whole (so a cloud store learns
// the size up front). The result is deterministic: the same sources, plan
// and token give byte-identical outputs.
//
// On any failure — a source missing or corrupt (the error names the
// object and dataset), a write refused, ctx cancelled — Merge deletes
// everything under the attempt's prefix (with a context that ignores
// cancellation) and returns the error, leaving no output behind.
//
// The index's metadata of the sources, given with [WithSources], is
// checked against their footers before anything is written: a source that
// lacks a dataset the index lists fails the merge.
//
// To fence the attempt's writes within the process, pass a store made by
// [NewFencedStore].
//
// Options: [WithSources], [WithDatasetMerger].
func Merge(ctx context.Context, store Store, plan *compactkit.JobPlan, token fencing.Token, opts ...Option) ([]compactkit.BlockMeta, error) {
	if plan == nil {
		return nil, fmt.Errorf("blockmerge: merge: nil plan: %w", ident.ErrInconsistent)
	}
	if err := plan.Validate(); err != nil {
		return nil, fmt.Errorf("blockmerge: merge: %w", err)
	}
	if plan.CleanupOnly() {
		return nil, nil
	}
	o := buildOptions(opts)

	want := make(map[string]*compactkit.BlockMeta, len(o.sources))
	for i := range o.sources {
		m := &o.sources[i]
		if !slices.Contains(plan.Sources, m.ID) {
			return nil, fmt.Errorf("blockmerge: merge job %s: metadata given for block %s, not a source: %w",
				plan.Name, m.ID, ident.ErrInconsistent)
		}
		want[m.ID] = m
	}
	readers := make([]*Reader, len(plan.Sources))
	level := uint32(0)
	for i, id := range plan.Sources {
		r, err := Open(ctx, store, id)
		if err != nil {
			return nil, fmt.Errorf("blockmerge: merge job %s: source %s: %w", plan.Name, id, err)
		}
		if m := want[id]; m != nil {
			if err := r.checkMeta(m); err != nil {
				return nil, fmt.Errorf("blockmerge: merge job %s: source %s: %w", plan.Name, id, err)
			}
		}
		if plan.Tenant != "" {
			if ts := r.meta.Tenants(); len(ts) > 1 || len(ts) == 1 && ts[0] != plan.Tenant {
				return nil, fmt.Errorf("blockmerge: merge job %s of tenant %q: source %s holds tenants %q: %w",
					plan.Name, plan.Tenant, id, ts, ident.ErrInconsistent)
			}
		}
		readers[i] = r
		level = max(level, r.meta.Level)
	}
	if level == ^uint32(0) {
		return nil, fmt.Errorf("blockmerge: merge job %s: source level %d has no level above: %w", plan.Name, level, ident.ErrInconsistent)
	}
	outputs := planOutputs(plan, readers)

	metas := make([]compactkit.BlockMeta, 0, len(outputs))
	pages := make([][]byte, len(readers)) // page buffers, reused across datasets
	for n, out := range outputs {
		info := BlockInfo{
			ID:     compactkit.OutputID(plan.Name, token, n),
			Tenant: out.tenant,
			Shard:  plan.Shard,
			Level:  level + 1,
		}
		meta, err := writeOutput(ctx, store, readers, pages, info, out.datasets, o)
		if err != nil {
			prefix := compactkit.AttemptPrefix(plan.Name, token)
			if cerr := store.DeleteByPrefix(context.WithoutCancel(ctx), prefix); cerr != nil {
				err = errors.Join(err, fmt.Errorf("blockmerge: merge job %s: cleaning up %q: %w", plan.Name, prefix, cerr))
			}
			return nil, fmt.Errorf("blockmerge: merge job %s: output %s: %w", plan.Name, info.ID, err)
		}
		metas = append(metas, meta)
	}
	return metas, nil
}

// checkMeta checks the block's footer against the metadata the index
// holds for it (see [WithSources]).
func (r *Reader) checkMeta(want *compactkit.BlockMeta) error {
	got := &r.meta
	switch {
	case got.Tenant != want.Tenant || got.Shard != want.Shard || got.Level != want.Level:
		return r.mismatch("block of tenant %q, shard %d, level %d; index says tenant %q, shard %d, level %d",
			got.Tenant, got.Shard, got.Level, want.Tenant, want.Shard, want.Level)
	case got.MinTime != want.MinTime || got.MaxTime != want.MaxTime:
		return r.mismatch("block time range [%d, %d], index says [%d, %d]", got.MinTime, got.MaxTime, want.MinTime, want.MaxTime)
	case got.Size != want.Size:
		return r.mismatch("block of %d bytes, index says %d", got.Size, want.Size)
	}
	type dkey struct{ tenant, name string }
	have := make(map[dkey]*compactkit.DatasetMeta, len(got.Datasets))
	for i := range got.Datasets {
		d := &got.Datasets[i]
		have[dkey{got.DatasetTenant(d), d.Name}] = d
	}
	for i := range want.Datasets {
		w := &want.Datasets[i]
		k := dkey{want.DatasetTenant(w), w.Name}
		g := have[k]
		if g == nil {
			return fmt.Errorf("blockmerge: object %q: dataset %s/%s: listed in the index, not in the block: %w", r.key, k.tenant, k.name, ErrNotFound)
		}
		delete(have, k)
		if g.Size != w.Size || g.Records != w.Records || g.MinTime != w.MinTime || g.MaxTime != w.MaxTime {
			return r.mismatch("dataset %s/%s: %d bytes, %d records in [%d, %d]; index says %d bytes, %d records in [%d, %d]",
				k.tenant, k.name, g.Size, g.Records, g.MinTime, g.MaxTime, w.Size, w.Records, w.MinTime, w.MaxTime)
		}
	}
	for i := range got.Datasets {
		d := &got.Datasets[i]
		if have[dkey{got.DatasetTenant(d), d.Name}] != nil {
			return r.mismatch("dataset %s/%s: in the block, not in the index", got.DatasetTenant(d), d.Name)
		}
	}
	return nil
}

func (r *Reader) mismatch(format string, args ...any) error {
	return fmt.Errorf("blockmerge: object %q: %s: %w", r.key, fmt.Sprintf(format, args...), ident.ErrInconsistent)
}

// dsRef is one source's dataset: the source's index and the dataset's.
type dsRef struct{ src, ds int }

// mergeGroup is the datasets with the same name of one tenant.
type mergeGroup struct {
	name string
	refs []dsRef
}

// outputPlan is one output block: a tenant and its dataset groups.
type outputPlan struct {
	tenant   string
	datasets []mergeGroup
}

// planOutputs groups the sources' datasets by tenant, then name, in sorted
// order (sources in plan order within a group).
func planOutputs(plan *compactkit.JobPlan, readers []*Reader) []outputPlan {
	type entry struct {
		tenant, name string
		ref          dsRef
	}
	var all []entry
	for s, r := range readers {
		for d := range r.meta.Datasets {
			dm := &r.meta.Datasets[d]
			all = append(all, entry{r.meta.DatasetTenant(dm), dm.Name, dsRef{s, d}})
		}
	}
	slices.SortFunc(all, func(a, b entry) int {
		if c := datasetCompare(a.tenant, a.name, b.tenant, b.name); c != 0 {
			return c
		}
		return a.ref.src - b.ref.src
	})
	var outs []outputPlan
	for _, e := range all {
		if len(outs) == 0 || outs[len(outs)-1].tenant != e.tenant {
			outs = append(outs, outputPlan{tenant: e.tenant})
		}
		o := &outs[len(outs)-1]
		if len(o.datasets) == 0 || o.datasets[len(o.datasets)-1].name != e.name {
			o.datasets = append(o.datasets, mergeGroup{name: e.name})
		}
		g := &o.datasets[len(o.datasets)-1]
		g.refs = append(g.refs, e.ref)
	}
	if len(outs) == 0 && plan.Tenant != "" {
		outs = append(outs, outputPlan{tenant: plan.Tenant})
	}
	return outs
}

// writeOutput writes one output block and commits it.
func writeOutput(ctx context.Context, ws Store, readers []*Reader, pages [][]byte, info BlockInfo, groups []mergeGroup, o options) (compactkit.BlockMeta, error) {
	return writeObject(ctx, ws, info, []Option{withPageSize(o.pageSize)}, func(bw *blockWriter) error {
		for _, g := range groups {
			if err := mergeGroupInto(ctx, bw, readers, pages, info.Tenant, g, o.merger); err != nil {
				return err
			}
		}
		return nil
	})
}

// mergeGroupInto merges one dataset group into the block being written.
// pages holds a page buffer per source, lent to the inputs.
func mergeGroupInto(ctx context.Context, bw *blockWriter, readers []*Reader, pages [][]byte, tenant string, g mergeGroup, m DatasetMerger) (err error) {
	inputs := make([]*DatasetIterator, 0, len(g.refs))
	defer func() {
		for i, it := range inputs {
			if cerr := it.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("blockmerge: object %q: dataset %s/%s: close: %w", it.key, it.meta.Tenant, it.meta.Name, cerr)
			}
			pages[g.refs[i].src] = it.page[:0]
		}
	}()
	for _, ref := range g.refs {
		it, err := readers[ref.src].datasetAt(ctx, ref.ds)
		if err != nil {
			return err
		}
		it.page = pages[ref.src]
		inputs = append(inputs, it)
	}
	dw, err := bw.BeginDataset(tenant, g.name)
	if err != nil {
		return err
	}
	if err := m(ctx, dw, inputs); err != nil {
		return err
	}
	for _, it := range inputs {
		if err := it.Err(); err != nil {
			return err
		}
	}
	return nil
}
