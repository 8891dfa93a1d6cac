package index

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/google/btree"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/internal/codec"
	"github.com/compactkit/compactkit/internal/ident"
	"github.com/compactkit/compactkit/internal/namekey"
)

// snapshotVersion is the latest version of the snapshot stream. Restore
// reads every version up to it. A snapshot is written at version 1 while no
// record is pending (version 1 has no records section), at version 2
// otherwise.
const snapshotVersion byte = 2

// componentName names the index in its snapshot header.
const componentName = "index"

// The snapshot is one codec stream of kind codec.KindSection: a header
// frame, then sections of columnar frames of at most codec.FrameRecords
// records each, in this order and with the counts the header gives:
//
//  1. names: the tenant and dataset names the live blocks use, sorted; the
//     other sections refer to them as 1 + their position (0 is "");
//  2. blocks, sorted by ID, each frame with the datasets of its blocks;
//  3. the tombstones that stand alone, sorted by (kind, target);
//  4. from version 2, the records: a frame with their count and the count
//     of their sources (two integers), then the records sorted by their first source, each with its
//     sources sorted by (kind, target);
//  5. deletion records, sorted by (kind, target);
//  6. replacement results, sorted by (job, token).
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

// recordsFrame holds up to codec.FrameRecords records and their sources
// (a frame ends early once it holds codec.FrameRecords sources).
type recordsFrame struct {
	_       struct{} `cbor:",toarray"`
	N       int
	Created []byte
	Release []byte
	Indexes []byte
	Jobs    codec.Strings
	Counts  []byte // sources per record
	S       int    // sources in the frame
	Kinds   []byte
	Targets codec.Strings
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

// Snapshot writes the index as it was when the view was opened to w, as
// one framed, checksummed, columnar stream (see [Restore]). It is a
// function of the logical state only: replicas holding the same state
// write identical bytes. It may run on another goroutine while the index
// is mutated (for hosts that persist snapshots in the background).
func (v *View) Snapshot(w io.Writer) error { return v.state(needAll).snapshot(w) }

func (s *state) snapshot(w io.Writer) error {
	// The names the live blocks use, sorted, and their references.
	used := make([]bool, len(s.names))
	nds := 0
	ascend(s.byID.BTreeG, func(it idItem) bool {
		if it.b == nil {
			return true
		}
		used[it.b.tenant] = true
		r := it.b.datasets()
		for d := (dataset{}); r.next(&d); {
			used[d.tenant] = true
			used[d.name] = true
		}
		nds += int(it.b.unpack().nds)
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

	version := byte(1)
	if s.nrecs > 0 {
		version = 2
	}
	sw, err := codec.NewWriter(w, codec.Snapshot, codec.KindSection, version)
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
		Blocks:             uint64(s.blocks),
		Datasets:           uint64(nds),
		Tombstones:         uint64(s.ntombs - s.nrecSrcs),
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
	if version >= 2 {
		if err := s.writeRecords(enc); err != nil {
			return err
		}
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

func (s *state) writeBlocks(enc func(any) error, ref []uint32) error {
	var (
		ids                         []string
		tenants, shards, levels, ns []uint32
		mins, sizes                 []int64
		spans                       []uint64
		dten, dname                 []uint32
		dsize, drec                 []int64
		doff, dspan                 []uint64
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
	return writeFramed(s.byID.BTreeG, func(it idItem) bool {
		b := it.b
		if b == nil {
			return false
		}
		e := b.unpack()
		ids = append(ids, b.id)
		tenants, shards, levels = append(tenants, ref[b.tenant]), append(shards, b.shard), append(levels, e.level)
		mins, spans, sizes = append(mins, b.minTime), append(spans, uint64(b.maxTime)-uint64(b.minTime)), append(sizes, e.size)
		ns = append(ns, e.nds)
		r := b.datasets()
		for d := (dataset{}); r.next(&d); {
			dten, dname = append(dten, ref[d.tenant]), append(dname, ref[d.name])
			dsize, drec = append(dsize, d.size), append(drec, d.records)
			doff, dspan = append(doff, uint64(d.minTime)-uint64(b.minTime)), append(dspan, uint64(d.maxTime)-uint64(d.minTime))
		}
		return len(ids) == codec.FrameRecords || len(dten) >= codec.FrameRecords
	}, flush)
}

func (s *state) writeTombs(enc func(any) error) error {
	each := func(fn btree.ItemIteratorG[tombItem]) {
		ascend(s.tombs.BTreeG, func(it tombItem) bool { return it.t.rec != nil || fn(it) })
	}
	return codec.InFrames(each, func(ts []tombItem) error {
		n := len(ts)
		kinds := make([]uint8, n)
		targets, jobs := make([]string, n), make([]string, n)
		created, release := make([]int64, n), make([]int64, n)
		indexes := make([]uint64, n)
		for i, it := range ts {
			t := it.t
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

// writeRecords writes the records section: its counts, then the records
// in the order of their leads' keys, each lead carrying its record's
// holder.
func (s *state) writeRecords(enc func(any) error) error {
	if err := enc(&[2]uint64{uint64(s.nrecs), uint64(s.nrecSrcs)}); err != nil {
		return err
	}
	var (
		created, release []int64
		indexes          []uint64
		jobs, targets    []string
		counts           []uint32
		kinds            []uint8
	)
	flush := func() error {
		if len(counts) == 0 {
			return nil
		}
		err := enc(&recordsFrame{
			N: len(counts), Created: codec.PackInts(created), Release: codec.PackInts(release),
			Indexes: codec.PackInts(indexes), Jobs: codec.PackStrings(jobs), Counts: codec.PackInts(counts),
			S: len(targets), Kinds: codec.PackInts(kinds), Targets: codec.PackStrings(targets),
		})
		created, release, indexes, jobs, counts = created[:0], release[:0], indexes[:0], jobs[:0], counts[:0]
		kinds, targets = kinds[:0], targets[:0]
		return err
	}
	return writeFramed(s.tombs.BTreeG, func(it tombItem) bool {
		t := it.t
		if t.rec == nil || t.tkey != t.rec.srcs[0].tkey {
			return false
		}
		created, release, indexes = append(created, t.created), append(release, t.release), append(indexes, t.index)
		jobs, counts = append(jobs, t.job), append(counts, uint32(len(t.rec.srcs)))
		for i := range t.rec.srcs {
			k := &t.rec.srcs[i].tkey
			kinds, targets = append(kinds, uint8(k.kind)), append(targets, k.target)
		}
		return len(counts) == codec.FrameRecords || len(targets) >= codec.FrameRecords
	}, flush)
}

// writeFramed adds the items of t to a frame in order with add, which
// reports when the frame is full, and writes the frame with flush then and
// at the end.
func writeFramed[T any](t *btree.BTreeG[leafRef[T]], add func(T) (full bool), flush func() error) error {
	var err error
	ascend(t, func(it T) bool {
		if add(it) {
			err = flush()
		}
		return err == nil
	})
	if err != nil {
		return err
	}
	return flush()
}

func (s *state) writeGone(enc func(any) error) error {
	return codec.InFrames(s.gone.Ascend, func(gs []goneRec) error {
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
	return codec.InFrames(s.results.Ascend, func(rs []*result) error {
		n := len(rs)
		jobs, details := make([]string, n), make([]string, n)
		tokens, indexes := make([]uint64, n), make([]uint64, n)
		at := make([]int64, n)
		flags, reasons := make([]uint8, n), make([]uint8, n)
		nm, ns := make([]uint32, n), make([]uint32, n)
		var missing, surviving []string
		for i, r := range rs {
			jobs[i], details[i], tokens[i], indexes[i], at[i] = r.job.String(), r.detail, uint64(r.token), r.index, r.at
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

// Restore reads one snapshot stream written by [View.Snapshot] from r and
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
	x, err := restore(r)
	if err != nil {
		return nil, fmt.Errorf("index: restore: %w", err)
	}
	return x, nil
}

func restore(r io.Reader) (*Index, error) {
	sr, err := codec.NewReader(r, codec.Snapshot, codec.KindSection)
	if err != nil {
		return nil, err
	}
	if v := sr.Version(); v < 1 || v > snapshotVersion {
		return nil, fmt.Errorf("snapshot version %d: %w", v, ck.ErrUnknownVersion)
	}
	rs := &restorer{d: codec.NewDecoder(sr), version: sr.Version()}
	if err := rs.d.Run(rs.header, rs.names, rs.blocks, rs.tombs, rs.records, rs.gone, rs.results); err != nil {
		return nil, err
	}
	return rs.x, nil
}

// restorer rebuilds an index from a snapshot, one method per section.
type restorer struct {
	d       *codec.Decoder
	version byte
	h       snapHeader
	x       *Index
	alone   []tomb // the tombstones that stand alone, sorted by key (tombs)
}

func (rs *restorer) header() error {
	h := &rs.h
	if err := rs.d.Decode("header", h); err != nil {
		return err
	}
	if h.Component != componentName {
		return codec.Malformed("component %q, want %q", h.Component, componentName)
	}
	cfg := Config{
		DedupHorizon:       durationOf(h.DedupHorizon),
		CleanupDelay:       durationOf(h.CleanupDelay),
		CompletedRetention: durationOf(h.CompletedRetention),
		ReaderTimeout:      durationOf(h.ReaderTimeout),
	}
	if err := cfg.Validate(); err != nil {
		return codec.Malformed("%w", err)
	}
	if h.WatermarkSet && h.Watermark > h.Clock || !h.WatermarkSet && h.Watermark != 0 {
		return codec.Malformed("watermark %d (set %t) at clock %d", h.Watermark, h.WatermarkSet, h.Clock)
	}
	if h.Names > 1<<31 {
		return codec.Malformed("%d names for %d blocks and %d datasets", h.Names, h.Blocks, h.Datasets)
	}
	x := newIndex(cfg)
	rs.x = x
	x.s.clock, x.s.floor = h.Clock, h.Floor
	x.s.wmSet, x.s.watermark = h.WatermarkSet, h.Watermark
	x.s.applied, x.s.refused, x.s.duplicates = h.Applied, h.Refused, h.Duplicates
	return nil
}

func (rs *restorer) names() error {
	d := rs.d
	var prev string
	for d.Records("names", rs.h.Names); d.More(); {
		var f namesFrame
		n := d.Frame(&f, &f.N)
		names := d.Strings("names", f.Names, n)
		if err := d.Err(); err != nil {
			return err
		}
		for _, name := range names {
			if name <= prev {
				return codec.Malformed("name %q after %q: names must be sorted, distinct and non-empty", name, prev)
			}
			if err := validName(name); err != nil {
				return codec.Malformed("%w", err)
			}
			prev = name
			rs.x.intern(strings.Clone(name))
		}
	}
	return d.Err()
}

func (rs *restorer) blocks() error {
	d, x := rs.d, rs.x
	nn := uint32(len(x.s.names)) // valid references are < nn
	used := make([]bool, nn)
	var total uint64
	prev := ""
	var ds []dataset // the datasets of a block, reused
	// The integer columns of a frame, in buffers every frame reuses.
	var c struct {
		tenants, shards, levels, counts, dten, dname []uint32
		mins, sizes, drec, dsize                     []int64
		spans, doff, dspan                           []uint64
	}
	// The blocks by ID and the runs' items, loaded at the end (load).
	ld := loader{live: make([]idItem, 0, min(rs.h.Blocks, 1<<20)), tenants: make([]*tenantLoad, nn)}
	for d.Records("blocks", rs.h.Blocks); d.More(); {
		var f blocksFrame
		n := d.Frame(&f, &f.N)
		ids := d.Strings("IDs", f.IDs, n)
		tenants := column(d, "tenants", f.Tenants, n, &c.tenants)
		shards := column(d, "shards", f.Shards, n, &c.shards)
		levels := column(d, "levels", f.Levels, n, &c.levels)
		mins := column(d, "min times", f.MinTimes, n, &c.mins)
		spans := column(d, "spans", f.Spans, n, &c.spans)
		sizes := column(d, "sizes", f.Sizes, n, &c.sizes)
		counts := column(d, "dataset counts", f.Counts, n, &c.counts)
		if err := d.Err(); err != nil {
			return err
		}
		var sum uint64
		for _, k := range counts {
			sum += uint64(k)
		}
		if f.D < 0 || uint64(f.D) != sum {
			return codec.Malformed("blocks frame: %d datasets, its blocks hold %d", f.D, sum)
		}
		dten := column(d, "dataset tenants", f.DTenants, f.D, &c.dten)
		dname := column(d, "dataset names", f.DNames, f.D, &c.dname)
		dsize := column(d, "dataset sizes", f.DSizes, f.D, &c.dsize)
		drec := column(d, "dataset records", f.DRecords, f.D, &c.drec)
		doff := column(d, "dataset offsets", f.DOffsets, f.D, &c.doff)
		dspan := column(d, "dataset spans", f.DSpans, f.D, &c.dspan)
		if err := d.Err(); err != nil {
			return err
		}
		j := 0 // next dataset
		for i := range n {
			id := ids[i]
			if id <= prev {
				return codec.Malformed("block %q after %q: IDs must be sorted and distinct", id, prev)
			}
			prev = id
			maxT := int64(uint64(mins[i]) + spans[i])
			if maxT < mins[i] || tenants[i] >= nn {
				return codec.Malformed("block %s: span %d or tenant reference %d out of range", id, spans[i], tenants[i])
			}
			f := block{id: id, tenant: tenants[i], shard: shards[i], minTime: mins[i], maxTime: maxT}
			ds = ds[:0]
			if c := int(counts[i]); c > 0 {
				ds = slices.Grow(ds, c)[:c]
				for k := range ds {
					if dten[j] >= nn || dname[j] >= nn {
						return codec.Malformed("block %s: dataset name reference out of range", id)
					}
					dmin := int64(uint64(f.minTime) + doff[j])
					dmax := int64(uint64(dmin) + dspan[j])
					if dmin < f.minTime || dmax < dmin {
						return codec.Malformed("block %s: dataset range overflows", id)
					}
					ds[k] = dataset{tenant: dten[j], name: dname[j], size: dsize[j], records: drec[j], minTime: dmin, maxTime: dmax}
					used[dten[j]], used[dname[j]] = true, true
					j++
				}
			}
			// Packing is exact for any values: what checkBlock reads
			// of b is what was decoded, and the decoded level and size
			// are the block's packed ones, which checkBlock and add
			// take as they are instead of unpacking them. The block
			// copies the ID, which shares its bytes with the decoded
			// column.
			b := newBlock(f, levels[i], sizes[i], ds)
			if err := x.checkBlock(b, sizes[i], ds); err != nil {
				return codec.Malformed("%w", err)
			}
			used[b.tenant] = true
			ld.add(b, levels[i], sizes[i])
		}
		total += sum
	}
	if err := d.Err(); err != nil {
		return err
	}
	if total != rs.h.Datasets {
		return codec.Malformed("blocks hold %d datasets, header says %d", total, rs.h.Datasets)
	}
	for id := 1; id < len(used); id++ {
		if !used[id] {
			return codec.Malformed("name %q is not used by any block", x.s.names[id])
		}
	}
	x.load(&ld)
	return nil
}

// loader collects the blocks that a restore makes live, for load: the
// blocks by ID, and by tenant (name ID) the items of its runs and its
// statistics by level.
type loader struct {
	live    []idItem
	tenants []*tenantLoad
}

type tenantLoad struct {
	runs   [65][]titem // by span class
	levels []LevelStats
}

// add adds b, the next block in ID order, whose packed level and size
// are level and size.
func (ld *loader) add(b *block, level uint32, size int64) {
	ld.live = appendDoubling(ld.live, newIDItem(b))
	c := spanClass(b.minTime, b.maxTime)
	var tb [4]uint32
	for _, t := range b.tenants(tb[:0]) {
		tl := ld.tenant(t)
		tl.runs[c] = appendDoubling(tl.runs[c], titem{minTime: b.minTime, b: b})
	}
	tl := ld.tenant(b.tenant)
	i := slices.IndexFunc(tl.levels, func(l LevelStats) bool { return l.Level == level })
	if i < 0 {
		i = len(tl.levels)
		tl.levels = append(tl.levels, LevelStats{Level: level})
	}
	tl.levels[i].Blocks++
	tl.levels[i].Bytes += size
}

// appendDoubling is append, but a full slice's capacity doubles: append
// grows a long slice by a quarter, so that collecting a restore's millions
// of items would copy them about four times over, against once. It only
// grows what was read, so a header cannot make it allocate.
func appendDoubling[T any](s []T, x T) []T {
	if len(s) == cap(s) {
		s = slices.Grow(s, max(len(s), 4))
	}
	return append(s, x)
}

func (ld *loader) tenant(t uint32) *tenantLoad {
	tl := ld.tenants[t]
	if tl == nil {
		tl = new(tenantLoad)
		ld.tenants[t] = tl
	}
	return tl
}

// load makes the blocks of ld live in the empty index x. It builds full
// leaves (leaves.go) instead of inserting the blocks one by one: the
// blocks by ID come sorted, and each run's items are sorted once (they
// come nearly in order).
func (x *Index) load(ld *loader) {
	x.s.ids().load(x.wByID(), x.idGen, ld.live)
	x.s.blocks = len(ld.live)
	for t, tl := range ld.tenants {
		if tl == nil {
			continue
		}
		for c, items := range tl.runs {
			if len(items) == 0 {
				continue
			}
			if !slices.IsSortedFunc(items, cmpTItem) {
				slices.SortFunc(items, cmpTItem)
			}
			r := x.mutRun(uint32(t), uint8(c))
			runOps().load(r.items, x.gen, items)
			r.n = len(items)
		}
		for _, l := range tl.levels {
			l.Tenant = x.s.names[t]
			x.levels[levelKey{uint32(t), l.Level}] = &l
		}
	}
}

// column decodes a column of n integers into *buf, reusing its array, and
// returns it.
func column[T codec.Integer](d *codec.Decoder, what string, b []byte, n int, buf *[]T) []T {
	*buf = codec.IntsInto(d, what, b, n, *buf)
	return *buf
}

func cmpTItem(a, b titem) int {
	if a.minTime != b.minTime {
		return cmp.Compare(a.minTime, b.minTime)
	}
	return strings.Compare(a.b.id, b.b.id)
}

// keys are the decoded columns of tombstone kinds and targets of a frame.
type keys struct {
	kinds   []uint8
	targets []string
}

func keyColumns(d *codec.Decoder, kinds []byte, targets codec.Strings, n int) keys {
	return keys{codec.Ints[uint8](d, "kinds", kinds, n), d.Strings("targets", targets, n)}
}

// key returns the i-th key, its target copied out of the frame.
func (k keys) key(i int) tkey {
	return newKey(ck.TombstoneKind(k.kinds[i]), strings.Clone(k.targets[i]))
}

func (rs *restorer) tombs() error {
	d := rs.d
	var prev tkey
	for d.Records("tombstones", rs.h.Tombstones); d.More(); {
		var f tombsFrame
		n := d.Frame(&f, &f.N)
		ks := keyColumns(d, f.Kinds, f.Targets, n)
		created := codec.Ints[int64](d, "creation times", f.Created, n)
		release := codec.Ints[int64](d, "release times", f.Release, n)
		indexes := codec.Ints[uint64](d, "indexes", f.Indexes, n)
		jobs := d.Strings("jobs", f.Jobs, n)
		if err := d.Err(); err != nil {
			return err
		}
		for i := range n {
			t := tomb{tkey: ks.key(i),
				created: created[i], release: release[i], index: indexes[i], job: strings.Clone(jobs[i])}
			if err := t.tombstone().Validate(); err != nil {
				return codec.Malformed("%w", err)
			}
			if len(rs.alone) > 0 && !prev.less(t.tkey) {
				return codec.Malformed("tombstone %s after %s: must be sorted and distinct", t.tombstone(), prev.tombstone())
			}
			prev = t.tkey
			if err := rs.checkTomb(&t); err != nil {
				return err
			}
			rs.alone = append(rs.alone, t)
		}
	}
	return d.Err()
}

// checkTomb checks a decoded tombstone (a valid key) against the state
// restored before it: its holder, its times, and no live block under it.
func (rs *restorer) checkTomb(t *tomb) error {
	x := rs.x
	if t.job != "" {
		if err := ident.ValidateJobName(t.job); err != nil {
			return codec.Malformed("tombstone %s: holder: %w", t.tombstone(), err)
		}
	}
	if t.created > t.release || t.created > x.s.clock || t.release > x.s.floor {
		return codec.Malformed("tombstone %s: created %d, release %d, clock %d, floor %d", t.tombstone(), t.created, t.release, x.s.clock, x.s.floor)
	}
	switch {
	case t.kind == ck.TombstoneBlock && x.live(t.target):
		return codec.Malformed("block %s is both live and tombstoned", t.target)
	case t.kind == ck.TombstonePrefix && x.s.liveUnder(t.target):
		return codec.Malformed("prefix tombstone %s covers a live block", t.target)
	}
	return nil
}

// records reads the records section (version 2), then loads the pending
// tombstones: those that stand alone and the records' sources.
func (rs *restorer) records() error {
	var recs []*record
	if rs.version >= 2 {
		var err error
		if recs, err = rs.readRecords(); err != nil {
			return err
		}
	}
	return rs.loadTombs(recs)
}

func (rs *restorer) readRecords() ([]*record, error) {
	d := rs.d
	var head [2]uint64 // the records, and their sources
	if err := d.Decode("records head", &head); err != nil {
		return nil, err
	}
	var (
		recs    []*record
		sources uint64
	)
	for d.Records("records", head[0]); d.More(); {
		var f recordsFrame
		n := d.Frame(&f, &f.N)
		created := codec.Ints[int64](d, "creation times", f.Created, n)
		release := codec.Ints[int64](d, "release times", f.Release, n)
		indexes := codec.Ints[uint64](d, "indexes", f.Indexes, n)
		jobs := d.Strings("jobs", f.Jobs, n)
		counts := codec.Ints[uint32](d, "source counts", f.Counts, n)
		if total := codec.Total(d, "source counts", counts); d.Err() == nil && total != f.S {
			return nil, codec.Malformed("records frame: %d sources, its records hold %d", f.S, total)
		}
		ks := keyColumns(d, f.Kinds, f.Targets, f.S)
		if err := d.Err(); err != nil {
			return nil, err
		}
		j := 0 // the next source
		for i := range n {
			if counts[i] == 0 {
				return nil, codec.Malformed("record %d of a frame without sources", i)
			}
			rec := &record{srcs: make([]tomb, counts[i])}
			for k := range rec.srcs {
				t := &rec.srcs[k]
				*t = tomb{tkey: ks.key(j), created: created[i], release: release[i], index: indexes[i], rec: rec}
				j++
				if err := t.tombstone().Validate(); err != nil {
					return nil, codec.Malformed("record: %w", err)
				}
				if k > 0 && !rec.srcs[k-1].tkey.less(t.tkey) {
					return nil, codec.Malformed("record source %s after %s: must be sorted and distinct", t.tombstone(), rec.srcs[k-1].tombstone())
				}
			}
			lead := &rec.srcs[0]
			lead.job = strings.Clone(jobs[i])
			for k := range rec.srcs {
				if err := rs.checkTomb(&rec.srcs[k]); err != nil {
					return nil, err
				}
			}
			if len(recs) > 0 && !recs[len(recs)-1].srcs[0].tkey.less(lead.tkey) {
				return nil, codec.Malformed("record of %s: records must be sorted by their first sources", lead.tombstone())
			}
			recs = append(recs, rec)
		}
		sources += uint64(f.S)
	}
	if err := d.Err(); err != nil {
		return nil, err
	}
	if sources != head[1] || len(recs) == 0 {
		return nil, codec.Malformed("%d records of %d sources, the head says %d of %d", len(recs), sources, head[0], head[1])
	}
	return recs, nil
}

// loadTombs loads the tombstones that stand alone (rs.alone) and the
// records' sources into the empty index, after checking that no object is
// pending twice and that release order agrees with creation order (see
// Index.nextRelease).
func (rs *restorer) loadTombs(recs []*record) error {
	x, all := rs.x, rs.alone
	// The leads: each tombstone that stands alone, and each record's first
	// source.
	leads := make([]*tomb, 0, len(all)+len(recs))
	items := make([]tombItem, 0, len(all))
	var chunk []tomb
	for i := range all {
		// The tombs in allocations of a frame's size, so that one
		// tombstone left pending does not keep every restored one.
		if i%codec.FrameRecords == 0 {
			chunk = slices.Clone(all[i:min(i+codec.FrameRecords, len(all))])
		}
		t := &chunk[i%codec.FrameRecords]
		items = append(items, newTombItem(t))
		leads = append(leads, t)
	}
	// Every record's sources, to check that no object is pending twice;
	// all but the leads become marks in the ID set below.
	for _, rec := range recs {
		for k := range rec.srcs {
			items = append(items, newTombItem(&rec.srcs[k]))
		}
		leads = append(leads, &rec.srcs[0])
		x.s.nrecs++
		x.s.nrecSrcs += len(rec.srcs)
	}
	if len(recs) > 0 {
		slices.SortFunc(items, func(a, b tombItem) int { return cmpKey(a.t.tkey, b.t.tkey) })
		for i := 1; i < len(items); i++ {
			if items[i].t.tkey == items[i-1].t.tkey {
				return codec.Malformed("tombstone %s is pending twice", items[i].t.tombstone())
			}
		}
	}
	order := slices.Clone(leads)
	slices.SortFunc(order, func(a, b *tomb) int {
		return cmp.Or(cmp.Compare(a.release, b.release), cmp.Compare(a.created, b.created))
	})
	for i := 1; i < len(order); i++ {
		if order[i].created < order[i-1].created {
			return codec.Malformed("tombstone %s released before the older %s", order[i-1].tombstone(), order[i].tombstone())
		}
	}
	var pool []poolKey
	for _, t := range leads {
		if t.job == "" {
			pool = append(pool, newPoolKey(t))
			x.s.pooled += t.size()
		} else {
			x.s.held.Mut(x.vmu).ReplaceOrInsert(heldKey{job: t.job, tkey: t.tkey})
		}
	}
	x.s.ntombs = len(items)
	if len(recs) > 0 {
		// The tombstone set holds the leads; the other sources are marks,
		// which restored blocks were checked not to be. The flat copy of
		// the ID set's bounds is built after them, when next read.
		kept := items[:0]
		for _, it := range items {
			if t := it.t; t.rec == nil || t.tkey == t.rec.srcs[0].tkey {
				kept = append(kept, it)
			} else if !idOps().insert(x.wByID(), x.idGen, markOf(t)) {
				return codec.Malformed("block %s is both live and tombstoned", t.target)
			}
		}
		items = kept
		x.s.idFlat.ok = false
	}
	for _, it := range items {
		if it.t.kind == ck.TombstonePrefix {
			x.orphans[it.t.target] = struct{}{}
		}
	}
	slices.SortFunc(pool, cmpPool)
	tombOps().load(x.wTombs(), x.tombGen, items) // sorted by key, checked above
	poolOps().load(x.wPool(), x.poolGen, pool)
	x.setHead()
	return nil
}

func (rs *restorer) gone() error {
	d, x := rs.d, rs.x
	var all []goneRec
	for d.Records("deletion records", rs.h.Gone); d.More(); {
		var f goneFrame
		n := d.Frame(&f, &f.N)
		ks := keyColumns(d, f.Kinds, f.Targets, n)
		at := codec.Ints[int64](d, "times", f.At, n)
		if err := d.Err(); err != nil {
			return err
		}
		for i := range n {
			g := goneRec{tkey: ks.key(i), at: at[i]}
			if err := g.tombstone().Validate(); err != nil {
				return codec.Malformed("deletion record: %w", err)
			}
			if len(all) > 0 && !all[len(all)-1].tkey.less(g.tkey) {
				return codec.Malformed("deletion record %s: must be sorted and distinct", g.tombstone())
			}
			if g.at > x.s.clock {
				return codec.Malformed("deletion record %s at %d after clock %d", g.tombstone(), g.at, x.s.clock)
			}
			if g.kind == ck.TombstoneBlock && x.live(g.target) {
				return codec.Malformed("block %s is both live and deleted", g.target)
			}
			all = append(all, g)
		}
	}
	if err := d.Err(); err != nil {
		return err
	}
	for _, g := range all {
		x.s.gone.Mut(x.vmu).ReplaceOrInsert(g)
	}
	slices.SortFunc(all, func(a, b goneRec) int { return cmp.Compare(a.at, b.at) })
	for _, g := range all {
		x.goneQ.push(g)
	}
	return nil
}

func (rs *restorer) results() error {
	d, x := rs.d, rs.x
	var all []*result
	for d.Records("results", rs.h.Results); d.More(); {
		var f resultsFrame
		n := d.Frame(&f, &f.N)
		jobs := d.Strings("jobs", f.Jobs, n)
		tokens := codec.Ints[uint64](d, "tokens", f.Tokens, n)
		indexes := codec.Ints[uint64](d, "indexes", f.Indexes, n)
		at := codec.Ints[int64](d, "times", f.At, n)
		flags := codec.Ints[uint8](d, "flags", f.Flags, n)
		reasons := codec.Ints[uint8](d, "reasons", f.Reasons, n)
		details := d.Strings("details", f.Details, n)
		nm := codec.Ints[uint32](d, "missing counts", f.MissingCount, n)
		ns := codec.Ints[uint32](d, "surviving counts", f.SurvivingCount, n)
		missing := d.Strings("missing sources", f.Missing, codec.Total(d, "missing counts", nm))
		surviving := d.Strings("surviving sources", f.Surviving, codec.Total(d, "surviving counts", ns))
		if err := d.Err(); err != nil {
			return err
		}
		for i := range n {
			r := &result{
				job: namekey.Of(strings.Clone(jobs[i])), token: fencing.Token(tokens[i]), index: indexes[i], at: at[i],
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
				return codec.Malformed("result %s/%d: must be sorted and distinct", r.job, r.token)
			}
			all = append(all, r)
		}
	}
	if err := d.Err(); err != nil {
		return err
	}
	for _, r := range all {
		x.s.results.Mut(x.vmu).ReplaceOrInsert(r)
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
	if err := ident.ValidateJobName(r.job.String()); err != nil {
		return codec.Malformed("result: %w", err)
	}
	switch {
	case r.token == 0:
		return codec.Malformed("result %s: token 0", r.job)
	case r.at > clock:
		return codec.Malformed("result %s/%d at %d after clock %d", r.job, r.token, r.at, clock)
	case r.reason > refusedOutputsNotNew:
		return codec.Malformed("result %s/%d: reason %d", r.job, r.token, r.reason)
	case r.applied != (r.reason == notRefused):
		return codec.Malformed("result %s/%d: applied %t with reason %s", r.job, r.token, r.applied, r.reason)
	case r.applied && (r.orphan || len(r.missing) > 0 || len(r.surviving) > 0 || r.detail != ""):
		return codec.Malformed("result %s/%d: applied with refusal details", r.job, r.token)
	}
	for _, id := range append(slices.Clip(r.missing), r.surviving...) {
		if err := ident.ValidateID(id); err != nil {
			return codec.Malformed("result %s/%d: source: %w", r.job, r.token, err)
		}
	}
	return nil
}
