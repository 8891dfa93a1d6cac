package index

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/google/btree"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/internal/codec"
)

// SnapshotVersion is the version of the snapshot stream this release
// writes. Restore reads every version up to it.
const SnapshotVersion byte = 1

// componentName names the index in its snapshot header.
const componentName = "index"

// The snapshot is one codec stream of kind codec.KindSection: a header
// frame, then sections of columnar frames of at most codec.FrameRecords
// records each, in this order and with the counts the header gives:
//
//  1. names: the tenant and dataset names the live blocks use, sorted; the
//     other sections refer to them as 1 + their position (0 is "");
//  2. blocks, sorted by ID, each frame with the datasets of its blocks;
//  3. tombstones, sorted by (kind, target);
//  4. deletion records, sorted by (kind, target);
//  5. replacement results, sorted by (job, token).
//
// Everything written is a function of the logical state (no interning
// order, no tree layout), so equal states write identical bytes.
type snapHeader struct {
	_                  struct{} `cbor:",toarray"`
	Component          string
	DedupHorizon       int64
	CleanupDelay       int64
	CompletedRetention int64
	ReaderTimeout      int64
	Clock              int64
	Floor              int64
	WatermarkSet       bool
	Watermark          int64
	Applied            uint64
	Refused            uint64
	Duplicates         uint64
	Names              uint64
	Blocks             uint64
	Datasets           uint64
	Tombstones         uint64
	Gone               uint64
	Results            uint64
}

type namesFrame struct {
	_     struct{} `cbor:",toarray"`
	N     int
	Names codec.Strings
}

// blocksFrame holds up to codec.FrameRecords blocks and their datasets
// (a frame ends early once it holds codec.FrameRecords datasets).
type blocksFrame struct {
	_        struct{} `cbor:",toarray"`
	N        int
	IDs      codec.Strings
	Tenants  []byte
	Shards   []byte
	Levels   []byte
	MinTimes []byte
	Spans    []byte
	Sizes    []byte
	Counts   []byte // datasets per block
	D        int    // datasets in the frame
	DTenants []byte
	DNames   []byte
	DSizes   []byte
	DRecords []byte
	DOffsets []byte // dataset MinTime - block MinTime
	DSpans   []byte // dataset MaxTime - dataset MinTime
}

type tombsFrame struct {
	_       struct{} `cbor:",toarray"`
	N       int
	Kinds   []byte
	Targets codec.Strings
	Created []byte
	Release []byte
	Indexes []byte
	Jobs    codec.Strings
}

type goneFrame struct {
	_       struct{} `cbor:",toarray"`
	N       int
	Kinds   []byte
	Targets codec.Strings
	At      []byte
}

type resultsFrame struct {
	_              struct{} `cbor:",toarray"`
	N              int
	Jobs           codec.Strings
	Tokens         []byte
	Indexes        []byte
	At             []byte
	Flags          []byte
	Reasons        []byte
	Details        codec.Strings
	MissingCount   []byte
	SurvivingCount []byte
	Missing        codec.Strings
	Surviving      codec.Strings
}

const (
	flagApplied = 1 << iota
	flagOrphan
)

// Snapshot writes the index to w as one framed, checksummed, columnar
// stream (see [Restore]). It is a function of the logical state only:
// replicas holding the same state write identical bytes.
func (x *Index) Snapshot(w io.Writer) error { return x.s.snapshot(w) }

// Snapshot writes the state the view was opened on, like
// [Index.Snapshot]; unlike it, it may run on another goroutine while the
// index is mutated (for hosts that persist snapshots in the background).
func (v *View) Snapshot(w io.Writer) error { return v.state(needAll).snapshot(w) }

func (s *state) snapshot(w io.Writer) error {
	// The names the live blocks use, sorted, and their references.
	used := make([]bool, len(s.names))
	nds := 0
	s.byID.Ascend(func(it idItem) bool {
		used[it.b.tenant] = true
		for _, d := range it.b.datasets() {
			used[d.tenant] = true
			used[d.name] = true
		}
		nds += int(it.b.nds)
		return true
	})
	used[0] = false
	var dict []string
	for id, u := range used {
		if u {
			dict = append(dict, s.names[id])
		}
	}
	slices.Sort(dict)
	ref := make([]uint32, len(s.names))
	for i, n := range dict {
		id, _ := s.lookupName(n)
		ref[id] = uint32(i + 1)
	}

	sw, err := codec.NewWriter(w, codec.Snapshot, codec.KindSection, SnapshotVersion)
	if err != nil {
		return fmt.Errorf("index: snapshot: %w", err)
	}
	h := snapHeader{
		Component:          componentName,
		DedupHorizon:       int64(s.cfg.DedupHorizon),
		CleanupDelay:       int64(s.cfg.CleanupDelay),
		CompletedRetention: int64(s.cfg.CompletedRetention),
		ReaderTimeout:      int64(s.cfg.ReaderTimeout),
		Clock:              s.clock,
		Floor:              s.floor,
		WatermarkSet:       s.wmSet,
		Watermark:          s.watermark,
		Applied:            s.applied,
		Refused:            s.refused,
		Duplicates:         s.duplicates,
		Names:              uint64(len(dict)),
		Blocks:             uint64(s.byID.Len()),
		Datasets:           uint64(nds),
		Tombstones:         uint64(s.tombs.Len()),
		Gone:               uint64(s.gone.Len()),
		Results:            uint64(s.results.Len()),
	}
	enc := func(v any) error {
		if err := sw.Encode(v); err != nil {
			return fmt.Errorf("index: snapshot: %w", err)
		}
		return nil
	}
	if err := enc(&h); err != nil {
		return err
	}
	for i := 0; i < len(dict); i += codec.FrameRecords {
		part := dict[i:min(i+codec.FrameRecords, len(dict))]
		if err := enc(&namesFrame{N: len(part), Names: codec.PackStrings(part)}); err != nil {
			return err
		}
	}
	if err := s.writeBlocks(enc, ref); err != nil {
		return err
	}
	if err := s.writeTombs(enc); err != nil {
		return err
	}
	if err := s.writeGone(enc); err != nil {
		return err
	}
	if err := s.writeResults(enc); err != nil {
		return err
	}
	if err := sw.Close(); err != nil {
		return fmt.Errorf("index: snapshot: %w", err)
	}
	return nil
}

// inFrames calls flush with successive batches of at most
// codec.FrameRecords items visited by each (a tree's Ascend or Descend).
func inFrames[T any](each func(btree.ItemIteratorG[T]), flush func([]T) error) error {
	// The batch grows with the items: a small tree must not pay for a
	// full frame's buffer.
	var batch []T
	var err error
	each(func(it T) bool {
		batch = append(batch, it)
		if len(batch) == codec.FrameRecords {
			err = flush(batch)
			batch = batch[:0]
		}
		return err == nil
	})
	if err == nil && len(batch) > 0 {
		err = flush(batch)
	}
	return err
}

func (s *state) writeBlocks(enc func(any) error, ref []uint32) error {
	var (
		ids                         []string
		tenants, shards, levels, ns []uint32
		mins, sizes                 []int64
		spans                       []uint64
		dten, dname                 []uint32
		dsize, drec                 []int64
		doff, dspan                 []uint64
		err                         error
	)
	flush := func() error {
		if len(ids) == 0 {
			return nil
		}
		err := enc(&blocksFrame{
			N: len(ids), IDs: codec.PackStrings(ids),
			Tenants: codec.PackInts(tenants), Shards: codec.PackInts(shards), Levels: codec.PackInts(levels),
			MinTimes: codec.PackInts(mins), Spans: codec.PackInts(spans), Sizes: codec.PackInts(sizes),
			Counts: codec.PackInts(ns),
			D:      len(dten), DTenants: codec.PackInts(dten), DNames: codec.PackInts(dname),
			DSizes: codec.PackInts(dsize), DRecords: codec.PackInts(drec),
			DOffsets: codec.PackInts(doff), DSpans: codec.PackInts(dspan),
		})
		ids, tenants, shards, levels, ns = ids[:0], tenants[:0], shards[:0], levels[:0], ns[:0]
		mins, sizes, spans = mins[:0], sizes[:0], spans[:0]
		dten, dname, dsize, drec, doff, dspan = dten[:0], dname[:0], dsize[:0], drec[:0], doff[:0], dspan[:0]
		return err
	}
	s.byID.Descend(func(it idItem) bool { // ascending IDs
		b := it.b
		ids = append(ids, b.id)
		tenants, shards, levels = append(tenants, ref[b.tenant]), append(shards, b.shard), append(levels, b.level)
		mins, spans, sizes = append(mins, b.minTime), append(spans, uint64(b.maxTime)-uint64(b.minTime)), append(sizes, b.size)
		ns = append(ns, b.nds)
		for _, d := range b.datasets() {
			dten, dname = append(dten, ref[d.tenant]), append(dname, ref[d.name])
			dsize, drec = append(dsize, d.size), append(drec, d.records)
			doff, dspan = append(doff, uint64(d.minTime)-uint64(b.minTime)), append(dspan, uint64(d.maxTime)-uint64(d.minTime))
		}
		if len(ids) == codec.FrameRecords || len(dten) >= codec.FrameRecords {
			err = flush()
		}
		return err == nil
	})
	if err != nil {
		return err
	}
	return flush()
}

func (s *state) writeTombs(enc func(any) error) error {
	return inFrames(s.tombs.Descend, func(ts []tomb) error {
		n := len(ts)
		kinds := make([]uint8, n)
		targets, jobs := make([]string, n), make([]string, n)
		created, release := make([]int64, n), make([]int64, n)
		indexes := make([]uint64, n)
		for i, t := range ts {
			kinds[i], targets[i], jobs[i] = uint8(t.kind), t.target, t.job
			created[i], release[i], indexes[i] = t.created, t.release, t.index
		}
		return enc(&tombsFrame{
			N: n, Kinds: codec.PackInts(kinds), Targets: codec.PackStrings(targets),
			Created: codec.PackInts(created), Release: codec.PackInts(release),
			Indexes: codec.PackInts(indexes), Jobs: codec.PackStrings(jobs),
		})
	})
}

func (s *state) writeGone(enc func(any) error) error {
	return inFrames(s.gone.Ascend, func(gs []goneRec) error {
		n := len(gs)
		kinds := make([]uint8, n)
		targets := make([]string, n)
		at := make([]int64, n)
		for i, g := range gs {
			kinds[i], targets[i], at[i] = uint8(g.kind), g.target, g.at
		}
		return enc(&goneFrame{N: n, Kinds: codec.PackInts(kinds), Targets: codec.PackStrings(targets), At: codec.PackInts(at)})
	})
}

func (s *state) writeResults(enc func(any) error) error {
	return inFrames(s.results.Ascend, func(rs []*result) error {
		n := len(rs)
		jobs, details := make([]string, n), make([]string, n)
		tokens, indexes := make([]uint64, n), make([]uint64, n)
		at := make([]int64, n)
		flags, reasons := make([]uint8, n), make([]uint8, n)
		nm, ns := make([]uint32, n), make([]uint32, n)
		var missing, surviving []string
		for i, r := range rs {
			jobs[i], details[i], tokens[i], indexes[i], at[i] = r.job, r.detail, uint64(r.token), r.index, r.at
			reasons[i] = uint8(r.reason)
			if r.applied {
				flags[i] |= flagApplied
			}
			if r.orphan {
				flags[i] |= flagOrphan
			}
			nm[i], ns[i] = uint32(len(r.missing)), uint32(len(r.surviving))
			missing = append(missing, r.missing...)
			surviving = append(surviving, r.surviving...)
		}
		return enc(&resultsFrame{
			N: n, Jobs: codec.PackStrings(jobs), Tokens: codec.PackInts(tokens), Indexes: codec.PackInts(indexes),
			At: codec.PackInts(at), Flags: codec.PackInts(flags), Reasons: codec.PackInts(reasons),
			Details: codec.PackStrings(details), MissingCount: codec.PackInts(nm), SurvivingCount: codec.PackInts(ns),
			Missing: codec.PackStrings(missing), Surviving: codec.PackStrings(surviving),
		})
	})
}

// errMalformed builds a restore error wrapping ck.ErrMalformed (and the
// validation error it reports, if the format has a %w verb).
func errMalformed(format string, args ...any) error {
	return fmt.Errorf("index: restore: "+format+": %w", append(args, ck.ErrMalformed)...)
}

// Restore reads one snapshot stream written by [Index.Snapshot] from r and
// returns the index it describes. It reads exactly that stream, up to and
// including its checksum, and nothing after it, so several sections can be
// read one after the other from one reader (fastest from one that
// implements io.ByteReader, such as a *bufio.Reader). Everything read is validated (block
// metadata, sortedness, counts, references between sections, the
// invariants the index relies on); malformed input returns an error
// wrapping [compactkit.ErrMalformed], [compactkit.ErrTruncated],
// [compactkit.ErrUnknownVersion], [compactkit.ErrTooLarge] or
// [compactkit.ErrChecksum], and nothing is half-built.
//
// Restore(Snapshot(x)) behaves like x for every future call sequence and
// snapshots to identical bytes.
func Restore(r io.Reader) (*Index, error) {
	sr, err := codec.NewReader(r, codec.Snapshot, codec.KindSection)
	if err != nil {
		return nil, fmt.Errorf("index: restore: %w", err)
	}
	if v := sr.Version(); v < 1 || v > SnapshotVersion {
		return nil, fmt.Errorf("index: restore: snapshot version %d: %w", v, ck.ErrUnknownVersion)
	}
	rs := &restorer{r: sr}
	x, err := rs.run()
	if err != nil {
		return nil, err
	}
	if err := sr.Finish(); err != nil {
		return nil, fmt.Errorf("index: restore: %w", err)
	}
	return x, nil
}

type restorer struct {
	r *codec.Reader
	h snapHeader
	x *Index
}

func (rs *restorer) decode(what string, v any) error {
	if err := rs.r.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("index: restore: %s: stream ends early: %w", what, ck.ErrTruncated)
		}
		return fmt.Errorf("index: restore: %s: %w", what, err)
	}
	return nil
}

// frameN checks a frame's record count against what remains.
func frameN(what string, n int, remaining uint64) error {
	if n < 1 || n > codec.FrameRecords || uint64(n) > remaining {
		return errMalformed("%s frame of %d records, %d remaining", what, n, remaining)
	}
	return nil
}

func unpackInts[T codec.Integer](what string, b []byte, n int) ([]T, error) {
	v, err := codec.UnpackInts[T](b, n)
	if err != nil {
		return nil, fmt.Errorf("index: restore: %s: %w", what, err)
	}
	return v, nil
}

func unpackStrings(what string, c codec.Strings, n int) ([]string, error) {
	v, err := c.Unpack(n)
	if err != nil {
		return nil, fmt.Errorf("index: restore: %s: %w", what, err)
	}
	return v, nil
}

func (rs *restorer) run() (*Index, error) {
	h := &rs.h
	if err := rs.decode("header", h); err != nil {
		return nil, err
	}
	if h.Component != componentName {
		return nil, errMalformed("component %q, want %q", h.Component, componentName)
	}
	cfg := Config{
		DedupHorizon:       durationOf(h.DedupHorizon),
		CleanupDelay:       durationOf(h.CleanupDelay),
		CompletedRetention: durationOf(h.CompletedRetention),
		ReaderTimeout:      durationOf(h.ReaderTimeout),
	}
	if err := cfg.Validate(); err != nil {
		return nil, errMalformed("%w", err)
	}
	if h.WatermarkSet && h.Watermark > h.Clock || !h.WatermarkSet && h.Watermark != 0 {
		return nil, errMalformed("watermark %d (set %t) at clock %d", h.Watermark, h.WatermarkSet, h.Clock)
	}
	if h.Names > 1<<31 {
		return nil, errMalformed("%d names for %d blocks and %d datasets", h.Names, h.Blocks, h.Datasets)
	}
	x := newIndex(cfg)
	rs.x = x
	x.s.clock, x.s.floor = h.Clock, h.Floor
	x.s.wmSet, x.s.watermark = h.WatermarkSet, h.Watermark
	x.s.applied, x.s.refused, x.s.duplicates = h.Applied, h.Refused, h.Duplicates
	if err := rs.names(); err != nil {
		return nil, err
	}
	if err := rs.blocks(); err != nil {
		return nil, err
	}
	if err := rs.tombs(); err != nil {
		return nil, err
	}
	if err := rs.gone(); err != nil {
		return nil, err
	}
	if err := rs.results(); err != nil {
		return nil, err
	}
	return x, nil
}

func (rs *restorer) names() error {
	var prev string
	for rem := rs.h.Names; rem > 0; {
		var f namesFrame
		if err := rs.decode("names", &f); err != nil {
			return err
		}
		if err := frameN("names", f.N, rem); err != nil {
			return err
		}
		names, err := unpackStrings("names", f.Names, f.N)
		if err != nil {
			return err
		}
		for _, n := range names {
			if n <= prev {
				return errMalformed("name %q after %q: names must be sorted, distinct and non-empty", n, prev)
			}
			if err := validName(n); err != nil {
				return errMalformed("%w", err)
			}
			prev = n
			rs.x.intern(strings.Clone(n))
		}
		rem -= uint64(f.N)
	}
	return nil
}

func (rs *restorer) blocks() error {
	x := rs.x
	nn := uint32(len(x.s.names)) // valid references are < nn
	used := make([]bool, nn)
	var total uint64
	prev := ""
	for rem := rs.h.Blocks; rem > 0; {
		var f blocksFrame
		if err := rs.decode("blocks", &f); err != nil {
			return err
		}
		if err := frameN("blocks", f.N, rem); err != nil {
			return err
		}
		n := f.N
		ids, err := unpackStrings("block IDs", f.IDs, n)
		if err != nil {
			return err
		}
		tenants, err := unpackInts[uint32]("block tenants", f.Tenants, n)
		if err != nil {
			return err
		}
		shards, err := unpackInts[uint32]("block shards", f.Shards, n)
		if err != nil {
			return err
		}
		levels, err := unpackInts[uint32]("block levels", f.Levels, n)
		if err != nil {
			return err
		}
		mins, err := unpackInts[int64]("block min times", f.MinTimes, n)
		if err != nil {
			return err
		}
		spans, err := unpackInts[uint64]("block spans", f.Spans, n)
		if err != nil {
			return err
		}
		sizes, err := unpackInts[int64]("block sizes", f.Sizes, n)
		if err != nil {
			return err
		}
		counts, err := unpackInts[uint32]("block dataset counts", f.Counts, n)
		if err != nil {
			return err
		}
		var sum uint64
		for _, c := range counts {
			sum += uint64(c)
		}
		if f.D < 0 || uint64(f.D) != sum {
			return errMalformed("blocks frame: %d datasets, its blocks hold %d", f.D, sum)
		}
		d := f.D
		dten, err := unpackInts[uint32]("dataset tenants", f.DTenants, d)
		if err != nil {
			return err
		}
		dname, err := unpackInts[uint32]("dataset names", f.DNames, d)
		if err != nil {
			return err
		}
		dsize, err := unpackInts[int64]("dataset sizes", f.DSizes, d)
		if err != nil {
			return err
		}
		drec, err := unpackInts[int64]("dataset records", f.DRecords, d)
		if err != nil {
			return err
		}
		doff, err := unpackInts[uint64]("dataset offsets", f.DOffsets, d)
		if err != nil {
			return err
		}
		dspan, err := unpackInts[uint64]("dataset spans", f.DSpans, d)
		if err != nil {
			return err
		}
		j := 0 // next dataset
		for i := range n {
			id := ids[i]
			if id <= prev {
				return errMalformed("block %q after %q: IDs must be sorted and distinct", id, prev)
			}
			prev = id
			maxT := int64(uint64(mins[i]) + spans[i])
			if maxT < mins[i] || tenants[i] >= nn {
				return errMalformed("block %s: span %d or tenant reference %d out of range", id, spans[i], tenants[i])
			}
			b := &block{
				id: strings.Clone(id), tenant: tenants[i], shard: shards[i], level: levels[i],
				minTime: mins[i], maxTime: maxT, size: sizes[i],
			}
			if c := int(counts[i]); c > 0 {
				ds := make([]dataset, c)
				for k := range ds {
					if dten[j] >= nn || dname[j] >= nn {
						return errMalformed("block %s: dataset name reference out of range", id)
					}
					dmin := int64(uint64(b.minTime) + doff[j])
					dmax := int64(uint64(dmin) + dspan[j])
					if dmin < b.minTime || dmax < dmin {
						return errMalformed("block %s: dataset range overflows", id)
					}
					ds[k] = dataset{tenant: dten[j], name: dname[j], size: dsize[j], records: drec[j], minTime: dmin, maxTime: dmax}
					used[dten[j]], used[dname[j]] = true, true
					j++
				}
				b.setDatasets(ds)
			}
			if err := x.checkBlock(b); err != nil {
				return errMalformed("%w", err)
			}
			used[b.tenant] = true
			x.insert(b)
		}
		total += sum
		rem -= uint64(n)
	}
	if total != rs.h.Datasets {
		return errMalformed("blocks hold %d datasets, header says %d", total, rs.h.Datasets)
	}
	for id := 1; id < len(used); id++ {
		if !used[id] {
			return errMalformed("name %q is not used by any block", x.s.names[id])
		}
	}
	return nil
}

func (rs *restorer) tombs() error {
	x := rs.x
	var (
		prev tkey
		all  []tomb
	)
	for rem := rs.h.Tombstones; rem > 0; {
		var f tombsFrame
		if err := rs.decode("tombstones", &f); err != nil {
			return err
		}
		if err := frameN("tombstones", f.N, rem); err != nil {
			return err
		}
		n := f.N
		kinds, err := unpackInts[uint8]("tombstone kinds", f.Kinds, n)
		if err != nil {
			return err
		}
		targets, err := unpackStrings("tombstone targets", f.Targets, n)
		if err != nil {
			return err
		}
		created, err := unpackInts[int64]("tombstone creation times", f.Created, n)
		if err != nil {
			return err
		}
		release, err := unpackInts[int64]("tombstone release times", f.Release, n)
		if err != nil {
			return err
		}
		indexes, err := unpackInts[uint64]("tombstone indexes", f.Indexes, n)
		if err != nil {
			return err
		}
		jobs, err := unpackStrings("tombstone jobs", f.Jobs, n)
		if err != nil {
			return err
		}
		for i := range n {
			t := tomb{tkey: newKey(ck.TombstoneKind(kinds[i]), strings.Clone(targets[i])),
				created: created[i], release: release[i], index: indexes[i], job: strings.Clone(jobs[i])}
			if err := t.tombstone().Validate(); err != nil {
				return errMalformed("%w", err)
			}
			if len(all) > 0 && !prev.less(t.tkey) {
				return errMalformed("tombstone %s after %s: must be sorted and distinct", t.tombstone(), prev.tombstone())
			}
			prev = t.tkey
			if t.job != "" {
				if err := ck.ValidateJobName(t.job); err != nil {
					return errMalformed("tombstone %s: holder: %w", t.tombstone(), err)
				}
			}
			if t.created > t.release || t.created > x.s.clock || t.release > x.s.floor {
				return errMalformed("tombstone %s: created %d, release %d, clock %d, floor %d", t.tombstone(), t.created, t.release, x.s.clock, x.s.floor)
			}
			switch {
			case t.kind == ck.TombstoneBlock && x.Live(t.target):
				return errMalformed("block %s is both live and tombstoned", t.target)
			case t.kind == ck.TombstonePrefix && x.s.liveUnder(t.target):
				return errMalformed("prefix tombstone %s covers a live block", t.target)
			}
			all = append(all, t)
		}
		rem -= uint64(n)
	}
	// Release order must agree with creation order (see Index.newTomb).
	order := slices.Clone(all)
	slices.SortFunc(order, func(a, b tomb) int {
		return cmp.Or(cmp.Compare(a.release, b.release), cmp.Compare(a.created, b.created))
	})
	for i := 1; i < len(order); i++ {
		if order[i].created < order[i-1].created {
			return errMalformed("tombstone %s released before the older %s", order[i-1].tombstone(), order[i].tombstone())
		}
	}
	for _, t := range all {
		x.wTombs().ReplaceOrInsert(t)
		if t.job == "" {
			x.wPool().ReplaceOrInsert(poolKey{release: t.release, created: t.created, tkey: t.tkey})
		} else {
			x.wHeld().ReplaceOrInsert(heldKey{job: t.job, tkey: t.tkey})
		}
		if t.kind == ck.TombstonePrefix {
			x.orphans++
		}
	}
	return nil
}

func (rs *restorer) gone() error {
	x := rs.x
	var all []goneRec
	for rem := rs.h.Gone; rem > 0; {
		var f goneFrame
		if err := rs.decode("deletion records", &f); err != nil {
			return err
		}
		if err := frameN("deletion records", f.N, rem); err != nil {
			return err
		}
		n := f.N
		kinds, err := unpackInts[uint8]("deletion kinds", f.Kinds, n)
		if err != nil {
			return err
		}
		targets, err := unpackStrings("deletion targets", f.Targets, n)
		if err != nil {
			return err
		}
		at, err := unpackInts[int64]("deletion times", f.At, n)
		if err != nil {
			return err
		}
		for i := range n {
			g := goneRec{tkey: newKey(ck.TombstoneKind(kinds[i]), strings.Clone(targets[i])), at: at[i]}
			if err := g.tombstone().Validate(); err != nil {
				return errMalformed("deletion record: %w", err)
			}
			if len(all) > 0 && !all[len(all)-1].tkey.less(g.tkey) {
				return errMalformed("deletion record %s: must be sorted and distinct", g.tombstone())
			}
			if g.at > x.s.clock {
				return errMalformed("deletion record %s at %d after clock %d", g.tombstone(), g.at, x.s.clock)
			}
			if g.kind == ck.TombstoneBlock && x.Live(g.target) {
				return errMalformed("block %s is both live and deleted", g.target)
			}
			all = append(all, g)
		}
		rem -= uint64(n)
	}
	for _, g := range all {
		x.wGone().ReplaceOrInsert(g)
	}
	slices.SortFunc(all, func(a, b goneRec) int { return cmp.Compare(a.at, b.at) })
	for _, g := range all {
		x.goneQ.push(g)
	}
	return nil
}

func (rs *restorer) results() error {
	x := rs.x
	var all []*result
	for rem := rs.h.Results; rem > 0; {
		var f resultsFrame
		if err := rs.decode("results", &f); err != nil {
			return err
		}
		if err := frameN("results", f.N, rem); err != nil {
			return err
		}
		n := f.N
		jobs, err := unpackStrings("result jobs", f.Jobs, n)
		if err != nil {
			return err
		}
		tokens, err := unpackInts[uint64]("result tokens", f.Tokens, n)
		if err != nil {
			return err
		}
		indexes, err := unpackInts[uint64]("result indexes", f.Indexes, n)
		if err != nil {
			return err
		}
		at, err := unpackInts[int64]("result times", f.At, n)
		if err != nil {
			return err
		}
		flags, err := unpackInts[uint8]("result flags", f.Flags, n)
		if err != nil {
			return err
		}
		reasons, err := unpackInts[uint8]("result reasons", f.Reasons, n)
		if err != nil {
			return err
		}
		details, err := unpackStrings("result details", f.Details, n)
		if err != nil {
			return err
		}
		nm, err := unpackInts[uint32]("result missing counts", f.MissingCount, n)
		if err != nil {
			return err
		}
		ns, err := unpackInts[uint32]("result surviving counts", f.SurvivingCount, n)
		if err != nil {
			return err
		}
		var tm, ts uint64
		for i := range n {
			tm += uint64(nm[i])
			ts += uint64(ns[i])
		}
		if tm > uint64(len(f.Missing.Lens)) || ts > uint64(len(f.Surviving.Lens)) {
			return errMalformed("result source lists shorter than their counts")
		}
		missing, err := unpackStrings("result missing sources", f.Missing, int(tm))
		if err != nil {
			return err
		}
		surviving, err := unpackStrings("result surviving sources", f.Surviving, int(ts))
		if err != nil {
			return err
		}
		for i := range n {
			r := &result{
				job: strings.Clone(jobs[i]), token: fencing.Token(tokens[i]), index: indexes[i], at: at[i],
				applied: flags[i]&flagApplied != 0, orphan: flags[i]&flagOrphan != 0,
				reason: Refusal(reasons[i]), detail: strings.Clone(details[i]),
			}
			if nm[i] > 0 {
				r.missing = cloneAll(missing[:nm[i]])
				missing = missing[nm[i]:]
			}
			if ns[i] > 0 {
				r.surviving = cloneAll(surviving[:ns[i]])
				surviving = surviving[ns[i]:]
			}
			if err := validResult(r, x.s.clock); err != nil {
				return err
			}
			if len(all) > 0 && !lessResult(all[len(all)-1], r) {
				return errMalformed("result %s/%d: must be sorted and distinct", r.job, r.token)
			}
			all = append(all, r)
		}
		rem -= uint64(n)
	}
	for _, r := range all {
		x.wResults().ReplaceOrInsert(r)
	}
	slices.SortStableFunc(all, func(a, b *result) int { return cmp.Compare(a.at, b.at) })
	for _, r := range all {
		x.resQ.push(r)
	}
	return nil
}

func cloneAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strings.Clone(s)
	}
	return out
}

func validResult(r *result, clock int64) error {
	if err := ck.ValidateJobName(r.job); err != nil {
		return errMalformed("result: %w", err)
	}
	switch {
	case r.token == 0:
		return errMalformed("result %s: token 0", r.job)
	case r.at > clock:
		return errMalformed("result %s/%d at %d after clock %d", r.job, r.token, r.at, clock)
	case r.reason > RefusedOutputsNotNew:
		return errMalformed("result %s/%d: reason %d", r.job, r.token, r.reason)
	case r.applied != (r.reason == NotRefused):
		return errMalformed("result %s/%d: applied %t with reason %s", r.job, r.token, r.applied, r.reason)
	case r.applied && (r.orphan || len(r.missing) > 0 || len(r.surviving) > 0 || r.detail != ""):
		return errMalformed("result %s/%d: applied with refusal details", r.job, r.token)
	}
	for _, id := range append(slices.Clip(r.missing), r.surviving...) {
		if err := ck.ValidateID(id); err != nil {
			return errMalformed("result %s/%d: source: %w", r.job, r.token, err)
		}
	}
	return nil
}
