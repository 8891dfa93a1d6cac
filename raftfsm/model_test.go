package raftfsm_test

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/compactkittest"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/scheduler"
)

// fsmModel drives a state machine and a replica with random commands and
// checks the invariants of ARCHITECTURE.md, "Contracts", after every step.
type fsmModel struct {
	t       *rapid.T
	n       *node
	replica *node
	cfg     raftfsm.Config

	meta     map[string]ck.BlockMeta // every block ever accepted (ingested or output)
	lineage  map[string][]string     // block → the ingested blocks whose data it holds
	ingested []string                // accepted ingested blocks, in order
	dropped  map[string]bool         // blocks removed by retention
	replaced map[string]bool         // blocks replaced by a committed output
	fleet    *compactkittest.Fleet
	lastSeq  map[string]uint64
	lastResp map[string]*ck.PollResponse
}

func newFSMModel(t *rapid.T) *fsmModel {
	cfg := testConfig()
	cfg.Scheduler.MaxQueueSize = rapid.IntRange(0, 6).Draw(t, "queueLimit")
	cfg.Scheduler.MaxFailures = uint32(rapid.IntRange(0, 3).Draw(t, "maxFailures"))
	cfg.Index.CleanupDelay = time.Minute
	m := &fsmModel{
		t: t, cfg: cfg,
		n:        newNode(t, cfg, raftfsm.WithCleanupAfter(0)),
		replica:  newNode(t, cfg, raftfsm.WithCleanupAfter(time.Hour)),
		meta:     map[string]ck.BlockMeta{},
		lineage:  map[string][]string{},
		dropped:  map[string]bool{},
		replaced: map[string]bool{},
		fleet:    compactkittest.NewFleet("w1", "w2", "w3"),
		lastSeq:  map[string]uint64{},
		lastResp: map[string]*ck.PollResponse{},
	}
	return m
}

// apply applies cmd on the node and the replica and checks they agree.
func (m *fsmModel) apply(cmd *raftfsm.Command) *raftfsm.Result {
	res, err := m.n.apply(cmd)
	data := m.n.log[len(m.n.log)-1]
	rres, rerr := m.replica.f.Apply(ck.Entry{Index: m.n.index, Term: 1, Time: m.n.now}, data)
	m.replica.index = m.n.index
	if err != nil {
		require.Error(m.t, rerr)
		return nil
	}
	require.NoError(m.t, rerr)
	requireSameResponse(m.t, res.Poll, rres.Poll)
	return res
}

func (m *fsmModel) addBlocks(t *rapid.T) {
	space := compactkittest.Space{Tenants: []string{"t1", "t2"}, Shards: []uint32{0, 1}, Start: t0, Span: 100 * time.Second}
	bs := compactkittest.Blocks(space, 1, 5).Draw(t, "blocks")
	if len(m.ingested) > 0 && rapid.IntRange(0, 9).Draw(t, "dup") == 0 {
		bs = append(bs, m.meta[rapid.SampledFrom(m.ingested).Draw(t, "dupID")])
	}
	res := m.apply(&raftfsm.Command{AddBlocks: &raftfsm.AddBlocks{Blocks: bs}})
	for i, br := range res.Blocks {
		if br.Err == nil {
			m.meta[br.ID] = bs[i]
			m.lineage[br.ID] = []string{br.ID}
			m.ingested = append(m.ingested, br.ID)
		} else {
			_, known := m.meta[br.ID]
			require.True(t, known || slices.ContainsFunc(bs[:i], func(b ck.BlockMeta) bool { return b.ID == br.ID }), "refused new block %s: %v", br.ID, br.Err)
		}
	}
}

// poll applies a poll of the fleet: a retry (the reply was lost) gets the
// recorded response and acts on nothing.
func (m *fsmModel) poll(t *rapid.T) {
	req := m.fleet.Poll(m.n.f).Draw(t, "poll")
	wid := req.WorkerID
	held := m.fleet.Held(wid)
	cmd, err := m.n.f.Prepare(req, m.n.now)
	require.NoError(t, err)
	res := m.apply(cmd)
	if req.Seq == m.lastSeq[wid] {
		require.True(t, res.Replayed)
		requireSameResponse(t, m.lastResp[wid], res.Poll)
		return
	}
	require.False(t, res.Replayed)
	m.lastSeq[wid], m.lastResp[wid] = req.Seq, res.Poll
	// Record committed replacements.
	for i, cr := range res.Changes {
		if cr.Kind != ck.ChangeComplete || !cr.Applied || cr.Replace == nil || !cr.Replace.Applied {
			continue
		}
		c := cmd.Poll.Update.Changes[i]
		var lin []string
		for _, src := range held[c.Job].Plan.Sources {
			require.False(t, m.replaced[src], "block %s compacted twice", src)
			m.replaced[src] = true
			lin = append(lin, m.lineage[src]...)
		}
		for _, out := range c.Outputs {
			m.meta[out.ID] = out
			m.lineage[out.ID] = lin
		}
	}
	m.fleet.Answered(req, res.Poll)
}

func (m *fsmModel) check(t *rapid.T) {
	require.Equal(t, m.n.snapshot(), m.replica.snapshot(), "replicas diverged")
	view := m.n.f.Index()
	st := m.n.f.Stats()
	final := m.cfg.Planner.FinalLevel
	// Every ingested block's data is in exactly one live block, unless
	// retention dropped it.
	seen := map[string]string{}
	below := 0
	for _, b := range view.Blocks("", 0) {
		if b.Level < final {
			below++
		}
		for _, id := range m.lineage[b.ID] {
			prev, dup := seen[id]
			require.False(t, dup, "data of %s in %s and %s", id, prev, b.ID)
			seen[id] = b.ID
		}
	}
	for _, id := range m.ingested {
		if _, ok := seen[id]; !ok {
			require.True(t, m.droppedData(id), "data of %s lost", id)
		}
	}
	// Live blocks below the final level are queued, claimed or quarantined.
	require.Equal(t, below, st.Planner.Queued+st.Planner.Claimed+st.Planner.Quarantined)
	// No block is claimed by two jobs; every claimed block is live.
	claimed := map[string]string{}
	jobs, _ := m.n.f.Jobs(scheduler.Filter{}, "", scheduler.MaxListLimit)
	for _, js := range jobs {
		_, plan, ok := m.n.f.Job(js.Name)
		require.True(t, ok)
		for _, src := range plan.Sources {
			other, dup := claimed[src]
			require.False(t, dup, "block %s in jobs %s and %s", src, other, js.Name)
			claimed[src] = js.Name
			require.True(t, view.Live(src), "job %s claims %s, not live", js.Name, src)
		}
	}
	require.Equal(t, st.Planner.Claimed, len(claimed))
}

// droppedData reports whether ingested block id's data left the index by
// retention (of the block itself or of an output holding it).
func (m *fsmModel) droppedData(id string) bool {
	for b := range m.dropped {
		if slices.Contains(m.lineage[b], id) {
			return true
		}
	}
	return false
}

func TestFSMModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newFSMModel(t)
		t.Repeat(map[string]func(*rapid.T){
			"add":  m.addBlocks,
			"poll": m.poll,
			"advance": func(t *rapid.T) {
				m.n.advance(time.Duration(rapid.IntRange(0, 40).Draw(t, "seconds")) * time.Second)
				m.replica.now = m.n.now
			},
			"tookOffice": func(t *rapid.T) { m.apply(&raftfsm.Command{TookOffice: &raftfsm.TookOffice{}}) },
			"retention": func(t *rapid.T) {
				tenant := rapid.SampledFrom([]string{"t1", "t2"}).Draw(t, "tenant")
				before := t0 + int64(rapid.IntRange(0, 30).Draw(t, "before"))*int64(time.Second)
				res := m.apply(&raftfsm.Command{Retention: &raftfsm.Retention{Tenant: tenant, Before: before}})
				for _, id := range res.Dropped {
					m.dropped[id] = true
				}
			},
			"cancel": func(t *rapid.T) {
				jobs, _ := m.n.f.Jobs(scheduler.Filter{}, "", 0)
				if len(jobs) == 0 {
					// rapid: the action does not apply now; another is drawn.
					t.Skip("no job")
				}
				j := rapid.SampledFrom(jobs).Draw(t, "job")
				res := m.apply(&raftfsm.Command{Operator: &raftfsm.Operator{Action: raftfsm.OpCancel, Job: j.Name}})
				require.Equal(t, []string{j.Name}, res.Cancelled)
			},
			"retry": func(t *rapid.T) {
				m.apply(&raftfsm.Command{Operator: &raftfsm.Operator{Action: raftfsm.OpRetry}})
			},
			"requeue": func(t *rapid.T) {
				q, _ := m.n.f.Quarantined("", 0)
				if len(q) == 0 {
					// rapid: the action does not apply now; another is drawn.
					t.Skip("nothing quarantined")
				}
				m.apply(&raftfsm.Command{Operator: &raftfsm.Operator{Action: raftfsm.OpRequeue, Blocks: []string{q[0].ID}}})
			},
			"restore": func(t *rapid.T) {
				snap := m.n.snapshot()
				f, err := raftfsm.Restore(bytes.NewReader(snap))
				require.NoError(t, err)
				m.n.f = f
				require.Equal(t, snap, m.n.snapshot())
			},
			"": m.check,
		})
	})
}

// requireSameResponse compares responses by their encoding (nil and empty
// slices are the same response).
func requireSameResponse(t tb, a, b *ck.PollResponse) {
	t.Helper()
	require.Equal(t, a == nil, b == nil)
	if a == nil {
		return
	}
	ab, err := a.MarshalBinary()
	require.NoError(t, err)
	bb, err := b.MarshalBinary()
	require.NoError(t, err)
	require.Equal(t, ab, bb)
}
