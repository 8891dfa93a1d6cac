package compactkittest_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/compactkittest"
	"github.com/compactkit/compactkit/internal/ident"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/scheduler"
)

func testConfig() raftfsm.Config {
	cfg := raftfsm.DefaultConfig()
	for i := range cfg.Planner.Levels {
		cfg.Planner.Levels[i].MaxBlocks = 3
	}
	return cfg
}

// Generated blocks are valid and inside their space.
func TestBlocksValid(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := compactkittest.Space{
			Tenants: rapid.SliceOfNDistinct(compactkittest.Name(), 1, 3, rapid.ID).Draw(t, "tenants"),
			Shards:  []uint32{rapid.Uint32().Draw(t, "shard")},
			Levels:  []uint32{0, 2},
			Start:   rapid.Int64Range(1, 1<<60).Draw(t, "start"),
			Span:    time.Duration(rapid.Int64Range(0, 1<<40).Draw(t, "span")),
		}
		end := s.Start + max(int64(s.Span), int64(0))
		if s.Span <= 0 {
			end = s.Start + int64(time.Hour)
		}
		bs := compactkittest.Blocks(s, 1, 5).Draw(t, "blocks")
		ids := map[string]bool{}
		for _, b := range bs {
			if err := b.Validate(); err != nil {
				t.Fatalf("invalid block: %v", err)
			}
			if ids[b.ID] {
				t.Fatalf("ID %s twice", b.ID)
			}
			ids[b.ID] = true
			if !slices.Contains(s.Tenants, b.Tenant) || b.Shard != s.Shards[0] || !slices.Contains(s.Levels, b.Level) {
				t.Fatalf("block %s outside the space: tenant %q shard %d level %d", b.ID, b.Tenant, b.Shard, b.Level)
			}
			if b.MinTime < s.Start || b.MaxTime > end {
				t.Fatalf("block %s: [%d, %d] outside [%d, %d]", b.ID, b.MinTime, b.MaxTime, s.Start, end)
			}
			var size int64
			for _, d := range b.Datasets {
				size += d.Size
			}
			if size != b.Size {
				t.Fatalf("block %s: size %d, datasets %d", b.ID, b.Size, size)
			}
		}
	})
}

func TestMalformedIDRefused(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		id := compactkittest.MalformedID().Draw(t, "id")
		if ident.ValidateID(id) == nil {
			t.Fatalf("malformed ID %q accepted", id)
		}
	})
}

// A history applies, entry by entry, to a fresh state machine, and two
// replicas that apply it write the same snapshot.
func TestHistoryReplays(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := testConfig()
		entries := compactkittest.History(cfg, 1, 60).Draw(t, "history")
		a, _ := raftfsm.New(cfg)
		b, _ := raftfsm.New(cfg)
		var last uint64
		for _, e := range entries {
			if e.Index <= last || e.Index > last+3 {
				t.Fatalf("entry %v after index %d", e.Entry, last)
			}
			last = e.Index
			if _, err := a.Apply(e.Entry, e.Data); err != nil {
				t.Fatalf("apply %v: %v", e.Entry, err)
			}
			if _, err := b.Apply(e.Entry, e.Data); err != nil {
				t.Fatalf("apply %v: %v", e.Entry, err)
			}
		}
		if !slices.Equal(snapshot(t, a), snapshot(t, b)) {
			t.Fatal("replicas diverged")
		}
	})
}

// A fleet's requests are valid and prepared without error against the
// state machine they were drawn against, and some complete jobs.
func TestFleetPolls(t *testing.T) {
	completed := 0
	rapid.Check(t, func(t *rapid.T) {
		n := newNode(t, testConfig())
		n.add(compactkittest.Blocks(compactkittest.Space{Tenants: []string{"acme"}}, 3, 9).Draw(t, "blocks"))
		fl := compactkittest.NewFleet()
		for range rapid.IntRange(1, 30).Draw(t, "polls") {
			req := fl.Poll(n.f).Draw(t, "poll")
			if err := req.Validate(); err != nil {
				t.Fatalf("invalid request: %v", err)
			}
			cmd, err := n.f.Prepare(req, n.now)
			if err != nil {
				t.Fatalf("prepare: %v", err)
			}
			res := n.apply(cmd)
			for _, j := range res.Poll.Jobs {
				if j.Outcome == ck.OutcomeCompleted {
					completed++
				}
			}
			fl.Answered(req, res.Poll)
		}
	})
	if completed == 0 {
		t.Fatal("no job completed")
	}
}

// A forged request is answered "no lease" for every update and changes no
// job.
func TestForgedPollHasNoLease(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := newNode(t, testConfig())
		n.add(compactkittest.Blocks(compactkittest.Space{Tenants: []string{"acme"}}, 3, 6).Draw(t, "blocks"))
		n.apply(mustPrepare(t, n, &ck.PollRequest{WorkerID: "w1", Seq: 1, FreeSlots: 2}))
		req := compactkittest.ForgedPoll(n.f).Draw(t, "forged")
		before, _ := n.f.Jobs(scheduler.Filter{}, "", 0)
		cmd, err := n.f.Prepare(req, n.now)
		if err != nil {
			return // refused outright: changed nothing
		}
		res := n.apply(cmd)
		for _, j := range res.Poll.Jobs {
			if j.Outcome != ck.OutcomeNoLease {
				t.Fatalf("forged report on %s answered %v", j.Job, j.Outcome)
			}
		}
		after, _ := n.f.Jobs(scheduler.Filter{}, "", 0)
		for i := range before {
			if before[i].Token != after[i].Token || before[i].Status != after[i].Status || before[i].Worker != after[i].Worker {
				t.Fatalf("job %s changed: %+v → %+v", before[i].Name, before[i], after[i])
			}
		}
	})
}

func TestOversizedPollRefused(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := testConfig()
		cfg.Limits = raftfsm.Limits{MaxReports: rapid.IntRange(0, 8).Draw(t, "reports"), MaxOutputs: rapid.IntRange(0, 8).Draw(t, "outputs")}
		n := newNode(t, cfg)
		req := compactkittest.OversizedPoll(cfg.Limits).Draw(t, "poll")
		_, err := n.f.Prepare(req, n.now)
		if !errors.Is(err, raftfsm.ErrLimit) || !errors.Is(err, raftfsm.ErrInvalidRequest) {
			t.Fatalf("oversized request prepared: %v", err)
		}
	})
}

type node struct {
	t     *rapid.T
	f     *raftfsm.FSM
	index uint64
	now   int64
}

func newNode(t *rapid.T, cfg raftfsm.Config) *node {
	f, err := raftfsm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &node{t: t, f: f, now: 1_700_000_000 * int64(time.Second)}
}

func (n *node) apply(cmd *raftfsm.Command) *raftfsm.Result {
	data, err := n.f.Encode(cmd, n.now)
	if err != nil {
		n.t.Fatal(err)
	}
	n.index++
	res, err := n.f.Apply(ck.Entry{Index: n.index, Term: 1, Time: n.now}, data)
	if err != nil {
		n.t.Fatal(err)
	}
	return res
}

func (n *node) add(bs []ck.BlockMeta) {
	n.apply(&raftfsm.Command{AddBlocks: &raftfsm.AddBlocks{Blocks: bs}})
}

func mustPrepare(t *rapid.T, n *node, req *ck.PollRequest) *raftfsm.Command {
	cmd, err := n.f.Prepare(req, n.now)
	if err != nil {
		t.Fatal(err)
	}
	return cmd
}

func snapshot(t *rapid.T, f *raftfsm.FSM) []byte {
	var b bytesBuffer
	if err := f.Snapshot(&b); err != nil {
		t.Fatal(err)
	}
	return b
}

type bytesBuffer []byte

func (b *bytesBuffer) Write(p []byte) (int, error) { *b = append(*b, p...); return len(p), nil }
