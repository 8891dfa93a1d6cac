package planner

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/internal/codec"
	"github.com/compactkit/compactkit/internal/ident"
	"github.com/compactkit/compactkit/internal/namekey"
)

// Snapshot format (version 1): one codec stream of kind KindSection.
//
//  1. header: the component name, the configuration, the clock, the next
//     arrival and job sequence numbers, the fairness cursor, the counters
//     and the number of records of each section;
//  2. keys, in key order: tenant, shard, level and number of queued blocks,
//     in frames of at most codec.FrameRecords keys;
//  3. queued blocks, key after key, each key's in arrival order: ID,
//     arrival number, arrival time, min and max time, size;
//  4. claims, in job-name order: name, key, number of sources;
//  5. claimed blocks, claim after claim, in arrival order (block columns);
//  6. quarantined blocks, in ID order: block columns, key, job, reason,
//     time of the eviction.
//
// Version 2 is the same format in which a quarantined block's job may be
// empty: a block an operator marked ([Planner.Mark]). It is written only
// when such a block exists, so that states without one keep version 1's
// bytes.
//
// Every section is columnar (codec.PackStrings, codec.PackInts). The
// snapshot is a function of the logical state only: no chunk layout, no
// index, no map order.
const (
	componentName        = "planner"
	snapshotVersion byte = 1
	// markedVersion is snapshotVersion with marked blocks.
	markedVersion byte = 2
)

type levelRec struct {
	_              struct{} `cbor:",toarray"`
	MaxBlocks      int64
	MaxBytes       int64
	MaxAge         int64
	MaxSpan        int64
	AgingThreshold int64
	CrossShard     bool
}

type configRec struct {
	_                 struct{} `cbor:",toarray"`
	Levels            []levelRec
	FinalLevel        uint32
	TombstonesPerJob  int64
	TombstoneMinLevel uint32
	TombstoneMaxLevel uint32
}

type header struct {
	_             struct{} `cbor:",toarray"`
	Component     string
	Config        configRec
	Clock         int64
	NextArrival   uint64
	NextSeq       uint64
	HasCursor     bool
	Cursor        string
	Counters      []uint64
	Keys          uint64
	Blocks        uint64
	Claims        uint64
	ClaimedBlocks uint64
	Quarantined   uint64
}

type keysFrame struct {
	_       struct{} `cbor:",toarray"`
	N       int
	Tenants codec.Strings
	Shards  []byte
	Levels  []byte
	Counts  []byte
}

type blocksFrame struct {
	_        struct{} `cbor:",toarray"`
	N        int
	IDs      codec.Strings
	Arrivals []byte
	Times    []byte
	MinTimes []byte
	MaxTimes []byte
	Sizes    []byte
}

type claimsFrame struct {
	_       struct{} `cbor:",toarray"`
	N       int
	Names   codec.Strings
	Tenants codec.Strings
	Shards  []byte
	Levels  []byte
	Counts  []byte
}

type quarFrame struct {
	_       struct{} `cbor:",toarray"`
	Blocks  blocksFrame
	Tenants codec.Strings
	Shards  []byte
	Levels  []byte
	Jobs    codec.Strings
	Reasons codec.Strings
	Since   []byte
}

func (c *Config) record() configRec {
	r := configRec{
		FinalLevel:        c.FinalLevel,
		TombstonesPerJob:  int64(c.TombstonesPerJob),
		TombstoneMinLevel: c.TombstoneMinLevel,
		TombstoneMaxLevel: c.TombstoneMaxLevel,
	}
	for _, l := range c.Levels {
		r.Levels = append(r.Levels, levelRec{
			MaxBlocks: int64(l.MaxBlocks), MaxBytes: l.MaxBytes, MaxAge: int64(l.MaxAge),
			MaxSpan: int64(l.MaxSpan), AgingThreshold: int64(l.AgingThreshold), CrossShard: l.CrossShard,
		})
	}
	return r
}

func (r *configRec) config() (Config, error) {
	if r.TombstonesPerJob < 0 || r.TombstonesPerJob > maxTombstonesPerJob || len(r.Levels) > maxLevels {
		return Config{}, fmt.Errorf("configuration out of range: %w", ErrInvalidConfig)
	}
	c := Config{
		FinalLevel:        r.FinalLevel,
		TombstonesPerJob:  int(r.TombstonesPerJob),
		TombstoneMinLevel: r.TombstoneMinLevel,
		TombstoneMaxLevel: r.TombstoneMaxLevel,
	}
	for i, l := range r.Levels {
		if l.MaxBlocks < 0 || l.MaxBlocks > maxBlocksPerJob {
			return Config{}, fmt.Errorf("level %d: max blocks %d: %w", i, l.MaxBlocks, ErrInvalidConfig)
		}
		c.Levels = append(c.Levels, LevelConfig{
			MaxBlocks: int(l.MaxBlocks), MaxBytes: l.MaxBytes, MaxAge: time.Duration(l.MaxAge),
			MaxSpan: time.Duration(l.MaxSpan), AgingThreshold: time.Duration(l.AgingThreshold), CrossShard: l.CrossShard,
		})
	}
	return c, c.Validate()
}

func (c *Counters) list() []uint64 {
	return []uint64{c.Enqueued, c.Claims, c.Completions, c.Returns, c.ReturnedBlocks,
		c.Quarantines, c.QuarantinedBlocks, c.Requeued, c.Dropped, c.Duplicates, c.MissedRemovals}
}

func countersFrom(v []uint64) (Counters, bool) {
	if len(v) != 11 {
		return Counters{}, false
	}
	return Counters{Enqueued: v[0], Claims: v[1], Completions: v[2], Returns: v[3], ReturnedBlocks: v[4],
		Quarantines: v[5], QuarantinedBlocks: v[6], Requeued: v[7], Dropped: v[8], Duplicates: v[9], MissedRemovals: v[10]}, true
}

// blockCols accumulates block columns.
type blockCols struct {
	ids                        []string
	arrivals                   []uint64
	times, minTs, maxTs, sizes []int64
}

func (b *blockCols) add(it *item) {
	b.ids = append(b.ids, it.id)
	b.arrivals = append(b.arrivals, it.arrival)
	b.times = append(b.times, it.time)
	b.minTs = append(b.minTs, it.minT)
	b.maxTs = append(b.maxTs, it.maxT)
	b.sizes = append(b.sizes, it.size)
}

func (b *blockCols) frame() blocksFrame {
	return blocksFrame{
		N: len(b.ids), IDs: codec.PackStrings(b.ids), Arrivals: codec.PackInts(b.arrivals),
		Times: codec.PackInts(b.times), MinTimes: codec.PackInts(b.minTs), MaxTimes: codec.PackInts(b.maxTs),
		Sizes: codec.PackInts(b.sizes),
	}
}

func (b *blockCols) reset() {
	b.ids, b.arrivals = b.ids[:0], b.arrivals[:0]
	b.times, b.minTs, b.maxTs, b.sizes = b.times[:0], b.minTs[:0], b.maxTs[:0], b.sizes[:0]
}

// blockWriter writes blocks in frames of codec.FrameRecords.
type blockWriter struct {
	w    *codec.Writer
	cols blockCols
	err  error
}

func (bw *blockWriter) add(it *item) {
	bw.cols.add(it)
	if len(bw.cols.ids) == codec.FrameRecords {
		bw.flush()
	}
}

func (bw *blockWriter) flush() {
	if len(bw.cols.ids) == 0 || bw.err != nil {
		return
	}
	bw.err = bw.w.Encode(bw.cols.frame())
	bw.cols.reset()
}

func (s *state) snapshot(w io.Writer) error {
	if err := s.writeSnapshot(w); err != nil {
		return fmt.Errorf("planner: snapshot: %w", err)
	}
	return nil
}

func (s *state) writeSnapshot(w io.Writer) error {
	h := header{
		Component: componentName, Config: s.cfg.record(), Clock: s.clock,
		NextArrival: s.nextArrival, NextSeq: s.nextSeq, HasCursor: s.hasCursor, Cursor: s.cursor,
		Counters: s.counters.list(), Keys: uint64(s.keys.Len()), Claims: uint64(s.claims.Len()),
		Quarantined: uint64(s.quar.Len()),
	}
	s.keys.Ascend(func(q *queue) bool { h.Blocks += uint64(q.n); return true })
	s.claims.Ascend(func(c *claim) bool { h.ClaimedBlocks += uint64(len(c.items)); return true })
	version := snapshotVersion
	s.quar.Ascend(func(qe *quarEnt) bool {
		if qe.job == "" {
			version = markedVersion
		}
		return version == snapshotVersion
	})
	sw, err := codec.NewWriter(w, codec.Snapshot, codec.KindSection, version)
	if err != nil {
		return err
	}
	if err := sw.Encode(&h); err != nil {
		return err
	}

	// Keys.
	err = codec.InFrames(s.keys.Ascend, func(qs []*queue) error {
		tenants, shards, levels, counts := make([]string, len(qs)), make([]uint32, len(qs)), make([]uint32, len(qs)), make([]int64, len(qs))
		for i, q := range qs {
			tenants[i], shards[i], levels[i], counts[i] = q.k.tenant, q.k.shard, q.k.level, int64(q.n)
		}
		return sw.Encode(&keysFrame{N: len(qs), Tenants: codec.PackStrings(tenants),
			Shards: codec.PackInts(shards), Levels: codec.PackInts(levels), Counts: codec.PackInts(counts)})
	})
	if err != nil {
		return err
	}

	// Queued blocks.
	bw := blockWriter{w: sw}
	s.keys.Ascend(func(q *queue) bool {
		q.visit(0, func(items []item) bool {
			for i := range items {
				bw.add(&items[i])
			}
			return bw.err == nil
		})
		return bw.err == nil
	})
	if bw.flush(); bw.err != nil {
		return bw.err
	}

	// Claims, then their blocks.
	err = codec.InFrames(s.claims.Ascend, func(cs []*claim) error {
		names, tenants := make([]string, len(cs)), make([]string, len(cs))
		shards, levels, counts := make([]uint32, len(cs)), make([]uint32, len(cs)), make([]int64, len(cs))
		for i, c := range cs {
			names[i], tenants[i], shards[i], levels[i], counts[i] = c.name.String(), c.k.tenant, c.k.shard, c.k.level, int64(len(c.items))
		}
		return sw.Encode(&claimsFrame{N: len(cs), Names: codec.PackStrings(names), Tenants: codec.PackStrings(tenants),
			Shards: codec.PackInts(shards), Levels: codec.PackInts(levels), Counts: codec.PackInts(counts)})
	})
	if err != nil {
		return err
	}
	bw = blockWriter{w: sw}
	s.claims.Ascend(func(c *claim) bool {
		for i := range c.items {
			bw.add(&c.items[i])
		}
		return bw.err == nil
	})
	if bw.flush(); bw.err != nil {
		return bw.err
	}

	// Quarantine.
	err = codec.InFrames(s.quar.Ascend, func(qs []*quarEnt) error {
		var cols blockCols
		tenants, jobs, reasons := make([]string, len(qs)), make([]string, len(qs)), make([]string, len(qs))
		shards, levels, since := make([]uint32, len(qs)), make([]uint32, len(qs)), make([]int64, len(qs))
		for i, qe := range qs {
			cols.add(&qe.it)
			tenants[i], shards[i], levels[i], jobs[i], reasons[i], since[i] = qe.k.tenant, qe.k.shard, qe.k.level, qe.job, qe.reason, qe.since
		}
		return sw.Encode(&quarFrame{Blocks: cols.frame(), Tenants: codec.PackStrings(tenants), Shards: codec.PackInts(shards),
			Levels: codec.PackInts(levels), Jobs: codec.PackStrings(jobs), Reasons: codec.PackStrings(reasons), Since: codec.PackInts(since)})
	})
	if err != nil {
		return err
	}
	return sw.Close()
}

// Restore reads a snapshot written by [View.Snapshot] from r and returns
// the planner it describes. It reads exactly one snapshot stream and
// nothing after it (so several sections can share one reader; one that
// implements io.ByteReader, such as a *bufio.Reader, is read fastest) and
// validates everything it reads: a malformed snapshot returns an error
// wrapping compactkit.ErrMalformed (or ErrTruncated, ErrChecksum,
// ErrUnknownVersion, ErrTooLarge) and no planner.
//
// Restore checks what the planner relies on: counts, key order, the
// arrival order of each key's blocks and their arrival times, valid IDs,
// names and ranges, and references between sections. It does not check
// that block IDs, or arrival numbers, are distinct across keys, claims and
// the quarantine: that needs a per-block set, whose cost (a sort or a map
// of every block) would take most of the restore budget, and the checksum
// already refuses accidental damage. The index, restored from the same
// snapshot, owns the uniqueness of IDs. A crafted snapshot that repeats an
// arrival number cannot make the planner panic: at worst a block whose
// arrival is already queued is not returned to the queue (counted in
// [Counters].Duplicates) and a plan is refused as not admissible.
//
// Held tenants are not part of a snapshot: the restored planner holds no
// tenant until the state machine calls [Planner.SetHold] again.
func Restore(r io.Reader) (*Planner, error) {
	return codec.RestoreSection(r, "planner: restore", restore)
}

// restore reads the stream, one restorer method per section.
func restore(d *codec.Decoder, version byte) (*Planner, error) {
	if version != snapshotVersion && version != markedVersion {
		return nil, fmt.Errorf("snapshot version %d: %w", version, ck.ErrUnknownVersion)
	}
	rs := &restorer{d: d, marks: version == markedVersion}
	if err := d.Run(rs.header, rs.keys, rs.queued, rs.claims, rs.claimed, rs.quarantine); err != nil {
		return nil, err
	}
	return rs.p, nil
}

// restorer rebuilds a planner from a snapshot. The keys and claims
// sections give the number of blocks of each key and claim, which the
// sections of blocks that follow them fill.
type restorer struct {
	d *codec.Decoder
	// marks: the snapshot may hold marked blocks (version 2).
	marks       bool
	h           header
	cfg         Config
	p           *Planner
	keyBlocks   []keyCount
	claimBlocks []claimCount
}

type keyCount struct {
	k key
	n int64
}

type claimCount struct {
	c *claim
	n int64
}

func (rs *restorer) header() error {
	h := &rs.h
	if err := codec.Header(rs.d, h, &h.Component, componentName); err != nil {
		return err
	}
	cfg, err := h.Config.config()
	if err != nil {
		return codec.Malformed("configuration: %v", err)
	}
	counters, ok := countersFrom(h.Counters)
	switch {
	case !ok:
		return codec.Malformed("%d counters", len(h.Counters))
	case h.Clock < 0:
		return codec.Malformed("clock %d", h.Clock)
	case h.NextArrival == 0 || h.NextSeq == 0:
		return codec.Malformed("next arrival %d, next sequence %d", h.NextArrival, h.NextSeq)
	case h.HasCursor && ident.ValidateTenant(h.Cursor) != nil, !h.HasCursor && h.Cursor != "":
		return codec.Malformed("cursor %q", h.Cursor)
	case h.Keys > h.Blocks || h.Claims > h.ClaimedBlocks:
		return codec.Malformed("%d keys for %d blocks, %d claims for %d blocks", h.Keys, h.Blocks, h.Claims, h.ClaimedBlocks)
	}
	rs.cfg = cfg
	rs.p = newPlanner(newState(cfg))
	s := &rs.p.s
	s.clock, s.nextArrival, s.nextSeq = h.Clock, h.NextArrival, h.NextSeq
	s.cursor, s.hasCursor, s.counters = h.Cursor, h.HasCursor, counters
	return nil
}

// keys reads the keys and the number of blocks queued under each.
func (rs *restorer) keys() error {
	d := rs.d
	var f keysFrame
	err := codec.Frames(d, "keys", rs.h.Keys, &f, &f.N, func(n int) error {
		keys, counts, err := rs.keyCounts("keys", f.Tenants, f.Shards, f.Levels, f.Counts, n)
		if err != nil {
			return err
		}
		for i, k := range keys {
			if len(rs.keyBlocks) > 0 && rs.keyBlocks[len(rs.keyBlocks)-1].k.compare(k) >= 0 {
				return codec.Malformed("keys: %q/%d/%d out of order", k.tenant, k.shard, k.level)
			}
			if counts[i] < 1 {
				return codec.Malformed("keys: %q/%d/%d: %d blocks", k.tenant, k.shard, k.level, counts[i])
			}
			rs.keyBlocks = append(rs.keyBlocks, keyCount{k: k, n: counts[i]})
		}
		return nil
	})
	if err != nil {
		return err
	}
	return checkBlocks("keys", rs.keyBlocks, func(kc *keyCount) int64 { return kc.n }, rs.h.Blocks)
}

// keyCounts unpacks the keys and the numbers of blocks of a frame of n
// records of the section what, and checks the keys.
func (rs *restorer) keyCounts(what string, tenants codec.Strings, shards, levels, counts []byte, n int) ([]key, []int64, error) {
	keys := readKeys(rs.d, tenants, shards, levels, n)
	cs := codec.Ints[int64](rs.d, "counts", counts, n)
	if err := rs.d.Err(); err != nil {
		return nil, nil, err
	}
	for _, k := range keys {
		if err := checkKey(k, &rs.cfg); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", what, err)
		}
	}
	return keys, cs, nil
}

// checkBlocks checks that the numbers of blocks of a section's records,
// n of each, add up to want, the count of the header.
func checkBlocks[R any](what string, recs []R, n func(*R) int64, want uint64) error {
	var total uint64
	for i := range recs {
		total += uint64(n(&recs[i]))
		if total > want {
			return codec.Malformed("%s: more blocks than the %d counted", what, want)
		}
	}
	if total != want {
		return codec.Malformed("%s: %d blocks, %d counted", what, total, want)
	}
	return nil
}

// queued reads the blocks queued under each key and builds the keyBlocks.
func (rs *restorer) queued() error {
	s := &rs.p.s
	br := rs.blockReader("queued blocks", rs.h.Blocks)
	for _, kc := range rs.keyBlocks {
		q := &queue{k: kc.k}
		var it item
		for j := int64(0); j < kc.n; j++ {
			if err := br.next(&it); err != nil {
				return err
			}
			if j > 0 {
				if err := checkOrder(q.last(), &it, "queued blocks"); err != nil {
					return err
				}
			}
			q.push(&it)
		}
		q.head = formBatch(q, 0, rs.cfg.level(q.k.level))
		rs.p.setLookup(q)
		s.keys.Mut(s.vmu).ReplaceOrInsert(q)
		s.indexHead(q.k, &q.head, true)
	}
	return nil
}

// claims reads the claims and the number of blocks each holds.
func (rs *restorer) claims() error {
	d, h := rs.d, &rs.h
	var f claimsFrame
	err := codec.Frames(d, "claims", h.Claims, &f, &f.N, func(n int) error {
		names := d.Strings("names", f.Names, n)
		keys, counts, err := rs.keyCounts("claims", f.Tenants, f.Shards, f.Levels, f.Counts, n)
		if err != nil {
			return err
		}
		for i, k := range keys {
			if err := ident.ValidateJobName(names[i]); err != nil {
				return codec.Malformed("claims: %v", err)
			}
			if seq, ok := nameSeq(names[i]); !ok || seq >= h.NextSeq {
				return codec.Malformed("claims: job %s: sequence number not below %d", names[i], h.NextSeq)
			}
			if prefix := appendKeyPrefix(nil, k); !strings.HasPrefix(names[i], string(prefix)) {
				return codec.Malformed("claims: job %s: not a name of tenant %q, shard %d, level %d", names[i], k.tenant, k.shard, k.level)
			}
			if len(rs.claimBlocks) > 0 && rs.claimBlocks[len(rs.claimBlocks)-1].c.name.String() >= names[i] {
				return codec.Malformed("claims: job %s out of order", names[i])
			}
			if counts[i] < 1 || counts[i] > math.MaxInt32 {
				return codec.Malformed("claims: job %s: %d sources", names[i], counts[i])
			}
			rs.claimBlocks = append(rs.claimBlocks, claimCount{c: &claim{name: namekey.Of(names[i]), k: k}, n: counts[i]})
		}
		return nil
	})
	if err != nil {
		return err
	}
	return checkBlocks("claims", rs.claimBlocks, func(cc *claimCount) int64 { return cc.n }, h.ClaimedBlocks)
}

// claimed reads the blocks of each claim.
func (rs *restorer) claimed() error {
	s := &rs.p.s
	br := rs.blockReader("claimed blocks", rs.h.ClaimedBlocks)
	for _, cc := range rs.claimBlocks {
		c := cc.c
		c.items = make([]item, 0, min(cc.n, codec.FrameRecords))
		var it item
		for j := int64(0); j < cc.n; j++ {
			if err := br.next(&it); err != nil {
				return err
			}
			if j > 0 {
				if err := checkOrder(&c.items[j-1], &it, "claimed blocks"); err != nil {
					return err
				}
			}
			c.items = append(c.items, it)
		}
		s.claims.Mut(s.vmu).ReplaceOrInsert(c)
	}
	return nil
}

// quarantine reads the quarantined blocks, each with its key, job, reason
// and time.
func (rs *restorer) quarantine() error {
	d, s, clock := rs.d, &rs.p.s, rs.h.Clock
	var last string
	marked := false
	var f quarFrame
	err := codec.Frames(d, "quarantine", rs.h.Quarantined, &f, &f.Blocks.N, func(n int) error {
		bl := blockReader{d: d, what: "quarantine", clock: clock, nextArr: rs.h.NextArrival}
		bl.load(&f.Blocks, n)
		keys := readKeys(d, f.Tenants, f.Shards, f.Levels, n)
		jobs := d.Strings("jobs", f.Jobs, n)
		reasons := d.Strings("reasons", f.Reasons, n)
		since := codec.Ints[int64](d, "times", f.Since, n)
		if err := d.Err(); err != nil {
			return err
		}
		for i := range n {
			var it item
			if err := bl.item(i, &it); err != nil {
				return err
			}
			k := keys[i]
			if err := checkKey(k, &rs.cfg); err != nil {
				return fmt.Errorf("quarantine: %w", err)
			}
			if s.quar.Len() > 0 && it.id <= last {
				return codec.Malformed("quarantine: block %s out of order", it.id)
			}
			last = it.id
			if jobs[i] == "" && rs.marks {
				marked = true // an operator marked it
			} else if err := ident.ValidateJobName(jobs[i]); err != nil {
				return codec.Malformed("quarantine: block %s: %v", it.id, err)
			}
			if len(reasons[i]) > ident.MaxReasonLen || !utf8.ValidString(reasons[i]) {
				return codec.Malformed("quarantine: block %s: reason of %d bytes", it.id, len(reasons[i]))
			}
			if since[i] < 0 || since[i] > clock {
				return codec.Malformed("quarantine: block %s: time %d outside [0, %d]", it.id, since[i], clock)
			}
			s.quar.Mut(s.vmu).ReplaceOrInsert(&quarEnt{it: it, k: k, job: jobs[i], reason: reasons[i], since: since[i]})
		}
		return nil
	})
	if err == nil && rs.marks && !marked {
		// Version 2 is written only with a marked block: one without is
		// not the bytes this state snapshots to.
		return codec.Malformed("version %d without a marked block", markedVersion)
	}
	return err
}

// blockReader hands out the blocks of a section one at a time, reading
// its frames as it goes, and checks each.
type blockReader struct {
	d                          *codec.Decoder
	what                       string
	ids                        []string
	arrivals                   []uint64
	times, minTs, maxTs, sizes []int64
	i                          int // next block of the frame
	clock                      int64
	nextArr                    uint64
}

// blockReader starts a section of n blocks.
func (rs *restorer) blockReader(what string, n uint64) *blockReader {
	rs.d.Records(what, n)
	return &blockReader{d: rs.d, what: what, clock: rs.h.Clock, nextArr: rs.h.NextArrival}
}

// next sets it to the next block of the section.
func (b *blockReader) next(it *item) error {
	if b.i == len(b.ids) {
		if !b.d.More() {
			if err := b.d.Err(); err != nil {
				return err
			}
			return codec.Malformed("%s: more blocks than counted", b.what)
		}
		var f blocksFrame
		b.load(&f, b.d.Frame(&f, &f.N))
		if err := b.d.Err(); err != nil {
			return err
		}
		b.i = 0
	}
	b.i++
	return b.item(b.i-1, it)
}

// load unpacks the columns of a frame of n blocks.
func (b *blockReader) load(f *blocksFrame, n int) {
	d := b.d
	b.ids = d.Strings("IDs", f.IDs, n)
	b.arrivals = codec.Ints[uint64](d, "arrivals", f.Arrivals, n)
	b.times = codec.Ints[int64](d, "arrival times", f.Times, n)
	b.minTs = codec.Ints[int64](d, "min times", f.MinTimes, n)
	b.maxTs = codec.Ints[int64](d, "max times", f.MaxTimes, n)
	b.sizes = codec.Ints[int64](d, "sizes", f.Sizes, n)
}

// item sets it to block i of the loaded frame, checked.
func (b *blockReader) item(i int, it *item) error {
	*it = item{id: b.ids[i], arrival: b.arrivals[i], time: b.times[i], minT: b.minTs[i], maxT: b.maxTs[i], size: b.sizes[i]}
	if err := checkItem(it, b.clock, b.nextArr); err != nil {
		return fmt.Errorf("%s: %w", b.what, err)
	}
	return nil
}

// checkItem validates a restored block.
func checkItem(it *item, clock int64, nextArr uint64) error {
	if err := ident.ValidateID(it.id); err != nil {
		return err
	}
	switch {
	case it.arrival == 0 || it.arrival >= nextArr:
		return codec.Malformed("block %s: arrival %d outside [1, %d)", it.id, it.arrival, nextArr)
	case it.time < 0 || it.time > clock:
		return codec.Malformed("block %s: arrival time %d outside [0, %d]", it.id, it.time, clock)
	case it.minT > it.maxT:
		return codec.Malformed("block %s: min time %d after max time %d", it.id, it.minT, it.maxT)
	case it.size < 0:
		return codec.Malformed("block %s: size %d", it.id, it.size)
	}
	return nil
}

// checkOrder validates that it follows prev in a key's arrival order.
func checkOrder(prev, it *item, what string) error {
	if it.arrival <= prev.arrival || it.time < prev.time {
		return codec.Malformed("%s: block %s (arrival %d at %d) after block %s (arrival %d at %d)", what, it.id, it.arrival, it.time, prev.id, prev.arrival, prev.time)
	}
	return nil
}

// readKeys unpacks the key columns of a frame of n records.
func readKeys(d *codec.Decoder, tenants codec.Strings, shards, levels []byte, n int) []key {
	ts := d.Strings("tenants", tenants, n)
	ss := codec.Ints[uint32](d, "shards", shards, n)
	ls := codec.Ints[uint32](d, "levels", levels, n)
	if d.Err() != nil {
		return nil
	}
	keys := make([]key, n)
	for i := range keys {
		keys[i] = key{tenant: ts[i], shard: ss[i], level: ls[i]}
	}
	return keys
}

// checkKey validates a restored key.
func checkKey(k key, cfg *Config) error {
	if err := ident.ValidateTenant(k.tenant); err != nil {
		return codec.Malformed("%v", err)
	}
	if k.level >= cfg.FinalLevel {
		return codec.Malformed("key %q/%d/%d: level at or beyond the final level %d", k.tenant, k.shard, k.level, cfg.FinalLevel)
	}
	return nil
}
