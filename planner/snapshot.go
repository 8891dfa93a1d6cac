package planner

import (
	"errors"
	"fmt"
	"io"
	"math"
	"time"
	"unicode/utf8"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/internal/codec"
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
// Every section is columnar (codec.PackStrings, codec.PackInts). The
// snapshot is a function of the logical state only: no chunk layout, no
// index, no map order.
const (
	componentName        = "planner"
	snapshotVersion byte = 1
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
	N       int64
	Tenants codec.Strings
	Shards  []byte
	Levels  []byte
	Counts  []byte
}

type blocksFrame struct {
	_        struct{} `cbor:",toarray"`
	N        int64
	IDs      codec.Strings
	Arrivals []byte
	Times    []byte
	MinTimes []byte
	MaxTimes []byte
	Sizes    []byte
}

type claimsFrame struct {
	_       struct{} `cbor:",toarray"`
	N       int64
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
	if r.TombstonesPerJob < 0 || r.TombstonesPerJob > MaxTombstonesPerJob || len(r.Levels) > MaxLevels {
		return Config{}, fmt.Errorf("configuration out of range: %w", ErrConfig)
	}
	c := Config{
		FinalLevel:        r.FinalLevel,
		TombstonesPerJob:  int(r.TombstonesPerJob),
		TombstoneMinLevel: r.TombstoneMinLevel,
		TombstoneMaxLevel: r.TombstoneMaxLevel,
	}
	for i, l := range r.Levels {
		if l.MaxBlocks < 0 || l.MaxBlocks > MaxBlocksPerJob {
			return Config{}, fmt.Errorf("level %d: max blocks %d: %w", i, l.MaxBlocks, ErrConfig)
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
		N: int64(len(b.ids)), IDs: codec.PackStrings(b.ids), Arrivals: codec.PackInts(b.arrivals),
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

// Snapshot writes the planner's state to w (see the format above). Equal
// states write identical bytes.
func (p *Planner) Snapshot(w io.Writer) error { return p.s.snapshot(w) }

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
	sw, err := codec.NewWriter(w, codec.Snapshot, codec.KindSection, snapshotVersion)
	if err != nil {
		return err
	}
	if err := sw.Encode(&h); err != nil {
		return err
	}

	// Keys.
	var (
		tenants        []string
		shards, levels []uint32
		counts         []int64
	)
	flushKeys := func() error {
		if len(tenants) == 0 {
			return nil
		}
		err := sw.Encode(&keysFrame{N: int64(len(tenants)), Tenants: codec.PackStrings(tenants),
			Shards: codec.PackInts(shards), Levels: codec.PackInts(levels), Counts: codec.PackInts(counts)})
		tenants, shards, levels, counts = tenants[:0], shards[:0], levels[:0], counts[:0]
		return err
	}
	s.keys.Ascend(func(q *queue) bool {
		tenants = append(tenants, q.k.tenant)
		shards = append(shards, q.k.shard)
		levels = append(levels, q.k.level)
		counts = append(counts, int64(q.n))
		if len(tenants) == codec.FrameRecords {
			err = flushKeys()
		}
		return err == nil
	})
	if err == nil {
		err = flushKeys()
	}
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
	var names []string
	flushClaims := func() error {
		if len(names) == 0 {
			return nil
		}
		err := sw.Encode(&claimsFrame{N: int64(len(names)), Names: codec.PackStrings(names), Tenants: codec.PackStrings(tenants),
			Shards: codec.PackInts(shards), Levels: codec.PackInts(levels), Counts: codec.PackInts(counts)})
		names, tenants, shards, levels, counts = names[:0], tenants[:0], shards[:0], levels[:0], counts[:0]
		return err
	}
	s.claims.Ascend(func(c *claim) bool {
		names = append(names, c.name)
		tenants = append(tenants, c.k.tenant)
		shards = append(shards, c.k.shard)
		levels = append(levels, c.k.level)
		counts = append(counts, int64(len(c.items)))
		if len(names) == codec.FrameRecords {
			err = flushClaims()
		}
		return err == nil
	})
	if err == nil {
		err = flushClaims()
	}
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
	var (
		cols          blockCols
		jobs, reasons []string
		since         []int64
	)
	flushQuar := func() error {
		if len(cols.ids) == 0 {
			return nil
		}
		err := sw.Encode(&quarFrame{Blocks: cols.frame(), Tenants: codec.PackStrings(tenants), Shards: codec.PackInts(shards),
			Levels: codec.PackInts(levels), Jobs: codec.PackStrings(jobs), Reasons: codec.PackStrings(reasons), Since: codec.PackInts(since)})
		cols.reset()
		tenants, shards, levels, jobs, reasons, since = tenants[:0], shards[:0], levels[:0], jobs[:0], reasons[:0], since[:0]
		return err
	}
	s.quar.Ascend(func(qe *quarEnt) bool {
		cols.add(&qe.it)
		tenants = append(tenants, qe.k.tenant)
		shards = append(shards, qe.k.shard)
		levels = append(levels, qe.k.level)
		jobs = append(jobs, qe.job)
		reasons = append(reasons, qe.reason)
		since = append(since, qe.since)
		if len(cols.ids) == codec.FrameRecords {
			err = flushQuar()
		}
		return err == nil
	})
	if err == nil {
		err = flushQuar()
	}
	if err != nil {
		return err
	}
	return sw.Close()
}

// Restore reads a snapshot written by [Planner.Snapshot] from r and returns
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
func Restore(r io.Reader) (*Planner, error) {
	p, err := restore(r)
	if err != nil {
		return nil, fmt.Errorf("planner: restore: %w", err)
	}
	return p, nil
}

func malformed(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, ck.ErrMalformed)...)
}

// frameReader reads the frames of one section.
type frameReader struct {
	rd *codec.Reader
}

func (f frameReader) next(v any, what string) error {
	err := f.rd.Decode(v)
	if errors.Is(err, io.EOF) {
		return malformed("%s: stream ended early", what)
	}
	return err
}

// blockReader reads block frames one at a time.
type blockReader struct {
	f       frameReader
	left    uint64 // blocks of the section not read yet
	ids     []string
	cols    [5][]int64
	arrs    []uint64
	i       int
	what    string
	clock   int64
	nextArr uint64
}

// next returns the next block of the section.
func (b *blockReader) next() (item, error) {
	if b.i == len(b.ids) {
		if b.left == 0 {
			return item{}, malformed("%s: more blocks than counted", b.what)
		}
		var fr blocksFrame
		if err := b.f.next(&fr, b.what); err != nil {
			return item{}, err
		}
		if err := b.load(&fr); err != nil {
			return item{}, err
		}
	}
	it := item{id: b.ids[b.i], arrival: b.arrs[b.i], time: b.cols[0][b.i], minT: b.cols[1][b.i], maxT: b.cols[2][b.i], size: b.cols[3][b.i]}
	b.i++
	if err := checkItem(&it, b.clock, b.nextArr); err != nil {
		return item{}, fmt.Errorf("%s: %w", b.what, err)
	}
	return it, nil
}

func (b *blockReader) load(fr *blocksFrame) error {
	if fr.N <= 0 || fr.N > codec.FrameRecords || uint64(fr.N) > b.left {
		return malformed("%s: frame of %d blocks, %d left", b.what, fr.N, b.left)
	}
	n := int(fr.N)
	var err error
	if b.ids, err = fr.IDs.Unpack(n); err != nil {
		return fmt.Errorf("%s: IDs: %w", b.what, err)
	}
	if b.arrs, err = codec.UnpackInts[uint64](fr.Arrivals, n); err != nil {
		return fmt.Errorf("%s: arrivals: %w", b.what, err)
	}
	for i, col := range [][]byte{fr.Times, fr.MinTimes, fr.MaxTimes, fr.Sizes} {
		if b.cols[i], err = codec.UnpackInts[int64](col, n); err != nil {
			return fmt.Errorf("%s: column %d: %w", b.what, i, err)
		}
	}
	b.left -= uint64(n)
	b.i = 0
	return nil
}

// checkItem validates a restored block.
func checkItem(it *item, clock int64, nextArr uint64) error {
	if err := checkID(it.id); err != nil {
		return err
	}
	switch {
	case it.arrival == 0 || it.arrival >= nextArr:
		return malformed("block %s: arrival %d outside [1, %d)", it.id, it.arrival, nextArr)
	case it.time < 0 || it.time > clock:
		return malformed("block %s: arrival time %d outside [0, %d]", it.id, it.time, clock)
	case it.minT > it.maxT:
		return malformed("block %s: min time %d after max time %d", it.id, it.minT, it.maxT)
	case it.size < 0:
		return malformed("block %s: size %d", it.id, it.size)
	}
	return nil
}

// checkOrder validates that it follows prev in a key's arrival order.
func checkOrder(prev, it *item, what string) error {
	if it.arrival <= prev.arrival || it.time < prev.time {
		return malformed("%s: block %s (arrival %d at %d) after block %s (arrival %d at %d)", what, it.id, it.arrival, it.time, prev.id, prev.arrival, prev.time)
	}
	return nil
}

// checkKey validates a restored key.
func checkKey(k key, cfg *Config) error {
	if err := checkName(k.tenant); err != nil {
		return malformed("tenant: %v", err)
	}
	if k.level >= cfg.FinalLevel {
		return malformed("key %q/%d/%d: level at or beyond the final level %d", k.tenant, k.shard, k.level, cfg.FinalLevel)
	}
	return nil
}

func restore(r io.Reader) (*Planner, error) {
	rd, err := codec.NewReader(r, codec.Snapshot, codec.KindSection)
	if err != nil {
		return nil, err
	}
	if rd.Version() != snapshotVersion {
		return nil, fmt.Errorf("snapshot version %d: %w", rd.Version(), ck.ErrUnknownVersion)
	}
	f := frameReader{rd: rd}
	var h header
	if err := f.next(&h, "header"); err != nil {
		return nil, err
	}
	if h.Component != componentName {
		return nil, malformed("component %q, want %q", h.Component, componentName)
	}
	cfg, err := h.Config.config()
	if err != nil {
		return nil, malformed("configuration: %v", err)
	}
	counters, ok := countersFrom(h.Counters)
	switch {
	case !ok:
		return nil, malformed("%d counters", len(h.Counters))
	case h.Clock < 0:
		return nil, malformed("clock %d", h.Clock)
	case h.NextArrival == 0 || h.NextSeq == 0:
		return nil, malformed("next arrival %d, next sequence %d", h.NextArrival, h.NextSeq)
	case h.HasCursor && checkName(h.Cursor) != nil, !h.HasCursor && h.Cursor != "":
		return nil, malformed("cursor %q", h.Cursor)
	case h.Keys > h.Blocks || h.Claims > h.ClaimedBlocks:
		return nil, malformed("%d keys for %d blocks, %d claims for %d blocks", h.Keys, h.Blocks, h.Claims, h.ClaimedBlocks)
	}
	p := newPlanner(newState(cfg))
	s := &p.s
	s.clock, s.nextArrival, s.nextSeq = h.Clock, h.NextArrival, h.NextSeq
	s.cursor, s.hasCursor, s.counters = h.Cursor, h.HasCursor, counters

	// Keys.
	type keyCount struct {
		k key
		n int64
	}
	var keys []keyCount
	for left := h.Keys; left > 0; {
		var fr keysFrame
		if err := f.next(&fr, "keys"); err != nil {
			return nil, err
		}
		if fr.N <= 0 || fr.N > codec.FrameRecords || uint64(fr.N) > left {
			return nil, malformed("keys: frame of %d keys, %d left", fr.N, left)
		}
		n := int(fr.N)
		tenants, err := fr.Tenants.Unpack(n)
		if err != nil {
			return nil, fmt.Errorf("keys: tenants: %w", err)
		}
		shards, err := codec.UnpackInts[uint32](fr.Shards, n)
		if err != nil {
			return nil, fmt.Errorf("keys: shards: %w", err)
		}
		levels, err := codec.UnpackInts[uint32](fr.Levels, n)
		if err != nil {
			return nil, fmt.Errorf("keys: levels: %w", err)
		}
		counts, err := codec.UnpackInts[int64](fr.Counts, n)
		if err != nil {
			return nil, fmt.Errorf("keys: counts: %w", err)
		}
		for i := range n {
			k := key{tenant: tenants[i], shard: shards[i], level: levels[i]}
			if err := checkKey(k, &cfg); err != nil {
				return nil, fmt.Errorf("keys: %w", err)
			}
			if len(keys) > 0 && keys[len(keys)-1].k.compare(k) >= 0 {
				return nil, malformed("keys: %q/%d/%d out of order", k.tenant, k.shard, k.level)
			}
			if counts[i] < 1 {
				return nil, malformed("keys: %q/%d/%d: %d blocks", k.tenant, k.shard, k.level, counts[i])
			}
			keys = append(keys, keyCount{k: k, n: counts[i]})
		}
		left -= uint64(n)
	}
	var total uint64
	for _, kc := range keys {
		total += uint64(kc.n)
		if total > h.Blocks {
			return nil, malformed("keys: more blocks than the %d counted", h.Blocks)
		}
	}
	if total != h.Blocks {
		return nil, malformed("keys: %d blocks, %d counted", total, h.Blocks)
	}

	// Queued blocks.
	br := blockReader{f: f, left: h.Blocks, what: "queued blocks", clock: h.Clock, nextArr: h.NextArrival}
	for _, kc := range keys {
		q := &queue{k: kc.k}
		var prev item
		for j := int64(0); j < kc.n; j++ {
			it, err := br.next()
			if err != nil {
				return nil, err
			}
			if j > 0 {
				if err := checkOrder(&prev, &it, "queued blocks"); err != nil {
					return nil, err
				}
			}
			prev = it
			q.push(&it)
		}
		q.head = formBatch(q, 0, cfg.level(q.k.level))
		p.setLookup(q)
		s.keys.ReplaceOrInsert(q)
		s.indexHead(q.k, &q.head, true)
	}

	// Claims.
	type claimCount struct {
		c *claim
		n int64
	}
	var claims []claimCount
	for left := h.Claims; left > 0; {
		var fr claimsFrame
		if err := f.next(&fr, "claims"); err != nil {
			return nil, err
		}
		if fr.N <= 0 || fr.N > codec.FrameRecords || uint64(fr.N) > left {
			return nil, malformed("claims: frame of %d claims, %d left", fr.N, left)
		}
		n := int(fr.N)
		names, err := fr.Names.Unpack(n)
		if err != nil {
			return nil, fmt.Errorf("claims: names: %w", err)
		}
		tenants, err := fr.Tenants.Unpack(n)
		if err != nil {
			return nil, fmt.Errorf("claims: tenants: %w", err)
		}
		shards, err := codec.UnpackInts[uint32](fr.Shards, n)
		if err != nil {
			return nil, fmt.Errorf("claims: shards: %w", err)
		}
		levels, err := codec.UnpackInts[uint32](fr.Levels, n)
		if err != nil {
			return nil, fmt.Errorf("claims: levels: %w", err)
		}
		counts, err := codec.UnpackInts[int64](fr.Counts, n)
		if err != nil {
			return nil, fmt.Errorf("claims: counts: %w", err)
		}
		for i := range n {
			k := key{tenant: tenants[i], shard: shards[i], level: levels[i]}
			if err := checkKey(k, &cfg); err != nil {
				return nil, fmt.Errorf("claims: %w", err)
			}
			if err := ck.ValidateJobName(names[i]); err != nil {
				return nil, malformed("claims: %v", err)
			}
			if seq, ok := nameSeq(names[i]); !ok || seq >= h.NextSeq {
				return nil, malformed("claims: job %s: sequence number not below %d", names[i], h.NextSeq)
			}
			if len(claims) > 0 && claims[len(claims)-1].c.name >= names[i] {
				return nil, malformed("claims: job %s out of order", names[i])
			}
			if counts[i] < 1 || counts[i] > math.MaxInt32 {
				return nil, malformed("claims: job %s: %d sources", names[i], counts[i])
			}
			claims = append(claims, claimCount{c: &claim{name: names[i], k: k}, n: counts[i]})
		}
		left -= uint64(n)
	}
	total = 0
	for _, cc := range claims {
		total += uint64(cc.n)
		if total > h.ClaimedBlocks {
			return nil, malformed("claims: more blocks than the %d counted", h.ClaimedBlocks)
		}
	}
	if total != h.ClaimedBlocks {
		return nil, malformed("claims: %d blocks, %d counted", total, h.ClaimedBlocks)
	}
	br = blockReader{f: f, left: h.ClaimedBlocks, what: "claimed blocks", clock: h.Clock, nextArr: h.NextArrival}
	for _, cc := range claims {
		c := cc.c
		c.items = make([]item, 0, min(cc.n, codec.FrameRecords))
		for j := int64(0); j < cc.n; j++ {
			it, err := br.next()
			if err != nil {
				return nil, err
			}
			if j > 0 {
				if err := checkOrder(&c.items[j-1], &it, "claimed blocks"); err != nil {
					return nil, err
				}
			}
			c.items = append(c.items, it)
		}
		s.claims.ReplaceOrInsert(c)
		s.claimKeys.ReplaceOrInsert(claimRef{k: c.k, name: c.name})
	}

	// Quarantine.
	var last string
	for left := h.Quarantined; left > 0; {
		var fr quarFrame
		if err := f.next(&fr, "quarantine"); err != nil {
			return nil, err
		}
		if fr.Blocks.N <= 0 || uint64(fr.Blocks.N) > left {
			return nil, malformed("quarantine: frame of %d blocks, %d left", fr.Blocks.N, left)
		}
		n := int(fr.Blocks.N)
		bl := blockReader{left: uint64(n), what: "quarantine", clock: h.Clock, nextArr: h.NextArrival}
		if err := bl.load(&fr.Blocks); err != nil {
			return nil, err
		}
		tenants, err := fr.Tenants.Unpack(n)
		if err != nil {
			return nil, fmt.Errorf("quarantine: tenants: %w", err)
		}
		shards, err := codec.UnpackInts[uint32](fr.Shards, n)
		if err != nil {
			return nil, fmt.Errorf("quarantine: shards: %w", err)
		}
		levels, err := codec.UnpackInts[uint32](fr.Levels, n)
		if err != nil {
			return nil, fmt.Errorf("quarantine: levels: %w", err)
		}
		jobs, err := fr.Jobs.Unpack(n)
		if err != nil {
			return nil, fmt.Errorf("quarantine: jobs: %w", err)
		}
		reasons, err := fr.Reasons.Unpack(n)
		if err != nil {
			return nil, fmt.Errorf("quarantine: reasons: %w", err)
		}
		since, err := codec.UnpackInts[int64](fr.Since, n)
		if err != nil {
			return nil, fmt.Errorf("quarantine: times: %w", err)
		}
		for i := range n {
			it, err := bl.next()
			if err != nil {
				return nil, err
			}
			k := key{tenant: tenants[i], shard: shards[i], level: levels[i]}
			if err := checkKey(k, &cfg); err != nil {
				return nil, fmt.Errorf("quarantine: %w", err)
			}
			if s.quar.Len() > 0 && it.id <= last {
				return nil, malformed("quarantine: block %s out of order", it.id)
			}
			last = it.id
			if err := ck.ValidateJobName(jobs[i]); err != nil {
				return nil, malformed("quarantine: block %s: %v", it.id, err)
			}
			if len(reasons[i]) > MaxReasonLen || !utf8.ValidString(reasons[i]) {
				return nil, malformed("quarantine: block %s: reason of %d bytes", it.id, len(reasons[i]))
			}
			if since[i] < 0 || since[i] > h.Clock {
				return nil, malformed("quarantine: block %s: time %d outside [0, %d]", it.id, since[i], h.Clock)
			}
			s.quar.ReplaceOrInsert(&quarEnt{it: it, k: k, job: jobs[i], reason: reasons[i], since: since[i]})
		}
		left -= uint64(n)
	}
	if err := rd.Finish(); err != nil {
		return nil, err
	}
	return p, nil
}
