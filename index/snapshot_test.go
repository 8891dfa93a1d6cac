package index

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/internal/codec"
	"github.com/compactkit/compactkit/internal/ident"
	"github.com/compactkit/compactkit/internal/snaptest"
)

var update = flag.Bool("update", false, "rewrite the golden snapshot and the fuzz seed corpus")

func snap(tb testing.TB, x *Index) []byte {
	tb.Helper()
	var buf bytes.Buffer
	require.NoError(tb, x.View().Snapshot(&buf))
	return buf.Bytes()
}

func mustRestore(tb testing.TB, data []byte) *Index {
	tb.Helper()
	x, err := Restore(bytes.NewReader(data))
	require.NoError(tb, err)
	return x
}

func gblock(id, tenant string, shard, level uint32, lo, hi int64) *ck.BlockMeta {
	return &ck.BlockMeta{
		ID: id, Tenant: tenant, Shard: shard, Level: level, MinTime: lo, MaxTime: hi, Size: 1000 + hi - lo,
		Datasets: []ck.DatasetMeta{
			{Name: "svc-a", Size: 600, Records: 60, MinTime: lo, MaxTime: hi},
			{Name: "svc-b", Size: 400, Records: 40, MinTime: lo, MaxTime: lo},
		},
	}
}

// goldenIndex builds an index with a bit of everything: single- and
// multi-tenant blocks of several levels and shards, a block without
// datasets, applied and refused replacements, tombstones unattached,
// attached and confirmed, an orphan, deletion records, a watermark and a
// non-default configuration. Every step is fixed, so the state is too.
func goldenIndex(tb testing.TB) *Index {
	tb.Helper()
	x, err := New(Config{DedupHorizon: 2 * time.Hour, CleanupDelay: 10 * time.Minute, CompletedRetention: 3 * time.Hour, ReaderTimeout: 30 * time.Minute})
	require.NoError(tb, err)
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	min := int64(time.Minute)
	e := uint64(0)
	entry := func() ck.Entry { e++; return ck.Entry{Index: e, Term: 1, Time: t0} }
	add := func(now int64, b *ck.BlockMeta) { require.NoError(tb, x.Add(entry(), now, b)) }

	for i := range 8 {
		tenant := []string{"acme", "beta"}[i%2]
		add(t0+int64(i)*min, gblock(fmt.Sprintf("01JGZ000000000000000000%03d", i), tenant, uint32(i%3), 0, t0+int64(i)*min, t0+int64(i+1)*min-1))
	}
	add(t0+8*min, &ck.BlockMeta{ID: "01JGZ000000000000000000S08", MinTime: t0, MaxTime: t0 + 8*min, Size: 77, Datasets: []ck.DatasetMeta{
		{Tenant: "acme", Name: "svc-a", Size: 40, Records: 4, MinTime: t0, MaxTime: t0 + min},
		{Tenant: "gamma", Name: "svc-c", Size: 37, Records: 3, MinTime: t0 + min, MaxTime: t0 + 8*min},
	}})
	add(t0+8*min, &ck.BlockMeta{ID: "01JGZ000000000000000000N09", Tenant: "delta", Level: 2, MinTime: -5, MaxTime: 5})

	// An applied replacement: acme's blocks 0 and 2.
	out := *gblock(ck.OutputID("acme.s0.l0.1.0123456789abcdef", 11, 0), "acme", 0, 1, t0, t0+3*min-1)
	r := x.Replace(entry(), t0+10*min, "acme.s0.l0.1.0123456789abcdef", 11, []string{"01JGZ000000000000000000000", "01JGZ000000000000000000002"}, []ck.BlockMeta{out})
	require.True(tb, r.Applied, r.Detail)
	// Retention drops beta's block 1, then a completion claiming it is refused.
	require.Len(tb, x.DropBefore(entry(), t0+11*min, "beta", false, t0+2*min), 1)
	r = x.Replace(entry(), t0+12*min, "beta.s1.l0.2.fedcba9876543210", 12, []string{"01JGZ000000000000000000001", "01JGZ000000000000000000003"},
		[]ck.BlockMeta{*gblock(ck.OutputID("beta.s1.l0.2.fedcba9876543210", 12, 0), "beta", 1, 1, t0, t0+4*min)})
	require.Equal(tb, refusedSourcesMissing, r.Reason)
	require.NoError(tb, x.AddOrphan(t0+13*min, ck.AttemptPrefix("acme.s1.l0.3.00000000000000aa", 9)))

	// Tombstones: one job confirms, one holds.
	got := ReleaseTo(x, t0+25*min, "cleanup.1", 1)
	require.Len(tb, got, 1)
	require.Equal(tb, 1, x.Confirm(t0+26*min, "cleanup.1"))
	require.Len(tb, ReleaseTo(x, t0+26*min, "cleanup.2", 1), 1)
	x.SetWatermark(t0+27*min, t0+20*min)
	add(t0+28*min, gblock("01JGZ000000000000000000010", "acme", 2, 0, t0+27*min, t0+28*min))
	return x
}

// goldenRecordsIndex is goldenIndex after the index starts making records
// (cluster version 6) mid-cleanup: two replacements make records, and a
// job holds tombstones made before records and a record side by side,
// while the other record waits unattached.
func goldenRecordsIndex(tb testing.TB) *Index {
	tb.Helper()
	x := goldenIndex(tb)
	x.SetRecords(true)
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	min := int64(time.Minute)
	for i, c := range []struct {
		job, tenant string
		sources     []string
	}{
		{"acme.s0.l0.4.0123456789abcdee", "acme", []string{"01JGZ000000000000000000006", "01JGZ000000000000000000004"}},
		{"beta.s1.l0.5.0123456789abcded", "beta", []string{"01JGZ000000000000000000005", "01JGZ000000000000000000007"}},
	} {
		out := *gblock(ck.OutputID(c.job, 21, 0), c.tenant, 0, 1, t0+4*min, t0+8*min-1)
		r := x.Replace(ck.Entry{Index: uint64(20 + i), Term: 2, Time: t0}, t0+int64(30+i)*min, c.job, 21, c.sources, []ck.BlockMeta{out})
		require.True(tb, r.Applied, r.Detail)
	}
	// Three tombstones made before records, then the first record whole.
	require.Len(tb, ReleaseTo(x, t0+61*min, "cleanup.3", 4), 5)
	return x
}

// TestSnapshotGolden pins the snapshot formats: each golden state must
// snapshot to the committed bytes, and the committed bytes must restore,
// forever (a later release bumps snapshotVersion and adds a new golden
// file, keeping these readable). Version 1 is written while no record is
// pending, version 2 with records.
func TestSnapshotGolden(t *testing.T) {
	for _, c := range []struct {
		file  string
		build func(testing.TB) *Index
		want  Stats // the counts checked
	}{
		{"index_v1.bin", goldenIndex, Stats{Blocks: 9, Orphans: 2, TombstonesAttached: 1, TombstonesReleasable: 3, DeletionRecords: 1, Results: 2, ReplacementsApplied: 1, ReplacementsRefused: 1}},
		{"index_v2.bin", goldenRecordsIndex, Stats{Blocks: 7, Orphans: 2, TombstonesAttached: 6, TombstonesReleasable: 2, DeletionRecords: 1, Results: 4, ReplacementsApplied: 3, ReplacementsRefused: 1}},
	} {
		t.Run(c.file, func(t *testing.T) {
			path := filepath.Join("testdata", "golden", c.file)
			got := snap(t, c.build(t))
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
				require.NoError(t, os.WriteFile(path, got, 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, want, got, "the snapshot of the golden state changed (run with -update if intended)")

			x := mustRestore(t, want)
			require.Equal(t, want, snap(t, x))
			require.Equal(t, c.build(t).Stats(), x.Stats())
			st := x.Stats()
			require.Equal(t, c.want.Blocks, st.Blocks)
			require.Equal(t, c.want.Orphans, st.Orphans)
			require.Equal(t, c.want.TombstonesAttached, st.TombstonesAttached)
			require.Equal(t, c.want.TombstonesPending, st.TombstonesPending)
			require.Equal(t, c.want.TombstonesReleasable, st.TombstonesReleasable)
			require.Equal(t, c.want.DeletionRecords, st.DeletionRecords)
			require.Equal(t, c.want.Results, st.Results)
			require.Equal(t, c.want.ReplacementsApplied, st.ReplacementsApplied)
			require.Equal(t, c.want.ReplacementsRefused, st.ReplacementsRefused)
		})
	}
}

// TestSnapshotHistoryIndependent: the same logical state reached by
// different histories (arrival order, interning order, views opened,
// names of removed blocks) writes identical bytes.
func TestSnapshotHistoryIndependent(t *testing.T) {
	blocks := []*ck.BlockMeta{
		gblock("a1", "acme", 0, 0, 0, 10), gblock("b1", "beta", 1, 0, 5, 15),
		gblock("c1", "acme", 1, 1, 20, 30), gblock("d1", "gamma", 0, 0, 0, 1),
	}
	build := func(order []int, views bool, zetaFirst bool) []byte {
		x, err := New(DefaultConfig())
		require.NoError(t, err)
		zeta := func() {
			// A block of a tenant that is gone by the end: its names stay
			// interned, but must not show.
			require.NoError(t, x.Add(ck.Entry{Index: 1}, 0, gblock("zz", "zeta", 0, 0, 0, 1)))
			require.True(t, x.Replace(ck.Entry{Index: 2}, 0, "j", 1, []string{"zz"}, []ck.BlockMeta{*gblock("j/1/0", "zeta", 0, 1, 0, 1)}).Applied)
			x.DropBefore(ck.Entry{Index: 20}, 0, "zeta", false, 100)
		}
		if zetaFirst {
			zeta()
		}
		for _, i := range order {
			if views {
				x.View()
			}
			require.NoError(t, x.Add(ck.Entry{Index: 10}, 0, blocks[i]))
		}
		if !zetaFirst {
			zeta()
		}
		cfg := DefaultConfig()
		ReleaseTo(x, int64(cfg.CleanupDelay), "cleaner", 0)
		x.Confirm(int64(cfg.CleanupDelay), "cleaner")
		x.Expire(int64(cfg.DedupHorizon + cfg.CleanupDelay))
		return snap(t, x)
	}
	a := build([]int{0, 1, 2, 3}, false, false)
	require.Equal(t, a, build([]int{3, 2, 1, 0}, true, false))
	require.Equal(t, a, build([]int{2, 0, 3, 1}, true, true))
	x := mustRestore(t, a)
	require.Zero(t, x.Stats().DeletionRecords)
	require.Equal(t, int64(4), x.Stats().Blocks)
}

// TestRestoreRejectsCorruption: every truncation and every single-byte
// change of a snapshot is refused with an error wrapping one of the
// decoding sentinels.
func TestRestoreRejectsCorruption(t *testing.T) {
	good := snap(t, goldenIndex(t))
	sentinels := []error{ck.ErrMalformed, ck.ErrTruncated, ck.ErrUnknownVersion, ck.ErrTooLarge, ck.ErrChecksum}
	check := func(what string, data []byte) {
		x, err := Restore(bytes.NewReader(data))
		require.Error(t, err, what)
		require.Nil(t, x)
		for _, s := range sentinels {
			if errors.Is(err, s) {
				return
			}
		}
		t.Fatalf("%s: %v wraps no decoding sentinel", what, err)
	}
	for n := range len(good) {
		check(fmt.Sprintf("truncated to %d", n), good[:n])
	}
	step := 1
	if testing.Short() {
		step = 7
	}
	for i := 0; i < len(good); i += step {
		for _, d := range []byte{0x01, 0x80, 0xff} {
			bad := bytes.Clone(good)
			bad[i] ^= d
			check(fmt.Sprintf("byte %d ^ %#x", i, d), bad)
		}
	}
}

// craft writes a stream of the given header version and frames.
func craft(t *testing.T, version byte, frames ...any) []byte {
	var buf bytes.Buffer
	w, err := codec.NewWriter(&buf, codec.Snapshot, codec.KindSection, version)
	require.NoError(t, err)
	for _, f := range frames {
		require.NoError(t, w.Encode(f))
	}
	require.NoError(t, w.Close())
	return buf.Bytes()
}

// TestRestoreValidatesContents: well-framed streams whose contents break
// the index's invariants are refused with ErrMalformed (or a more specific
// sentinel).
func TestRestoreValidatesContents(t *testing.T) {
	hdr := func(mut func(*snapHeader)) *snapHeader {
		h := &snapHeader{Component: componentName, CleanupDelay: 10, DedupHorizon: 10, Clock: 100, Floor: 100, Names: 2, Blocks: 1, Datasets: 1}
		if mut != nil {
			mut(h)
		}
		return h
	}
	names := func(ns ...string) *namesFrame { return &namesFrame{N: len(ns), Names: codec.PackStrings(ns)} }
	blk := func(mut func(*blocksFrame)) *blocksFrame {
		f := &blocksFrame{
			N: 1, IDs: codec.PackStrings([]string{"a"}), Tenants: codec.PackInts([]uint32{1}), Shards: codec.PackInts([]uint32{0}),
			Levels: codec.PackInts([]uint32{0}), MinTimes: codec.PackInts([]int64{0}), Spans: codec.PackInts([]uint64{10}),
			Sizes: codec.PackInts([]int64{5}), Counts: codec.PackInts([]uint32{1}),
			D: 1, DTenants: codec.PackInts([]uint32{0}), DNames: codec.PackInts([]uint32{2}), DSizes: codec.PackInts([]int64{5}),
			DRecords: codec.PackInts([]int64{1}), DOffsets: codec.PackInts([]uint64{0}), DSpans: codec.PackInts([]uint64{10}),
		}
		if mut != nil {
			mut(f)
		}
		return f
	}
	tombs := func(kind ck.TombstoneKind, target string, created, release int64, job string) *tombsFrame {
		return &tombsFrame{N: 1, Kinds: codec.PackInts([]uint8{uint8(kind)}), Targets: codec.PackStrings([]string{target}),
			Created: codec.PackInts([]int64{created}), Release: codec.PackInts([]int64{release}), Indexes: codec.PackInts([]uint64{1}),
			Jobs: codec.PackStrings([]string{job})}
	}
	gone := func(target string, at int64) *goneFrame {
		return &goneFrame{N: 1, Kinds: codec.PackInts([]uint8{uint8(ck.TombstoneBlock)}), Targets: codec.PackStrings([]string{target}), At: codec.PackInts([]int64{at})}
	}
	result := func(flags, reason uint8, missing []string) *resultsFrame {
		return &resultsFrame{N: 1, Jobs: codec.PackStrings([]string{"job"}), Tokens: codec.PackInts([]uint64{1}), Indexes: codec.PackInts([]uint64{1}),
			At: codec.PackInts([]int64{50}), Flags: codec.PackInts([]uint8{flags}), Reasons: codec.PackInts([]uint8{reason}),
			Details: codec.PackStrings([]string{""}), MissingCount: codec.PackInts([]uint32{uint32(len(missing))}), SurvivingCount: codec.PackInts([]uint32{0}),
			Missing: codec.PackStrings(missing), Surviving: codec.PackStrings(nil)}
	}

	// The base stream is valid.
	base := craft(t, 1, hdr(nil), names("acme", "svc"), blk(nil))
	x := mustRestore(t, base)
	require.True(t, x.View().Live("a"))
	require.Equal(t, base, snap(t, x))
	withTomb := func(f *tombsFrame) []byte {
		return craft(t, 1, hdr(func(h *snapHeader) { h.Tombstones = 1 }), names("acme", "svc"), blk(nil), f)
	}
	require.NotNil(t, mustRestore(t, withTomb(tombs(ck.TombstoneBlock, "b", 90, 100, "job"))))
	// recs is a frame of one record of the given sources.
	recs := func(mut func(*recordsFrame), targets ...string) *recordsFrame {
		kinds := make([]uint8, len(targets))
		for i := range kinds {
			kinds[i] = uint8(ck.TombstoneBlock)
		}
		f := &recordsFrame{N: 1, Created: codec.PackInts([]int64{90}), Release: codec.PackInts([]int64{100}), Indexes: codec.PackInts([]uint64{1}),
			Jobs: codec.PackStrings([]string{""}), Counts: codec.PackInts([]uint32{uint32(len(targets))}),
			S: len(targets), Kinds: codec.PackInts(kinds), Targets: codec.PackStrings(targets)}
		if mut != nil {
			mut(f)
		}
		return f
	}
	withRecs := func(sources uint64, f *recordsFrame) []byte {
		return craft(t, 2, hdr(nil), names("acme", "svc"), blk(nil), &[2]uint64{1, sources}, f)
	}
	withRec := withRecs(2, recs(func(f *recordsFrame) { f.Jobs = codec.PackStrings([]string{"job"}) }, "b", "c"))
	y := mustRestore(t, withRec)
	require.Equal(t, withRec, snap(t, y))
	ti, ok := y.View().Tombstone(ck.Tombstone{Kind: ck.TombstoneBlock, Target: "c"})
	require.True(t, ok)
	require.Equal(t, TombstoneInfo{Tombstone: ck.Tombstone{Kind: ck.TombstoneBlock, Target: "c"}, Created: 90, Index: 1, ReleaseAt: 100, Job: "job"}, ti)

	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"version 3", craft(t, 3, hdr(nil), names("acme", "svc"), blk(nil)), ck.ErrUnknownVersion},
		{"version 2 without records", craft(t, 2, hdr(nil), names("acme", "svc"), blk(nil), &[2]uint64{}), ck.ErrMalformed},
		{"records head", withRecs(2, recs(nil, "b")), ck.ErrMalformed},
		{"record without sources", withRecs(0, recs(nil)), ck.ErrMalformed},
		{"record sources unsorted", withRecs(2, recs(nil, "c", "b")), ck.ErrMalformed},
		{"record source repeated", withRecs(2, recs(nil, "b", "b")), ck.ErrMalformed},
		{"record source live", withRecs(2, recs(nil, "a", "b")), ck.ErrMalformed},
		{"record source count", withRecs(2, recs(func(f *recordsFrame) { f.S = 3 }, "b", "c")), ck.ErrMalformed},
		{"record bad holder", withRecs(2, recs(func(f *recordsFrame) { f.Jobs = codec.PackStrings([]string{"a job"}) }, "b", "c")), ck.ErrMalformed},
		{"record after floor", withRecs(2, recs(func(f *recordsFrame) { f.Release = codec.PackInts([]int64{101}) }, "b", "c")), ck.ErrMalformed},
		{"records unsorted", craft(t, 2, hdr(nil), names("acme", "svc"), blk(nil), &[2]uint64{2, 4}, func() *recordsFrame {
			f := recs(nil, "d", "e")
			f.N, f.Created, f.Release, f.Indexes = 2, codec.PackInts([]int64{90, 90}), codec.PackInts([]int64{100, 100}), codec.PackInts([]uint64{1, 1})
			f.Jobs, f.Counts = codec.PackStrings([]string{"", ""}), codec.PackInts([]uint32{2, 2})
			f.S, f.Kinds = 4, codec.PackInts([]uint8{uint8(ck.TombstoneBlock), uint8(ck.TombstoneBlock), uint8(ck.TombstoneBlock), uint8(ck.TombstoneBlock)})
			f.Targets = codec.PackStrings([]string{"d", "e", "b", "c"})
			return f
		}()), ck.ErrMalformed},
		{"pending twice", craft(t, 2, hdr(func(h *snapHeader) { h.Tombstones = 1 }), names("acme", "svc"), blk(nil),
			tombs(ck.TombstoneBlock, "c", 90, 100, ""), &[2]uint64{1, 2}, recs(nil, "b", "c")), ck.ErrMalformed},
		{"component", craft(t, 1, hdr(func(h *snapHeader) { h.Component = "planner" }), names("acme", "svc"), blk(nil)), ck.ErrMalformed},
		{"negative delay", craft(t, 1, hdr(func(h *snapHeader) { h.CleanupDelay = -1 }), names("acme", "svc"), blk(nil)), ck.ErrMalformed},
		{"watermark after clock", craft(t, 1, hdr(func(h *snapHeader) { h.WatermarkSet, h.Watermark = true, 101 }), names("acme", "svc"), blk(nil)), ck.ErrMalformed},
		{"unsorted names", craft(t, 1, hdr(nil), names("svc", "acme"), blk(nil)), ck.ErrMalformed},
		{"invalid name", craft(t, 1, hdr(nil), names("acme", "s\x01v"), blk(nil)), ck.ErrMalformed},
		{"unused name", craft(t, 1, hdr(func(h *snapHeader) { h.Names = 3 }), names("acme", "svc", "zzz"), blk(nil)), ck.ErrMalformed},
		{"frame too big", craft(t, 1, hdr(nil), names("acme", "svc", "x")), ck.ErrMalformed},
		{"empty frame", craft(t, 1, hdr(nil), &namesFrame{}), ck.ErrMalformed},
		{"missing frames", craft(t, 1, hdr(func(h *snapHeader) { h.Blocks = 2 }), names("acme", "svc"), blk(nil)), ck.ErrTruncated},
		{"extra frame", craft(t, 1, hdr(nil), names("acme", "svc"), blk(nil), blk(nil)), ck.ErrMalformed},
		{"tenant reference", craft(t, 1, hdr(nil), names("acme", "svc"), blk(func(f *blocksFrame) { f.Tenants = codec.PackInts([]uint32{3}) })), ck.ErrMalformed},
		{"span overflow", craft(t, 1, hdr(nil), names("acme", "svc"), blk(func(f *blocksFrame) { f.MinTimes = codec.PackInts([]int64{maxInt64}) })), ck.ErrMalformed},
		{"dataset count", craft(t, 1, hdr(nil), names("acme", "svc"), blk(func(f *blocksFrame) { f.D = 2 })), ck.ErrMalformed},
		{"dataset outside block", craft(t, 1, hdr(nil), names("acme", "svc"), blk(func(f *blocksFrame) { f.DSpans = codec.PackInts([]uint64{11}) })), ck.ErrMalformed},
		{"header datasets", craft(t, 1, hdr(func(h *snapHeader) { h.Datasets = 2 }), names("acme", "svc"), blk(nil)), ck.ErrMalformed},
		{"negative size", craft(t, 1, hdr(nil), names("acme", "svc"), blk(func(f *blocksFrame) { f.Sizes = codec.PackInts([]int64{-1}) })), ident.ErrNegative},
		{"short column", craft(t, 1, hdr(nil), names("acme", "svc"), blk(func(f *blocksFrame) { f.Shards = nil })), ck.ErrMalformed},
		{"live and tombstoned", withTomb(tombs(ck.TombstoneBlock, "a", 90, 100, "")), ck.ErrMalformed},
		{"prefix over live block", withTomb(tombs(ck.TombstonePrefix, "blocks/", 90, 100, "")), ck.ErrMalformed},
		{"tombstone after clock", withTomb(tombs(ck.TombstoneBlock, "b", 101, 101, "")), ck.ErrMalformed},
		{"release after floor", withTomb(tombs(ck.TombstoneBlock, "b", 90, 101, "")), ck.ErrMalformed},
		{"released before created", withTomb(tombs(ck.TombstoneBlock, "b", 90, 80, "")), ck.ErrMalformed},
		{"bad holder", withTomb(tombs(ck.TombstoneBlock, "b", 90, 100, "a job")), ck.ErrMalformed},
		{"bad kind", withTomb(tombs(9, "b", 90, 100, "")), ck.ErrMalformed},
		{"live and deleted", craft(t, 1, hdr(func(h *snapHeader) { h.Gone = 1 }), names("acme", "svc"), blk(nil), gone("a", 50)), ck.ErrMalformed},
		{"deleted in the future", craft(t, 1, hdr(func(h *snapHeader) { h.Gone = 1 }), names("acme", "svc"), blk(nil), gone("b", 150)), ck.ErrMalformed},
		{"applied with missing", craft(t, 1, hdr(func(h *snapHeader) { h.Results = 1 }), names("acme", "svc"), blk(nil), result(flagApplied, 0, []string{"x"})), ck.ErrMalformed},
		{"refused without reason", craft(t, 1, hdr(func(h *snapHeader) { h.Results = 1 }), names("acme", "svc"), blk(nil), result(0, 0, nil)), ck.ErrMalformed},
		{"unknown reason", craft(t, 1, hdr(func(h *snapHeader) { h.Results = 1 }), names("acme", "svc"), blk(nil), result(0, 9, nil)), ck.ErrMalformed},
		{"missing list short", craft(t, 1, hdr(func(h *snapHeader) { h.Results = 1 }), names("acme", "svc"), blk(nil), func() *resultsFrame {
			f := result(0, uint8(refusedSourcesMissing), []string{"x"})
			f.MissingCount = codec.PackInts([]uint32{5})
			return f
		}()), ck.ErrMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x, err := Restore(bytes.NewReader(c.data))
			require.ErrorIs(t, err, c.want)
			require.Nil(t, x)
		})
	}
}

// TestRestoreReadsOneStream: Restore consumes exactly its stream, so a host
// can read sections one after the other.
func TestRestoreReadsOneStream(t *testing.T) {
	a, b := snap(t, goldenIndex(t)), snap(t, mustNew(t))
	r := bufio.NewReader(bytes.NewReader(append(bytes.Clone(a), b...)))
	x, err := Restore(r)
	require.NoError(t, err)
	y, err := Restore(r)
	require.NoError(t, err)
	require.Equal(t, a, snap(t, x))
	require.Equal(t, b, snap(t, y))
}

func mustNew(t *testing.T) *Index {
	x, err := New(DefaultConfig())
	require.NoError(t, err)
	return x
}

// TestCheckBlockMatchesValidate: the validation Restore applies to decoded
// blocks (checkBlock) accepts exactly what BlockMeta.Validate accepts.
func TestCheckBlockMatchesValidate(t *testing.T) {
	names := []string{"", "acme", "beta", "svc"}
	rapid.Check(t, func(t *rapid.T) {
		x := newIndex(DefaultConfig())
		times := rapid.Int64Range(-3, 3)
		m := ck.BlockMeta{
			ID:      rapid.SampledFrom([]string{"a", "b/c", "", "../x", "a//b"}).Draw(t, "id"),
			Tenant:  rapid.SampledFrom(names).Draw(t, "tenant"),
			MinTime: times.Draw(t, "min"), MaxTime: times.Draw(t, "max"),
			Size: rapid.Int64Range(-1, 1).Draw(t, "size"),
		}
		for range rapid.IntRange(0, 3).Draw(t, "datasets") {
			m.Datasets = append(m.Datasets, ck.DatasetMeta{
				Tenant: rapid.SampledFrom(names).Draw(t, "dtenant"), Name: rapid.SampledFrom(names).Draw(t, "name"),
				Size: rapid.Int64Range(-1, 1).Draw(t, "dsize"), Records: rapid.Int64Range(-1, 1).Draw(t, "records"),
				MinTime: times.Draw(t, "dmin"), MaxTime: times.Draw(t, "dmax"),
			})
		}
		want := m.Validate()
		b := x.build(&m)
		got := x.checkBlock(b, b.size(), b.appendDatasets(nil))
		require.Equal(t, want == nil, got == nil, "Validate: %v, checkBlock: %v", want, got)
	})
}

// exercise runs a restored index through its read paths and a few
// mutations, and checks that it round-trips.
func exercise(t *testing.T, x *Index) {
	s1 := snap(t, x)
	y := mustRestore(t, s1)
	require.Equal(t, s1, snap(t, y))
	st := x.Stats()
	require.Equal(t, int64(x.View().Len()), st.Blocks)
	v := x.View()
	for _, b := range v.Blocks("", 3) {
		require.True(t, x.View().Live(b.ID))
		tenants := b.Tenants()
		for _, tn := range tenants {
			require.Contains(t, v.QueryIDs(tn, b.MinTime, b.MaxTime, nil), b.ID)
		}
	}
	next := v.Releasable(x.View().Now() + int64(time.Hour))
	for range 3 {
		if _, ok := next(); !ok {
			break
		}
	}
	ReleaseTo(x, x.View().Now()+int64(time.Hour), "fuzz", 2)
	x.Confirm(x.View().Now(), "fuzz")
	x.DropBefore(ck.Entry{Index: 1}, x.View().Now(), "", true, x.View().Now())
	x.Expire(x.View().Now() + int64(24*time.Hour))
	mustRestore(t, snap(t, x))
}

// FuzzRestore: Restore never panics; what it accepts round-trips and can
// be used. Inputs are tried as they are and with their checksum
// recomputed, so that the fuzzer reaches past the checksum.
func FuzzRestore(f *testing.F) {
	seeds := map[string][]byte{
		"golden":         snap(f, goldenIndex(f)),
		"golden-records": snap(f, goldenRecordsIndex(f)),
		"empty":          snap(f, newIndex(DefaultConfig())),
	}
	small := newIndex(DefaultConfig())
	_ = small.Add(ck.Entry{Index: 1}, 1, gblock("a", "acme", 0, 0, 0, 10))
	seeds["small"] = snap(f, small)
	for name, data := range seeds {
		f.Add(data)
		if *update {
			dir := filepath.Join("testdata", "fuzz", "FuzzRestore")
			require.NoError(f, os.MkdirAll(dir, 0o755))
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data)
			require.NoError(f, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if x, err := Restore(bytes.NewReader(data)); err == nil {
			exercise(t, x)
		} else {
			require.Nil(t, x)
		}
		if len(data) >= 4 {
			if x, err := Restore(bytes.NewReader(snaptest.Reseal(data[:len(data)-4]))); err == nil {
				exercise(t, x)
			}
		}
	})
}
