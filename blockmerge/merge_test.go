package blockmerge_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/internal/ident"
)

func TestMergeSingleTenant(t *testing.T) {
	ctx := context.Background()
	s := blockmerge.NewMemStore()
	info := func(id string, level uint32) blockmerge.BlockInfo {
		return blockmerge.BlockInfo{ID: id, Tenant: "acme", Shard: 7, Level: level}
	}
	_, err := blockmerge.WriteBlock(ctx, s, info("s1", 1), []blockmerge.Dataset{
		{Name: "cpu", Records: []blockmerge.Record{rec("a", 1, "x"), rec("b", 2, "y"), rec("c", 3, "z")}},
		{Name: "mem", Records: []blockmerge.Record{rec("m", 100, "1")}},
	})
	require.NoError(t, err)
	_, err = blockmerge.WriteBlock(ctx, s, info("s2", 1), []blockmerge.Dataset{
		// "b"@2 "y" is identical to s1's and collapses; "b"@2 "w" differs.
		{Name: "cpu", Records: []blockmerge.Record{rec("a", 0, "x"), rec("b", 2, "y"), rec("b", 2, "w"), rec("d", 4, "")}},
		{Name: "net", Records: []blockmerge.Record{rec("n", -5, "1")}},
	})
	require.NoError(t, err)

	plan := &compactkit.JobPlan{Name: "job-1", Tenant: "acme", Shard: 7, Level: 1, Sources: []string{"s1", "s2"}}
	outs, err := blockmerge.Merge(ctx, s, plan, 42)
	require.NoError(t, err)
	require.Len(t, outs, 1)
	out := outs[0]
	require.NoError(t, out.Validate())
	require.Equal(t, compactkit.OutputID("job-1", 42, 0), out.ID)
	require.Equal(t, "acme", out.Tenant)
	require.Equal(t, uint32(7), out.Shard)
	require.Equal(t, uint32(2), out.Level)
	require.Equal(t, int64(-5), out.MinTime)
	require.Equal(t, int64(100), out.MaxTime)
	require.Equal(t, int64(len(objectBytes(t, s, compactkit.ObjectKey(out.ID)))), out.Size)
	require.Equal(t, []string{compactkit.ObjectKey(out.ID)}, listKeys(t, s, compactkit.AttemptPrefix("job-1", 42)))

	require.Equal(t, map[string][]blockmerge.Record{
		"acme/cpu": {rec("a", 0, "x"), rec("a", 1, "x"), rec("b", 2, "w"), rec("b", 2, "y"), rec("c", 3, "z"), rec("d", 4, "")},
		"acme/mem": {rec("m", 100, "1")},
		"acme/net": {rec("n", -5, "1")},
	}, readDatasets(t, s, out.ID))
	for _, d := range out.Datasets {
		require.Empty(t, d.Tenant, "dataset tenants are left empty in a single-tenant output")
	}
	require.Equal(t, int64(6), out.Datasets[0].Records)

	v, err := blockmerge.Verify(ctx, s, out.ID)
	require.NoError(t, err)
	require.Equal(t, out, v)
}

func TestMergeSplitsLevel0ByTenant(t *testing.T) {
	ctx := context.Background()
	s := blockmerge.NewMemStore()
	l0Segment(t, s, "seg-1",
		blockmerge.Dataset{Tenant: "zeta", Name: "svc", Records: []blockmerge.Record{rec("z", 1, "1")}},
		blockmerge.Dataset{Tenant: "alpha", Name: "svc", Records: []blockmerge.Record{rec("a", 2, "2")}},
	)
	l0Segment(t, s, "seg-2",
		blockmerge.Dataset{Tenant: "alpha", Name: "svc", Records: []blockmerge.Record{rec("a", 1, "1"), rec("a", 2, "2")}},
		blockmerge.Dataset{Tenant: "mid", Name: "other", Records: []blockmerge.Record{rec("m", 9, "9")}},
	)
	plan := &compactkit.JobPlan{Name: "l0-job", Shard: 2, Sources: []string{"seg-1", "seg-2"}}
	outs, err := blockmerge.Merge(ctx, s, plan, 9)
	require.NoError(t, err)
	require.Len(t, outs, 3)
	for n, tenant := range []string{"alpha", "mid", "zeta"} {
		o := outs[n]
		require.NoError(t, o.Validate())
		require.Equal(t, compactkit.OutputID("l0-job", 9, n), o.ID)
		require.Equal(t, tenant, o.Tenant)
		require.Equal(t, uint32(1), o.Level)
		require.Equal(t, uint32(2), o.Shard)
	}
	require.Equal(t, map[string][]blockmerge.Record{"alpha/svc": {rec("a", 1, "1"), rec("a", 2, "2")}}, readDatasets(t, s, outs[0].ID))
	require.Equal(t, map[string][]blockmerge.Record{"mid/other": {rec("m", 9, "9")}}, readDatasets(t, s, outs[1].ID))
	require.Equal(t, map[string][]blockmerge.Record{"zeta/svc": {rec("z", 1, "1")}}, readDatasets(t, s, outs[2].ID))
}

func TestMergeLevelIsMaxSourceLevelPlusOne(t *testing.T) {
	ctx := context.Background()
	s := blockmerge.NewMemStore()
	for i, level := range []uint32{1, 3, 2} {
		_, err := blockmerge.WriteBlock(ctx, s, blockmerge.BlockInfo{ID: fmt.Sprint("b", i), Tenant: "t", Level: level},
			[]blockmerge.Dataset{{Name: "d", Records: []blockmerge.Record{rec("k", int64(i), "v")}}})
		require.NoError(t, err)
	}
	outs, err := blockmerge.Merge(ctx, s, &compactkit.JobPlan{Name: "j", Tenant: "t", Level: 1, Sources: []string{"b0", "b1", "b2"}}, 1)
	require.NoError(t, err)
	require.Equal(t, uint32(4), outs[0].Level)
}

func TestMergeEmptyAndCleanupOnly(t *testing.T) {
	ctx := context.Background()
	s := blockmerge.NewMemStore()
	_, err := blockmerge.WriteBlock(ctx, s, blockmerge.BlockInfo{ID: "empty", Tenant: "t", Level: 1}, nil)
	require.NoError(t, err)
	outs, err := blockmerge.Merge(ctx, s, &compactkit.JobPlan{Name: "j", Tenant: "t", Level: 1, Sources: []string{"empty"}}, 3)
	require.NoError(t, err)
	require.Len(t, outs, 1, "a plan with a tenant always has one output")
	require.Equal(t, "t", outs[0].Tenant)
	require.Empty(t, outs[0].Datasets)
	require.NoError(t, outs[0].Validate())

	outs, err = blockmerge.Merge(ctx, s, &compactkit.JobPlan{Name: "j", Tombstones: []compactkit.Tombstone{{Kind: compactkit.TombstoneBlock, Target: "x"}}}, 4)
	require.NoError(t, err)
	require.Empty(t, outs)

	_, err = blockmerge.Merge(ctx, s, &compactkit.JobPlan{Name: "bad name"}, 4)
	require.ErrorIs(t, err, ident.ErrInvalidID)
	_, err = blockmerge.Merge(ctx, s, nil, 4)
	require.Error(t, err)
}

func TestMergeRefusesSourceOfAnotherTenant(t *testing.T) {
	ctx := context.Background()
	s := blockmerge.NewMemStore()
	_, err := blockmerge.WriteBlock(ctx, s, blockmerge.BlockInfo{ID: "b", Tenant: "other", Level: 1},
		[]blockmerge.Dataset{{Name: "d", Records: []blockmerge.Record{rec("k", 1, "v")}}})
	require.NoError(t, err)
	_, err = blockmerge.Merge(ctx, s, &compactkit.JobPlan{Name: "j", Tenant: "t", Level: 1, Sources: []string{"b"}}, 1)
	require.ErrorIs(t, err, ident.ErrInconsistent)
	require.ErrorContains(t, err, "source b")
	require.Empty(t, listKeys(t, s, compactkit.AttemptPrefix("j", 1)))
}

func TestMergeMissingSource(t *testing.T) {
	ctx := context.Background()
	s := blockmerge.NewMemStore()
	l0Segment(t, s, "seg-1", blockmerge.Dataset{Tenant: "a", Name: "d", Records: []blockmerge.Record{rec("k", 1, "v")}})
	_, err := blockmerge.Merge(ctx, s, &compactkit.JobPlan{Name: "j", Sources: []string{"seg-1", "seg-404"}}, 5)
	require.ErrorIs(t, err, blockmerge.ErrNotFound)
	require.ErrorContains(t, err, "blocks/seg-404")
	require.Equal(t, []string{"blocks/seg-1"}, listKeys(t, s, ""), "nothing written")
}

// TestMergeCorruptSourceLeavesNothing corrupts a dataset of the last
// tenant, so the failure happens after the first outputs were committed.
func TestMergeCorruptSourceLeavesNothing(t *testing.T) {
	for _, store := range []struct {
		name string
		new  func(t *testing.T) blockmerge.Store
	}{
		{"mem", func(*testing.T) blockmerge.Store { return blockmerge.NewMemStore() }},
		{"file", func(t *testing.T) blockmerge.Store { return newFileStore(t) }},
	} {
		t.Run(store.name, func(t *testing.T) {
			ctx := context.Background()
			s := store.new(t)
			l0Segment(t, s, "seg-1",
				blockmerge.Dataset{Tenant: "a", Name: "d", Records: []blockmerge.Record{rec("k", 1, "v")}},
				blockmerge.Dataset{Tenant: "b", Name: "d", Records: []blockmerge.Record{rec("k", 1, "v")}},
			)
			l0Segment(t, s, "seg-2",
				blockmerge.Dataset{Tenant: "a", Name: "d", Records: []blockmerge.Record{rec("k", 2, "v")}},
				blockmerge.Dataset{Tenant: "b", Name: "d", Records: []blockmerge.Record{rec("k", 2, "v")}},
				blockmerge.Dataset{Tenant: "c", Name: "e", Records: []blockmerge.Record{rec("k", 2, "v")}},
			)
			r, err := blockmerge.Open(ctx, s, "seg-2")
			require.NoError(t, err)
			b := objectBytes(t, s, "blocks/seg-2")
			off := blockmerge.Datasets(r)[2].Offset // tenant c's dataset
			b[off+14] ^= 0x40
			putBytes(t, s, "blocks/seg-2", b)

			plan := &compactkit.JobPlan{Name: "j", Sources: []string{"seg-1", "seg-2"}}
			outs, err := blockmerge.Merge(ctx, s, plan, 11)
			require.Nil(t, outs)
			require.ErrorIs(t, err, compactkit.ErrChecksum)
			require.ErrorContains(t, err, `object "blocks/seg-2": dataset c/e`)
			require.Empty(t, listKeys(t, s, compactkit.AttemptPrefix("j", 11)), "outputs left behind")
			require.Equal(t, []string{"blocks/seg-1", "blocks/seg-2"}, listKeys(t, s, ""))
		})
	}
}

func TestMergeCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := blockmerge.NewMemStore()
	l0Segment(t, s, "seg-1",
		blockmerge.Dataset{Tenant: "a", Name: "d", Records: []blockmerge.Record{rec("k", 1, "v")}},
		blockmerge.Dataset{Tenant: "b", Name: "d", Records: []blockmerge.Record{rec("k", 1, "v")}},
	)
	// Cancel while merging the second tenant, after the first output was
	// committed.
	merger := blockmerge.DatasetMerger(func(ctx context.Context, out *blockmerge.DatasetWriter, in []*blockmerge.DatasetIterator) error {
		if in[0].Meta().Tenant == "b" {
			cancel()
		}
		return blockmerge.MergeRecords(ctx, out, in)
	})
	_, err := blockmerge.Merge(ctx, s, &compactkit.JobPlan{Name: "j", Sources: []string{"seg-1"}}, 1, blockmerge.WithDatasetMerger(merger))
	require.ErrorIs(t, err, context.Canceled)
	require.Empty(t, listKeys(t, s, compactkit.AttemptPrefix("j", 1)))
}

func TestMergeStaleTokenRefused(t *testing.T) {
	ctx := context.Background()
	s := blockmerge.NewMemStore()
	l0Segment(t, s, "seg-1", blockmerge.Dataset{Tenant: "a", Name: "d", Records: []blockmerge.Record{rec("k", 1, "v")}})
	plan := &compactkit.JobPlan{Name: "j", Sources: []string{"seg-1"}}
	var g fencing.Guard
	_, err := blockmerge.Merge(ctx, blockmerge.NewFencedStore(s, &g, "j", 20), plan, 20)
	require.NoError(t, err)
	_, err = blockmerge.Merge(ctx, blockmerge.NewFencedStore(s, &g, "j", 19), plan, 19)
	require.ErrorIs(t, err, fencing.ErrStaleToken)
	require.Empty(t, listKeys(t, s, compactkit.AttemptPrefix("j", 19)))
	require.Len(t, listKeys(t, s, compactkit.AttemptPrefix("j", 20)), 1, "the newer attempt's output is untouched")
}

// TestMergeStaleMidwayLeavesNothing makes a newer attempt of the job show
// up after the first output was committed: the stale merge fails and
// still removes what it wrote.
func TestMergeStaleMidwayLeavesNothing(t *testing.T) {
	ctx := context.Background()
	s := blockmerge.NewMemStore()
	l0Segment(t, s, "seg-1",
		blockmerge.Dataset{Tenant: "a", Name: "d", Records: []blockmerge.Record{rec("k", 1, "v")}},
		blockmerge.Dataset{Tenant: "b", Name: "d", Records: []blockmerge.Record{rec("k", 1, "v")}},
	)
	var g fencing.Guard
	merger := blockmerge.DatasetMerger(func(ctx context.Context, out *blockmerge.DatasetWriter, in []*blockmerge.DatasetIterator) error {
		if in[0].Meta().Tenant == "b" {
			require.NoError(t, g.Check("j", 8)) // the newer attempt writes
		}
		return blockmerge.MergeRecords(ctx, out, in)
	})
	plan := &compactkit.JobPlan{Name: "j", Sources: []string{"seg-1"}}
	fs := blockmerge.NewFencedStore(s, &g, "j", 7)
	_, err := blockmerge.Merge(ctx, fs, plan, 7, blockmerge.WithDatasetMerger(merger))
	require.ErrorIs(t, err, fencing.ErrStaleToken)
	require.Equal(t, []string{"blocks/seg-1"}, listKeys(t, s, ""))
}

func TestMergeCustomDatasetMerger(t *testing.T) {
	ctx := context.Background()
	s := blockmerge.NewMemStore()
	l0Segment(t, s, "s1",
		blockmerge.Dataset{Tenant: "t", Name: "latest", Records: []blockmerge.Record{rec("a", 1, "old"), rec("b", 5, "b5")}},
		blockmerge.Dataset{Tenant: "t", Name: "plain", Records: []blockmerge.Record{rec("a", 1, "old")}},
	)
	l0Segment(t, s, "s2",
		blockmerge.Dataset{Tenant: "t", Name: "latest", Records: []blockmerge.Record{rec("a", 2, "new"), rec("b", 4, "b4")}},
		blockmerge.Dataset{Tenant: "t", Name: "plain", Records: []blockmerge.Record{rec("a", 2, "new")}},
	)
	outs, err := blockmerge.Merge(ctx, s, &compactkit.JobPlan{Name: "j", Sources: []string{"s1", "s2"}}, 1,
		blockmerge.WithDatasetMerger(lastValuePerKey))
	require.NoError(t, err)
	require.Equal(t, map[string][]blockmerge.Record{
		"t/latest": {rec("a", 2, "new"), rec("b", 5, "b5")},
		"t/plain":  {rec("a", 1, "old"), rec("a", 2, "new")},
	}, readDatasets(t, s, outs[0].ID))
	require.Equal(t, int64(2), outs[0].Datasets[0].Records)

	// A merger that appends out of order fails the merge.
	bad := blockmerge.DatasetMerger(func(_ context.Context, out *blockmerge.DatasetWriter, _ []*blockmerge.DatasetIterator) error {
		if err := out.Append(rec("b", 1, "")); err != nil {
			return err
		}
		return out.Append(rec("a", 1, ""))
	})
	_, err = blockmerge.Merge(ctx, s, &compactkit.JobPlan{Name: "j", Sources: []string{"s1", "s2"}}, 2, blockmerge.WithDatasetMerger(bad))
	require.ErrorIs(t, err, blockmerge.ErrOutOfOrder)
	require.Empty(t, listKeys(t, s, compactkit.AttemptPrefix("j", 2)))
}

// TestMergeDeterministic merges the same sources in two stores, with the
// staging path (a store that cannot stream a write) and without: the outputs are
// byte-identical.
func TestMergeDeterministic(t *testing.T) {
	ctx := context.Background()
	mem := blockmerge.NewMemStore()
	file := newFileStore(t)
	staged := putOnly{blockmerge.NewMemStore()}
	stores := []blockmerge.Store{mem, file, staged}
	for _, s := range stores {
		for i := range 4 {
			var ds []blockmerge.Dataset
			for _, tenant := range []string{"t1", "t2"} {
				var recs []blockmerge.Record
				for j := range 300 {
					recs = append(recs, rec(fmt.Sprintf("key-%d", (j*31+i*7)%97), int64(j%13), fmt.Sprint(j%5)))
				}
				ds = append(ds, blockmerge.Dataset{Tenant: tenant, Name: "d", Records: recs})
			}
			l0Segment(t, s, fmt.Sprint("seg-", i), ds...)
		}
	}
	plan := &compactkit.JobPlan{Name: "j", Sources: []string{"seg-3", "seg-1", "seg-0", "seg-2"}}
	var want [][]byte
	for i, s := range stores {
		outs, err := blockmerge.Merge(ctx, s, plan, 77, blockmerge.WithPageSize(2048))
		require.NoError(t, err)
		require.Len(t, outs, 2)
		for n, o := range outs {
			b := objectBytes(t, s, compactkit.ObjectKey(o.ID))
			if i == 0 {
				want = append(want, b)
				continue
			}
			require.Equal(t, want[n], b, "store %d output %d", i, n)
		}
	}
}

// putOnly hides the streaming writes of a store of this package, so writes are staged in a file.
type putOnly struct{ blockmerge.Store }

// TestMergeFencedStagesInTempDir: through a fenced store over a store that
// cannot stream a write, outputs are staged in the system's temporary
// directory ($TMPDIR).
func TestMergeFencedStagesInTempDir(t *testing.T) {
	ctx := context.Background()
	s := putOnly{blockmerge.NewMemStore()}
	l0Segment(t, s, "seg-1", blockmerge.Dataset{Tenant: "a", Name: "d", Records: []blockmerge.Record{rec("k", 1, "v")}})
	plan := &compactkit.JobPlan{Name: "j", Sources: []string{"seg-1"}}
	var g fencing.Guard
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "missing"))
	_, err := blockmerge.Merge(ctx, blockmerge.NewFencedStore(s, &g, "j", 1), plan, 1)
	require.ErrorIs(t, err, fs.ErrNotExist, "the staging file goes to the missing directory")
	require.Equal(t, []string{"blocks/seg-1"}, listKeys(t, s, ""))
	t.Setenv("TMPDIR", t.TempDir())
	outs, err := blockmerge.Merge(ctx, blockmerge.NewFencedStore(s, &g, "j", 1), plan, 1)
	require.NoError(t, err)
	require.Len(t, outs, 1)
}

// TestMergeMemoryIndependentOfBlockSize checks that what a merge allocates
// does not grow with the size of the blocks: it holds pages, not blocks.
func TestMergeMemoryIndependentOfBlockSize(t *testing.T) {
	ctx := context.Background()
	allocated := func(records int) uint64 {
		s := newFileStore(t, blockmerge.WithoutSync())
		value := bytes.Repeat([]byte("v"), 100)
		for i := range 4 {
			w, err := blockmerge.CreateObject(ctx, s, compactkit.ObjectKey(fmt.Sprint("src-", i)), "")
			require.NoError(t, err)
			bw, err := blockmerge.NewWriter(w, blockmerge.BlockInfo{ID: fmt.Sprint("src-", i), Tenant: "t", Level: 1})
			require.NoError(t, err)
			d, err := bw.BeginDataset("", "d")
			require.NoError(t, err)
			for j := range records {
				require.NoError(t, d.Append(blockmerge.Record{Key: fmt.Appendf(nil, "%016d", j*4+i), Timestamp: int64(j), Value: value}))
			}
			_, err = bw.Close()
			require.NoError(t, err)
			require.NoError(t, w.Commit())
		}
		plan := &compactkit.JobPlan{Name: "j", Tenant: "t", Level: 1, Sources: []string{"src-0", "src-1", "src-2", "src-3"}}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		outs, err := blockmerge.Merge(ctx, s, plan, 1)
		runtime.ReadMemStats(&after)
		require.NoError(t, err)
		require.Equal(t, int64(4*records), outs[0].Records())
		return after.TotalAlloc - before.TotalAlloc
	}
	small := allocated(2000)  // ~1 MB of sources
	large := allocated(16000) // ~8 MB of sources
	t.Logf("allocated: %d bytes for 1 MB of sources, %d bytes for 8 MB", small, large)
	require.Less(t, large, small+(128<<10), "allocations grow with block size")
	require.Less(t, large, uint64(2<<20), "a merge allocates more than a few pages")
}

func TestMergeInputsClosedAndChecked(t *testing.T) {
	// A merger that stops reading early does not leak; a merger that
	// ignores an input's error still fails the merge.
	ctx := context.Background()
	s := blockmerge.NewMemStore()
	l0Segment(t, s, "s1", blockmerge.Dataset{Tenant: "t", Name: "d", Records: []blockmerge.Record{rec("a", 1, ""), rec("b", 1, "")}})
	lazy := blockmerge.DatasetMerger(func(_ context.Context, out *blockmerge.DatasetWriter, in []*blockmerge.DatasetIterator) error {
		if !in[0].Next() {
			return in[0].Err()
		}
		return out.Append(in[0].Record())
	})
	outs, err := blockmerge.Merge(ctx, s, &compactkit.JobPlan{Name: "j", Sources: []string{"s1"}}, 1, blockmerge.WithDatasetMerger(lazy))
	require.NoError(t, err)
	require.Equal(t, int64(1), outs[0].Records())

	b := objectBytes(t, s, "blocks/s1")
	b[8+8+1] ^= 1
	putBytes(t, s, "blocks/s1", b)
	careless := blockmerge.DatasetMerger(func(_ context.Context, _ *blockmerge.DatasetWriter, in []*blockmerge.DatasetIterator) error {
		for in[0].Next() {
		}
		return nil // ignores in[0].Err()
	})
	_, err = blockmerge.Merge(ctx, s, &compactkit.JobPlan{Name: "j", Sources: []string{"s1"}}, 2, blockmerge.WithDatasetMerger(careless))
	require.ErrorIs(t, err, compactkit.ErrChecksum)
	require.True(t, errors.Is(err, compactkit.ErrChecksum))
	require.Empty(t, listKeys(t, s, compactkit.AttemptPrefix("j", 2)))
}

func TestCompareAndSortRecords(t *testing.T) {
	recs := []blockmerge.Record{rec("b", 1, "x"), rec("a", 2, "x"), rec("a", 1, "y"), rec("a", 1, "x"), rec("a", 1, "x"), rec("", 0, "")}
	got := blockmerge.SortRecords(recs)
	require.Equal(t, []blockmerge.Record{rec("", 0, ""), rec("a", 1, "x"), rec("a", 1, "y"), rec("a", 2, "x"), rec("b", 1, "x")}, got)
	require.True(t, slices.IsSortedFunc(got, blockmerge.Compare))
	require.Zero(t, blockmerge.Compare(rec("k", -1, "v"), rec("k", -1, "v")))
	require.Negative(t, blockmerge.Compare(rec("k", -1, "v"), rec("k", 0, "")))
}

// TestMergeChecksSourcesAgainstIndex: with the index's metadata of the
// sources, a source lacking a dataset the index lists (or disagreeing with
// it) fails the merge before anything is written.
func TestMergeChecksSourcesAgainstIndex(t *testing.T) {
	ctx := context.Background()
	s := blockmerge.NewMemStore()
	m1 := l0Segment(t, s, "seg-1",
		blockmerge.Dataset{Tenant: "a", Name: "d", Records: []blockmerge.Record{rec("k", 1, "v")}},
		blockmerge.Dataset{Tenant: "b", Name: "e", Records: []blockmerge.Record{rec("k", 2, "v")}},
	)
	m2 := l0Segment(t, s, "seg-2", blockmerge.Dataset{Tenant: "a", Name: "d", Records: []blockmerge.Record{rec("k", 3, "v")}})
	plan := &compactkit.JobPlan{Name: "j", Sources: []string{"seg-1", "seg-2"}}

	outs, err := blockmerge.Merge(ctx, s, plan, 1, blockmerge.WithSources(m1, m2))
	require.NoError(t, err)
	require.Len(t, outs, 2)

	fail := func(token fencing.Token, target error, contains string, metas ...compactkit.BlockMeta) {
		t.Helper()
		_, err := blockmerge.Merge(ctx, s, plan, token, blockmerge.WithSources(metas...))
		require.ErrorIs(t, err, target)
		require.ErrorContains(t, err, contains)
		require.Empty(t, listKeys(t, s, compactkit.AttemptPrefix("j", token)))
	}
	// The index lists a dataset the block does not hold.
	missing := m2.Clone()
	missing.Datasets = append(missing.Datasets, compactkit.DatasetMeta{Tenant: "c", Name: "x", Size: 40, Records: 1, MinTime: 3, MaxTime: 3})
	fail(2, blockmerge.ErrNotFound, `object "blocks/seg-2": dataset c/x`, m1, missing)
	// The index and the footer disagree on a dataset's statistics.
	wrong := m1.Clone()
	wrong.Datasets[1].Records++
	fail(3, ident.ErrInconsistent, `object "blocks/seg-1": dataset b/e`, wrong)
	// The block holds a dataset the index does not list.
	short := m1.Clone()
	short.Datasets = short.Datasets[:1]
	fail(4, ident.ErrInconsistent, "dataset b/e: in the block, not in the index", short)
	// Metadata of a block that is not a source.
	other := m2.Clone()
	other.ID = "seg-3"
	fail(5, ident.ErrInconsistent, "block seg-3, not a source", other)
}
