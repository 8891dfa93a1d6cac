package prom_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/index"
	"github.com/compactkit/compactkit/raftfsm"
)

// t0 is the log time of the first entry (unix nanoseconds).
const t0 = int64(1_700_000_000_000_000_000)

// node is a state machine with its own log position and clock.
type node struct {
	t     testing.TB
	f     *raftfsm.FSM
	index uint64
	now   int64
}

func newNode(t testing.TB) *node {
	t.Helper()
	cfg := raftfsm.DefaultConfig()
	for i := range cfg.Planner.Levels {
		cfg.Planner.Levels[i].MaxBlocks = 4
	}
	f, err := raftfsm.New(cfg)
	require.NoError(t, err)
	return &node{t: t, f: f, now: t0}
}

func (n *node) advance(d time.Duration) { n.now += int64(d) }

func (n *node) apply(cmd *raftfsm.Command) *raftfsm.Result {
	n.t.Helper()
	if cmd.Time == 0 {
		cmd.Time = n.now
	}
	data, err := cmd.MarshalVersion(raftfsm.CommandVersion)
	require.NoError(n.t, err)
	n.index++
	res, err := n.f.Apply(ck.Entry{Index: n.index, Term: 1, Time: n.now}, data)
	require.NoError(n.t, err)
	return res
}

func (n *node) addBlocks(bs ...ck.BlockMeta) {
	n.t.Helper()
	for _, b := range n.tryAddBlocks(bs...) {
		require.NoError(n.t, b.Err)
	}
}

func (n *node) tryAddBlocks(bs ...ck.BlockMeta) []raftfsm.BlockResult {
	n.t.Helper()
	return n.apply(&raftfsm.Command{AddBlocks: &raftfsm.AddBlocks{Blocks: bs}}).Blocks
}

func (n *node) poll(req *ck.PollRequest) *ck.PollResponse {
	n.t.Helper()
	cmd, err := n.f.Prepare(req, n.now)
	require.NoError(n.t, err)
	res := n.apply(cmd)
	require.NotNil(n.t, res.Poll)
	return res.Poll
}

// output is the block a worker would write for plan: one level up,
// spanning the sources.
func (n *node) output(plan *ck.JobPlan, token fencing.Token) ck.BlockMeta {
	n.t.Helper()
	view := n.f.Index()
	var minT, maxT int64 = 1<<63 - 1, 0
	var size int64
	for _, id := range plan.Sources {
		b, ok := view.Lookup(id)
		require.True(n.t, ok, "source %s not live", id)
		minT, maxT = min(minT, b.MinTime), max(maxT, b.MaxTime)
		size += b.Size
	}
	return ck.BlockMeta{
		ID: ck.OutputID(plan.Name, token, 0), Tenant: plan.Tenant, Shard: plan.Shard, Level: plan.Level + 1,
		MinTime: minT, MaxTime: maxT, Size: size,
		Datasets: []ck.DatasetMeta{{Name: "ds", Size: size, Records: 10, MinTime: minT, MaxTime: maxT}},
	}
}

func blocks(prefix, tenant string, shard uint32, n int, size int64) []ck.BlockMeta {
	out := make([]ck.BlockMeta, n)
	for i := range out {
		minT := t0 + int64(i)*int64(time.Second)
		maxT := minT + int64(time.Second)
		out[i] = ck.BlockMeta{
			ID: fmt.Sprintf("%s-%03d", prefix, i), Tenant: tenant, Shard: shard,
			MinTime: minT, MaxTime: maxT, Size: size,
			Datasets: []ck.DatasetMeta{{Name: "ds", Size: size, Records: 10, MinTime: minT, MaxTime: maxT}},
		}
	}
	return out
}

// gather registers cs on a fresh pedantic registry (which checks that
// what is collected matches what is described) and gathers.
func gather(t *testing.T, cs ...prometheus.Collector) (*prometheus.Registry, map[string]*dto.MetricFamily) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	for _, c := range cs {
		require.NoError(t, reg.Register(c))
	}
	mfs, err := reg.Gather()
	require.NoError(t, err)
	byName := make(map[string]*dto.MetricFamily, len(mfs))
	for _, mf := range mfs {
		byName[mf.GetName()] = mf
	}
	return reg, byName
}

// value returns the value of the series of family name whose labels are
// exactly labels ("k=v" pairs); it fails the test if there is none.
func value(t *testing.T, mfs map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	mf, ok := mfs[name]
	require.True(t, ok, "no metric family %s", name)
	want := strings.Join(labels, ",")
	for _, m := range mf.GetMetric() {
		got := make([]string, 0, len(m.GetLabel()))
		for _, lp := range m.GetLabel() {
			got = append(got, lp.GetName()+"="+lp.GetValue())
		}
		if strings.Join(got, ",") != want {
			continue
		}
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			return m.GetCounter().GetValue()
		case dto.MetricType_GAUGE:
			return m.GetGauge().GetValue()
		default:
			t.Fatalf("metric %s has type %s", name, mf.GetType())
		}
	}
	t.Fatalf("metric %s has no series {%s}", name, want)
	return 0
}

func indexLevel(tenant string, level uint32, blocks, bytes int64) index.LevelStats {
	return index.LevelStats{Tenant: tenant, Level: level, Blocks: blocks, Bytes: bytes}
}
