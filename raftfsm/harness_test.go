package raftfsm_test

import (
	"bytes"
	"fmt"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/raftfsm"
)

// tb is what the harness needs of *testing.T and *rapid.T.
type tb interface {
	require.TestingT
	Helper()
}

// node is a state machine with its own log position, for tests.
type node struct {
	t     tb
	f     *raftfsm.FSM
	index uint64
	now   int64
	log   [][]byte // every entry applied, index i+1 at log[i]
	// version is the command version the node encodes (0: the newest).
	version byte
}

const t0 = int64(1_700_000_000_000_000_000)

func newNode(t tb, cfg raftfsm.Config, opts ...raftfsm.Option) *node {
	t.Helper()
	f, err := raftfsm.New(cfg, opts...)
	require.NoError(t, err)
	return &node{t: t, f: f, now: t0}
}

func testConfig() raftfsm.Config {
	cfg := raftfsm.DefaultConfig()
	cfg.Planner.Levels[0].MaxBlocks = 4
	cfg.Planner.Levels[1].MaxBlocks = 4
	cfg.Planner.Levels[2].MaxBlocks = 4
	return cfg
}

func (n *node) advance(d time.Duration) { n.now += int64(d) }

// apply encodes cmd, stamps it with the node's clock if it has no time,
// and applies it as the next entry.
func (n *node) apply(cmd *raftfsm.Command) (*raftfsm.Result, error) {
	n.t.Helper()
	if cmd.Time == 0 {
		cmd.Time = n.now
	}
	data, err := cmd.MarshalVersion(raftfsm.CommandVersion)
	if n.version != 0 {
		data, err = cmd.MarshalVersion(n.version)
	}
	require.NoError(n.t, err)
	n.index++
	n.log = append(n.log, data)
	res, err := n.f.Apply(ck.Entry{Index: n.index, Term: 1, Time: n.now}, data)
	return res, err
}

func (n *node) mustApply(cmd *raftfsm.Command) *raftfsm.Result {
	n.t.Helper()
	res, err := n.apply(cmd)
	require.NoError(n.t, err)
	return res
}

// poll prepares and applies a poll, returning the response.
func (n *node) poll(req *ck.PollRequest) *ck.PollResponse {
	n.t.Helper()
	cmd, err := n.f.Prepare(req, n.now)
	require.NoError(n.t, err)
	res := n.mustApply(cmd)
	require.NotNil(n.t, res.Poll)
	return res.Poll
}

func (n *node) snapshot() []byte {
	n.t.Helper()
	var b bytes.Buffer
	require.NoError(n.t, n.f.Snapshot(&b))
	return b.Bytes()
}

func block(id, tenant string, shard, level uint32, minT int64) ck.BlockMeta {
	return ck.BlockMeta{
		ID: id, Tenant: tenant, Shard: shard, Level: level,
		MinTime: minT, MaxTime: minT + int64(time.Second), Size: 100,
		Datasets: []ck.DatasetMeta{{Name: "ds", Size: 100, Records: 10, MinTime: minT, MaxTime: minT + int64(time.Second)}},
	}
}

func blocks(prefix, tenant string, shard uint32, n int, minT int64) []ck.BlockMeta {
	out := make([]ck.BlockMeta, n)
	for i := range out {
		out[i] = block(fmt.Sprintf("%s-%03d", prefix, i), tenant, shard, 0, minT+int64(i)*int64(time.Second))
	}
	return out
}

// outputs returns the outputs a worker would write for plan: one block one
// level up spanning the sources.
func (n *node) outputs(plan *ck.JobPlan, token uint64) []ck.BlockMeta {
	n.t.Helper()
	view := n.f.Index()
	defer view.Close()
	var minT, maxT int64 = 1<<63 - 1, 0
	var size int64
	for _, id := range plan.Sources {
		b, ok := view.Lookup(id)
		require.True(n.t, ok, "source %s not live", id)
		minT, maxT = min(minT, b.MinTime), max(maxT, b.MaxTime)
		size += b.Size
	}
	return []ck.BlockMeta{outputMeta(plan, fencingToken(token), minT, maxT, size)}
}

// outputMeta is the single output a test worker writes for plan: one
// dataset spanning the sources' time range, with their total size.
func outputMeta(plan *ck.JobPlan, token fencing.Token, minT, maxT, size int64) ck.BlockMeta {
	return ck.BlockMeta{
		ID: ck.OutputID(plan.Name, token, 0), Tenant: plan.Tenant, Shard: plan.Shard, Level: plan.Level + 1,
		MinTime: minT, MaxTime: maxT, Size: size,
		Datasets: []ck.DatasetMeta{{Name: "ds", Size: size, Records: 10, MinTime: minT, MaxTime: maxT}},
	}
}

func fencingToken(t uint64) fencing.Token { return fencing.Token(t) }
