package demo

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/metrics/prom"
	"github.com/compactkit/compactkit/raftfsm"
)

func smallData() DataConfig {
	return DataConfig{Segments: 8, Tenants: 3, Shards: 2, Records: 5,
		Start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Span: time.Hour, Seed: 7}
}

// ingestInto writes the segments to store and returns them, as live
// level-0 blocks.
func ingestInto(t *testing.T, d DataConfig, store blockmerge.Store, l *Ledger) []ck.BlockMeta {
	ctx := context.Background()
	var live []ck.BlockMeta
	for i := range d.Segments {
		info, sets := d.Segment(i)
		l.Claim(sets)
		m, err := blockmerge.WriteBlock(ctx, store, info, sets)
		require.NoError(t, err)
		l.AddSegment(m)
		live = append(live, m)
	}
	return live
}

func TestSegmentsAreDeterministic(t *testing.T) {
	d := smallData()
	for i := range d.Segments {
		a1, s1 := d.Segment(i)
		a2, s2 := d.Segment(i)
		assert.Equal(t, a1, a2)
		assert.Equal(t, s1, s2)
		assert.NotEmpty(t, s1)
		assert.Equal(t, uint32(i%d.Shards), a1.Shard)
	}
}

func TestVerifyPassesAndCatchesDefects(t *testing.T) {
	ctx := context.Background()
	d := smallData()
	store := blockmerge.NewMemStore()
	l := NewLedger()
	live := ingestInto(t, d, store, l)
	n, _ := l.Records()
	require.Positive(t, n)
	st := raftfsm.Stats{}
	st.Index.Blocks = int64(len(live))

	v, levels, err := Verify(ctx, store, live, l, st)
	require.NoError(t, err)
	assert.True(t, v.OK(), v.Failed())
	assert.Equal(t, n, v.Records)
	require.Len(t, levels, 1)
	assert.Equal(t, len(live), levels[0].Objects)

	failed := func(v Verification) []string {
		var out []string
		for _, c := range v.Checks {
			if !c.OK {
				out = append(out, c.Name)
			}
		}
		return out
	}

	// A block missing from the index: its records are missing and its
	// object is a leftover.
	v, _, err = Verify(ctx, store, live[1:], l, st)
	require.NoError(t, err)
	assert.Subset(t, failed(v), []string{"records", "checksum", "exactly once", "no source left", "no orphan", "index = object store"})

	// A stray object (an orphan output).
	require.NoError(t, store.Put(ctx, "blocks/job-1/99/0", bytes.NewReader([]byte("x"))))
	v, _, err = Verify(ctx, store, live, l, st)
	require.NoError(t, err)
	assert.Equal(t, []string{"no orphan"}, failed(v))
	require.NoError(t, store.Delete(ctx, "blocks/job-1/99/0"))

	// A record twice: a copy of a segment under another ID.
	info, sets := d.Segment(0)
	l2 := NewLedger()
	l2.Claim(sets) // same records as the ledger's first segment
	info.ID = "copy/0"
	cp, err := blockmerge.WriteBlock(ctx, store, info, sets)
	require.NoError(t, err)
	st2 := st
	st2.Index.Blocks++
	v, _, err = Verify(ctx, store, append(append([]ck.BlockMeta(nil), live...), cp), l, st2)
	require.NoError(t, err)
	assert.Contains(t, failed(v), "exactly once")
	assert.Contains(t, failed(v), "records")
	require.NoError(t, store.Delete(ctx, ck.ObjectKey(cp.ID)))

	// An index entry without its object.
	require.NoError(t, store.Delete(ctx, ck.ObjectKey(live[0].ID)))
	v, _, err = Verify(ctx, store, live, l, st)
	require.NoError(t, err)
	assert.Contains(t, failed(v), "index = object store")

	// Work still pending.
	st.Scheduler.Jobs = 1
	v, _, err = Verify(ctx, store, live[1:], l, st)
	require.NoError(t, err)
	assert.Contains(t, failed(v), "nothing pending")
}

func TestLedgerMakesRecordsUnique(t *testing.T) {
	l := NewLedger()
	rec := blockmerge.Record{Key: []byte("k"), Timestamp: 5, Value: []byte("v")}
	sets := []blockmerge.Dataset{{Tenant: "a", Name: "d", Records: []blockmerge.Record{rec, rec}}}
	l.Claim(sets)
	again := []blockmerge.Dataset{{Tenant: "a", Name: "d", Records: []blockmerge.Record{rec}}}
	l.Claim(again)
	n, _ := l.Records()
	assert.Equal(t, 3, n)
	assert.NotEqual(t, sets[0].Records[0].Timestamp, sets[0].Records[1].Timestamp)
	assert.NotEqual(t, int64(5), again[0].Records[0].Timestamp)
}

func TestChart(t *testing.T) {
	var samples []Sample
	for i := range 20 {
		samples = append(samples, Sample{At: time.Duration(i) * 100 * time.Millisecond,
			Queued: []int{20 - i, i, 0}, Jobs: i % 3, ReadAmp: float64(40 - 2*i), Tombstones: i})
	}
	for _, name := range []string{"c.svg", "c.png"} {
		path := t.TempDir() + "/" + name
		require.NoError(t, WriteChart(path, "test", samples, []float64{0.5}))
	}
	assert.Error(t, WriteChart(t.TempDir()+"/x.png", "none", nil, nil))
}

func TestServeMetrics(t *testing.T) {
	f, err := raftfsm.New(StateConfig(), FSMOptions()...)
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	reg.MustRegister(prom.NewFSMCollector(f.Stats))
	srv, err := Serve("127.0.0.1:0", nil, reg)
	require.NoError(t, err)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), "compactkit_planner_queued_blocks")
}

func TestConfigValidate(t *testing.T) {
	assert.NoError(t, DefaultConfig().Validate())
	sc := StateConfig()
	require.NoError(t, sc.Validate())
	c := DefaultConfig()
	c.PartitionWorkers = c.Workers
	assert.Error(t, c.Validate())
	c = DefaultConfig()
	c.Data.Segments = 0
	assert.Error(t, c.Validate())
}

func ExampleBytes() {
	fmt.Println(Bytes(512), Bytes(3<<10), Bytes(19<<20+1<<19))
	// Output: 512 B 3.0 KiB 19.5 MiB
}
