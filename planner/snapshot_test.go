package planner_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/internal/snaptest"
	"github.com/compactkit/compactkit/planner"
)

var update = flag.Bool("update", false, "rewrite the golden snapshot")

// goldenPlanner builds a planner with a bit of everything: keys of several
// shapes and levels, claims, quarantined blocks, a cursor and counters.
func goldenPlanner(t testing.TB) *planner.Planner {
	cfg := planner.DefaultConfig()
	cfg.Levels[1].CrossShard = true
	cfg.Levels[0].MaxBytes = 1 << 30
	p, err := planner.New(cfg)
	require.NoError(t, err)
	base := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	idx := uint64(0)
	entry := func(dt time.Duration) ck.Entry {
		idx++
		return ck.Entry{Index: idx, Term: 2, Time: base + int64(dt)}
	}
	n := 0
	add := func(e ck.Entry, tenant string, shard, level uint32, count int) {
		for range count {
			n++
			b := ck.BlockMeta{ID: "01J" + string(rune('A'+n%26)) + "/" + time.Unix(0, int64(n)).UTC().Format("150405.000000000"),
				Tenant: tenant, Shard: shard, Level: level, MinTime: e.Time - int64(time.Duration(n)*time.Second), MaxTime: e.Time, Size: int64(n * 1000)}
			if tenant == "" {
				b.Datasets = []ck.DatasetMeta{{Tenant: "x", Name: "svc"}}
			}
			_, err := p.Enqueue(e, &b)
			require.NoError(t, err)
		}
	}
	add(entry(0), "acme", 1, 0, 25)
	add(entry(time.Second), "", 2, 0, 7)
	add(entry(2*time.Second), "globex", 1, 1, 4)
	add(entry(3*time.Second), "globex", 2, 1, 8)
	add(entry(4*time.Second), "initech", 9, 2, 3)
	plans := nextPlans(t, p.View(), base+int64(time.Hour), 4)
	for i, pl := range plans {
		require.NoError(t, p.Claim(entry(time.Hour+time.Duration(i)), &pl))
	}
	require.NoError(t, p.Quarantine(entry(2*time.Hour), plans[1].Name, "failed 3 times: checksum mismatch in dataset svc"))
	require.NoError(t, p.Return(plans[2].Name, plans[2].Sources[1:]))
	add(entry(3*time.Hour), "acme", 1, 0, 3)
	return p
}

// restored restores snap, which must snapshot to the same bytes again.
func restored(t testing.TB, snap []byte) *planner.Planner {
	t.Helper()
	return snaptest.RoundTrip(t, snap, planner.Restore, func(p *planner.Planner) []byte { return snapshotBytes(t, p) })
}

func snapshotBytes(t testing.TB, p *planner.Planner) []byte {
	var b bytes.Buffer
	require.NoError(t, p.View().Snapshot(&b))
	return b.Bytes()
}

// TestGoldenSnapshot: the snapshot format is stable. A release must read
// the snapshots of the previous one; if the format changes on purpose, the
// version changes and the old golden file stays readable.
func TestGoldenSnapshot(t *testing.T) {
	checkGolden(t, "planner_v1.bin", snapshotBytes(t, goldenPlanner(t)))
}

// checkGolden compares a snapshot with its golden file (written with
// -update), and checks that the file restores to the same bytes; it
// returns the file's bytes.
func checkGolden(t *testing.T, name string, got []byte) []byte {
	t.Helper()
	want := snaptest.Golden(t, name, got, *update)
	restored(t, want)
	return want
}

// TestGoldenSnapshotMarked: a state with a block an operator marked
// snapshots as version 2 (the golden state's bytes, version 1, stay as
// they are without one); it restores to the same bytes, and the damage
// checks hold for it too.
func TestGoldenSnapshotMarked(t *testing.T) {
	p := goldenPlanner(t)
	// The newest acme blocks (the 48th to 50th added), queued at level 0,
	// shard 1.
	var live []ck.BlockMeta
	for i := 48; i <= 50; i++ {
		id := "01J" + string(rune('A'+i%26)) + "/" + time.Unix(0, int64(i)).UTC().Format("150405.000000000")
		live = append(live, ck.BlockMeta{ID: id, Tenant: "acme", Shard: 1, Level: 0})
	}
	n, err := p.Mark(ck.Entry{Index: 100, Term: 2, Time: time.Date(2025, 6, 1, 4, 0, 0, 0, time.UTC).UnixNano()}, live[:1], "do not compact: legal hold")
	require.NoError(t, err)
	require.Equal(t, 1, n)
	got := snapshotBytes(t, p)
	require.Equal(t, byte(2), got[3], "the header's version byte")
	want := checkGolden(t, "planner_v2.bin", got)
	snaptest.RejectsDamage(t, want, 17, snaptest.Err(planner.Restore))

	// Version 2 without a marked block is not what any state writes.
	v1 := snapshotBytes(t, goldenPlanner(t))
	v1[3] = 2
	_, err = planner.Restore(bytes.NewReader(v1))
	require.Error(t, err)
}

// TestRestoreRejectsDamage: every truncation and every flipped bit of a
// snapshot is an error, never a panic or a silently different planner.
func TestRestoreRejectsDamage(t *testing.T) {
	snaptest.RejectsDamage(t, snapshotBytes(t, goldenPlanner(t)), 11, snaptest.Err(planner.Restore))
}

// TestRestoreValidates: structurally valid streams with invalid contents
// are refused with ErrMalformed.
func TestRestoreValidates(t *testing.T) {
	step := 13 // every byte takes long under -race: a sample
	if testing.Short() {
		step = 31
	}
	// Accepted: then it must be a consistent planner.
	snaptest.RefusesOrWorks(t, snapshotBytes(t, goldenPlanner(t)), step, planner.Restore, func(r *planner.Planner) { exercise(t, r) })
}

// exercise plans, claims and snapshots a restored planner; it must neither
// panic nor fail to round-trip.
func exercise(t testing.TB, r *planner.Planner) {
	restored(t, snapshotBytes(t, r))
	st := r.Stats(0)
	v := r.View()
	for range 5 {
		pl, ok := v.Next(st.Now+int64(24*time.Hour), nil)
		if !ok {
			break
		}
		_ = r.Claim(ck.Entry{Index: 1, Time: st.Now}, &pl)
	}
	items, _ := r.Quarantined("", 10)
	for _, q := range items {
		_, _ = r.Requeue([]string{q.ID})
	}
}

// FuzzRestore: Restore never panics; what it accepts round-trips and can
// be planned on. Inputs are tried as they are and with their checksum
// recomputed, so that the fuzzer reaches the decoder.
func FuzzRestore(f *testing.F) {
	f.Add(snapshotBytes(f, goldenPlanner(f)))
	if marked, err := os.ReadFile(filepath.Join("testdata", "golden", "planner_v2.bin")); err == nil {
		f.Add(marked) // version 2: a marked block
	}
	empty, _ := planner.New(planner.DefaultConfig())
	f.Add(snapshotBytes(f, empty))
	f.Fuzz(func(t *testing.T, data []byte) {
		snaptest.TryRestore(data, planner.Restore, func(r *planner.Planner) { exercise(t, r) })
	})
}
