package index

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/fencing"
)

// The benchmark population: 1,000,000 blocks over 100 tenants and 64
// shards spanning 30 days, 5 datasets each. Block i belongs to tenant
// i%100 and shard (i/100)%64 and covers one time slot of its (tenant,
// shard): slot i/6400, so every (tenant, shard) has a run of consecutive
// blocks. IDs are 26-character ULID-like strings stamped with the arrival
// time (as ingest does when it flushes a segment), so ID order is arrival
// order.
const (
	benchBlocks   = 1_000_000
	benchTenants  = 100
	benchShards   = 64
	benchDatasets = 5
	benchSpan     = 30 * 24 * time.Hour
)

var (
	arrivalStep = int64(benchSpan) / benchBlocks
	benchStart  = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	benchSlot   = int64(benchSpan) / (benchBlocks / (benchTenants * benchShards))
)

func benchTenant(i int) string { return fmt.Sprintf("tenant-%03d", i) }

const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

func ulid(ms int64, rnd *rand.Rand) string {
	var b [26]byte
	for i := 9; i >= 0; i-- {
		b[i] = crockford[ms&31]
		ms >>= 5
	}
	for i := 10; i < 26; i++ {
		b[i] = crockford[rnd.IntN(32)]
	}
	return string(b[:])
}

// makeBenchBlocks builds the population (in arrival order).
func makeBenchBlocks(n int) []ck.BlockMeta {
	rnd := rand.New(rand.NewPCG(1, 2))
	tenants := make([]string, benchTenants)
	for i := range tenants {
		tenants[i] = benchTenant(i)
	}
	names := []string{"service-a", "service-b", "service-c", "service-d", "service-e"}
	out := make([]ck.BlockMeta, n)
	for i := range out {
		slot := int64(i / (benchTenants * benchShards))
		lo := benchStart + slot*benchSlot + rnd.Int64N(int64(time.Minute))
		hi := lo + benchSlot - int64(2*time.Minute) + rnd.Int64N(int64(time.Minute))
		b := ck.BlockMeta{
			ID:      ulid((benchStart+int64(i)*arrivalStep)/int64(time.Millisecond), rnd),
			Tenant:  tenants[i%benchTenants],
			Shard:   uint32(i/benchTenants) % benchShards,
			MinTime: lo, MaxTime: hi,
			Size:     1 << 20,
			Datasets: make([]ck.DatasetMeta, benchDatasets),
		}
		for d := range b.Datasets {
			b.Datasets[d] = ck.DatasetMeta{Name: names[d], Size: 200 << 10, Records: 1000, MinTime: lo, MaxTime: hi}
		}
		out[i] = b
	}
	return out
}

func buildIndex(tb testing.TB, metas []ck.BlockMeta) *Index {
	x, err := New(DefaultConfig())
	require.NoError(tb, err)
	for i := range metas {
		if err := x.Add(ck.Entry{Index: uint64(i + 1)}, metas[i].MinTime, &metas[i]); err != nil {
			tb.Fatal(err)
		}
	}
	return x
}

// cpuPerOp reports the process CPU time per operation of b's loop, from a
// measurement taken before it (see processCPU).
func cpuPerOp(b *testing.B, start time.Duration) {
	if start > 0 {
		b.ReportMetric(float64((processCPU()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

var benchFixture = sync.OnceValue(func() []ck.BlockMeta { return makeBenchBlocks(benchBlocks) })

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkIndexAdd adds 1,000,000 blocks of 5 datasets each and reports the
// heap growth per block (B/block) after garbage collection. The blocks'
// strings (IDs, names) are allocated before the measurement and shared with
// the index, so the figure is the index's own memory beyond the bytes of
// strings. Target (BENCHMARKS.md): ≤ 200 B/block.
func BenchmarkIndexAdd(b *testing.B) {
	metas := benchFixture()
	var perBlock, perAdd float64
	for b.Loop() {
		b.StopTimer()
		before := heapInUse()
		b.StartTimer()
		start := time.Now()
		x := buildIndex(b, metas)
		perAdd = float64(time.Since(start).Nanoseconds()) / benchBlocks
		b.StopTimer()
		perBlock = float64(heapInUse()-before) / benchBlocks
		runtime.KeepAlive(x)
		b.StartTimer()
	}
	b.ReportMetric(perBlock, "B/block")
	b.ReportMetric(perAdd, "ns/block")
	b.ReportMetric(200, "target-B/block")
}

// benchIndex is the 1,000,000-block index, built from a private population
// that is dropped once built (the index keeps only its strings), so that
// garbage collections during the measurement mark the index alone, as
// they would in a server.
var benchIndex = sync.OnceValue(func() *Index {
	x := buildIndex(nil, makeBenchBlocks(benchBlocks))
	runtime.GC()
	return x
})

// BenchmarkIndexQuery queries one tenant over one hour (random tenants and
// hours) in the 1,000,000-block index. Target: ≤ 10 µs + 100 ns per
// returned block (reported as target-ns/op, from blocks/op). "meta"
// materializes every returned block's metadata (View.Query, 5 datasets per
// block); "ids" returns the IDs only (View.QueryIDs). cpu-ns/op is the
// process CPU time per query, less inflated than ns/op on a shared machine.
func BenchmarkIndexQuery(b *testing.B) {
	v := benchIndex().View()
	rnd := rand.New(rand.NewPCG(3, 4))
	type q struct {
		tenant   string
		from, to int64
	}
	qs := make([]q, 1024)
	for i := range qs {
		from := benchStart + rnd.Int64N(int64(benchSpan-time.Hour))
		qs[i] = q{benchTenant(rnd.IntN(benchTenants)), from, from + int64(time.Hour)}
	}
	run := func(b *testing.B, mode string) {
		blocks := 0
		i := 0
		cpu := processCPU()
		for b.Loop() {
			q := qs[i%len(qs)]
			i++
			switch mode {
			case "ids":
				blocks += len(v.QueryIDs(q.tenant, q.from, q.to, nil))
			default:
				for m := range v.Query(q.tenant, q.from, q.to, nil) {
					_ = m
					blocks++
				}
			}
		}
		cpuPerOp(b, cpu)
		per := float64(blocks) / float64(b.N)
		b.ReportMetric(per, "blocks/op")
		b.ReportMetric(10_000+100*per, "target-ns/op")
	}
	b.Run("meta", func(b *testing.B) { run(b, "meta") })
	b.Run("ids", func(b *testing.B) { run(b, "ids") })
}

// BenchmarkIndexReplace replaces 20 blocks of one tenant and shard,
// consecutive in time, by 1 output in the 1,000,000-block index, in a
// steady state. Target (BENCHMARKS.md): ≤ 20 µs/op.
//
// Steady state: one replacement a millisecond of log time; after each
// (untimed) 19 new level-0 blocks arrive, so the index keeps its 1,000,000
// live blocks, and a cleanup job confirms the 20 tombstones of the
// replacement made a second (1,000 replacements) earlier, so the pending
// tombstones stay at 20,000; deletion records and replacement results are
// forgotten after a second too (Index.Expire, as the state machine calls
// it after every entry). The cleanup job's release opens a view, as a
// host's poll does, so the next replacement copies the leaves it writes
// that the view shared. The first 1,000 replacements are a warm-up,
// untimed; ns/op is Replace alone.
//
// The sources become one tombstone each, as before cluster version 6,
// except in "records", "arrival" with one tombstone record per
// replacement (Index.SetRecords), as the state machine writes them from
// version 6.
//
// In "arrival" the replacements come in the order a planner creates the
// jobs, the order their last source arrived (with 100 × 64 (tenant, shard)
// pairs, consecutive jobs are for different pairs but neighbouring times):
// the realistic case. In "random" they come in random order, so every
// source lookup misses the CPU caches: the adversarial case.
func BenchmarkIndexReplace(b *testing.B) {
	metas := benchFixture()
	groups := arrivalGroups(metas)
	b.Run("arrival", func(b *testing.B) { benchReplace(b, metas, groups, 1, false, nil) })
	b.Run("records", func(b *testing.B) { benchReplace(b, metas, groups, 1, true, nil) })
	// A poll's completions share their entry's log time: 16 replacements
	// a millisecond, whose tombstones have the same release time.
	b.Run("poll=16", func(b *testing.B) { benchReplace(b, metas, groups, 16, false, nil) })
	shuffled := slices.Clone(groups)
	rnd := rand.New(rand.NewPCG(5, 6))
	rnd.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	b.Run("random", func(b *testing.B) { benchReplace(b, metas, shuffled, 1, false, nil) })
}

// arrivalGroups returns groups of 20 blocks of one (tenant, shard),
// consecutive in time, in the order their last block arrived.
func arrivalGroups(metas []ck.BlockMeta) [][]int {
	stride := benchTenants * benchShards
	var groups [][]int
	for base := 0; base+20*stride <= len(metas); base += 20 * stride {
		for ts := 0; ts < stride; ts++ {
			g := make([]int, 20)
			for k := range g {
				g[k] = base + ts + k*stride
			}
			groups = append(groups, g)
		}
	}
	return groups
}

// BenchmarkIndexView is BenchmarkIndexReplace/arrival with a view opened,
// read and closed before each replacement, as the state machine's Prepare
// does for a worker's poll: ns/op is the view and the replacement, which
// pays for the trees the view froze. In "poll" the view reads the
// releasable tombstones (the tree of unattached tombstones); in "query" it
// also queries the tenant of the next replacement (the time index and the
// names, so the replacement clones the runs it touches).
func BenchmarkIndexView(b *testing.B) {
	metas := benchFixture()
	groups := arrivalGroups(metas)
	b.Run("poll", func(b *testing.B) {
		benchReplace(b, metas, groups, 1, false, func(v *View, now int64, _ *ck.BlockMeta) {
			if _, ok := v.OldestUnattachedReleasable(now); ok {
				v.Releasable(now)()
			}
		})
	})
	b.Run("query", func(b *testing.B) {
		benchReplace(b, metas, groups, 1, false, func(v *View, now int64, m *ck.BlockMeta) {
			if _, ok := v.OldestUnattachedReleasable(now); ok {
				v.Releasable(now)()
			}
			v.QueryIDs(m.Tenant, m.MinTime, m.MaxTime, nil)
		})
	})
}

// replaceWindow is the steady state's horizon, in replacements (one a
// millisecond of log time): tombstones are released, and deletion records
// and results forgotten, this long after their creation.
const replaceWindow = 1000

// benchReplace runs the steady state of BenchmarkIndexReplace, perTick
// replacements a millisecond of log time, with tombstone records if
// records is set. If poll is not nil, every replacement is preceded by a
// view that poll reads (given the first source of the replacement) and
// that is then closed; both are timed.
func benchReplace(b *testing.B, metas []ck.BlockMeta, groups [][]int, perTick int, records bool, poll func(v *View, now int64, first *ck.BlockMeta)) {
	cfg := DefaultConfig()
	cfg.CleanupDelay = replaceWindow * time.Millisecond
	cfg.DedupHorizon = replaceWindow * time.Millisecond
	cfg.CompletedRetention = replaceWindow * time.Millisecond
	rnd := rand.New(rand.NewPCG(7, 8))
	var (
		x       *Index
		now     int64
		next    int
		entry   uint64
		arrived int64 // arrival time of the latest new block (ms)
	)
	build := func() {
		x = buildIndex(b, metas)
		require.NoError(b, x.SetConfig(cfg))
		x.SetRecords(records)
		now, next, entry = x.View().Now(), 0, benchBlocks // the index clock: its latest block
		arrived = (benchStart + int64(benchBlocks)*arrivalStep) / int64(time.Millisecond)
	}
	sources := make([]string, 20)
	// replace replaces the next group; steady does the untimed rest of a
	// step: arrivals, a cleanup job, expiry.
	replace := func() {
		g := groups[next]
		if poll != nil {
			v := x.View()
			poll(v, now, &metas[g[0]])
			v.Close()
		}
		next++
		for k, i := range g {
			sources[k] = metas[i].ID
		}
		first, last := &metas[g[0]], &metas[g[len(g)-1]]
		job := "job-" + strconv.Itoa(next)
		out := ck.BlockMeta{
			ID: ck.OutputID(job, 1, 0), Tenant: first.Tenant, Shard: first.Shard, Level: 1,
			MinTime: first.MinTime, MaxTime: last.MaxTime, Size: 20 << 20,
			Datasets: make([]ck.DatasetMeta, benchDatasets),
		}
		for d := range out.Datasets {
			out.Datasets[d] = first.Datasets[d]
			out.Datasets[d].MinTime, out.Datasets[d].MaxTime = first.MinTime, last.MaxTime
		}
		if next%perTick == 0 {
			now += int64(time.Millisecond)
		}
		entry++
		r := x.Replace(ck.Entry{Index: entry}, now, job, fencing.Token(1), sources, []ck.BlockMeta{out})
		if !r.Applied {
			b.Fatalf("refused: %s", r.Detail)
		}
	}
	steady := func() {
		for k := range 19 {
			m := metas[(next*19+k)%len(metas)]
			arrived++
			m.ID = ulid(arrived, rnd)
			entry++
			if err := x.Add(ck.Entry{Index: entry}, now, &m); err != nil {
				b.Fatal(err)
			}
		}
		cleanup := "cleanup-" + strconv.Itoa(next)
		if ts := ReleaseTo(x, now, cleanup, 20); len(ts) > 0 {
			x.Confirm(now, cleanup)
		}
		x.Expire(now)
	}
	warm := func() {
		for range replaceWindow {
			replace()
			steady()
		}
	}
	build()
	warm()
	runtime.GC()
	for b.Loop() {
		if next == len(groups) {
			b.StopTimer()
			x = nil
			build()
			warm()
			runtime.GC()
			b.StartTimer()
		}
		replace()
		b.StopTimer()
		steady()
		b.StartTimer()
	}
	b.StopTimer()
	st := x.Stats()
	b.ReportMetric(float64(x.View().Len()), "blocks")
	b.ReportMetric(float64(st.TombstonesPending+st.TombstonesReleasable+st.TombstonesAttached), "tombstones")
}

// BenchmarkIndexRestore restores the 1,000,000-block index from its
// snapshot. Target: well under 1 s (a full state-machine restore, index and
// planner queue, must take ≤ 1.2 s). Run it on its own: the snapshot is
// built from a private population that is dropped before timing, so the
// heap holds nothing but the snapshot bytes and the restored index (other
// benchmarks cache a 1,000,000-block population, which would make every
// garbage collection during the restore mark an extra gigabyte).
func BenchmarkIndexRestore(b *testing.B) {
	snap := func() []byte {
		var buf bytes.Buffer
		require.NoError(b, buildIndex(b, makeBenchBlocks(benchBlocks)).View().Snapshot(&buf))
		return buf.Bytes()
	}()
	runtime.GC()
	b.ReportMetric(float64(len(snap))/benchBlocks, "snapshot-B/block")
	b.SetBytes(int64(len(snap)))
	cpu := processCPU()
	for b.Loop() {
		x, err := Restore(bytes.NewReader(snap))
		if err != nil {
			b.Fatal(err)
		}
		if x.View().Len() != benchBlocks {
			b.Fatal(x.View().Len())
		}
	}
	cpuPerOp(b, cpu)
}

// BenchmarkIndexSnapshot writes the 1,000,000-block index's snapshot.
func BenchmarkIndexSnapshot(b *testing.B) {
	x := benchIndex()
	var buf bytes.Buffer
	for b.Loop() {
		buf.Reset()
		require.NoError(b, x.View().Snapshot(&buf))
	}
	b.SetBytes(int64(buf.Len()))
}
