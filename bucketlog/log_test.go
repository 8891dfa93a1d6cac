package bucketlog_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/bucketlog"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/raftfsm"
)

// coordinators is a set of coordinators of one bucket log, each with its
// own replica and leader service; ChangeLeader restarts one of them from
// the newest checkpoint.
type coordinators struct {
	t     testing.TB
	store blockmerge.Store
	cfg   raftfsm.Config
	mu    sync.Mutex
	logs  []*bucketlog.Log
	svcs  []*leader.Service
	gen   int
	next  int
}

func newCoordinators(t testing.TB, store blockmerge.Store, n int) *coordinators {
	cfg := raftfsm.DefaultConfig()
	for i := range cfg.Planner.Levels {
		cfg.Planner.Levels[i].MaxBlocks = 4
	}
	c := &coordinators{t: t, store: store, cfg: cfg, logs: make([]*bucketlog.Log, n), svcs: make([]*leader.Service, n)}
	for i := range n {
		c.start(i)
	}
	return c
}

// start (re)starts coordinator i.
func (c *coordinators) start(i int) {
	c.t.Helper()
	fsm, err := raftfsm.New(c.cfg)
	require.NoError(c.t, err)
	c.gen++
	l, err := bucketlog.Open(context.Background(), c.store, "compaction", fsm, fmt.Sprintf("c%d-%d", i, c.gen), bucketlog.WithCheckpointEvery(16), bucketlog.WithTruncateGrace(0))
	require.NoError(c.t, err)
	c.logs[i] = l
	c.svcs[i] = leader.New(l, fsm, leader.WithRetries(50, func(attempt int) time.Duration {
		return time.Duration(attempt%8+1) * time.Millisecond // contention backs off
	}))
}

func (c *coordinators) Services() []*leader.Service {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*leader.Service(nil), c.svcs...)
}

func (c *coordinators) ChangeLeader(t testing.TB) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := c.next % len(c.svcs)
	c.next++
	_ = c.svcs[i].Close()
	c.start(i)
}

func (c *coordinators) Settle(t testing.TB) {
	for _, l := range c.logs {
		require.NoError(t, l.Barrier(context.Background()))
	}
}

// Four coordinators on one bucket, polls and blocks through all of them
// while coordinators restart from checkpoints: the leader service's
// scenario holds (retried polls get their recorded answers, no block
// compacted twice, every replica byte-identical at the end).
func TestCoordinatorsScenario(t *testing.T) {
	for name, store := range map[string]func(t *testing.T) blockmerge.Store{
		"mem": func(*testing.T) blockmerge.Store { return blockmerge.NewMemStore() },
		"file": func(t *testing.T) blockmerge.Store {
			s, err := blockmerge.NewFileStore(t.TempDir(), blockmerge.WithoutSync())
			require.NoError(t, err)
			return s
		},
	} {
		t.Run(name, func(t *testing.T) {
			c := newCoordinators(t, store(t), 4)
			rep := leadertest.Run(t, c, leadertest.Options{Polls: 30, LeaderChanges: 6})
			t.Logf("%+v", rep)
			require.Positive(t, rep.Completed)
			require.Greater(t, c.logs[0].Applied(), uint64(32), "checkpoints were written and used")
		})
	}
}

// A coordinator started on a long log restores the newest checkpoint and
// replays only what follows; its state equals a replica that replayed
// everything.
func TestCheckpointRestore(t *testing.T) {
	store := blockmerge.NewMemStore()
	c := newCoordinators(t, store, 1)
	ctx := context.Background()
	for i := range 40 {
		_, err := c.svcs[0].AddBlocks(ctx, []ckBlock{leadertest.Block(fmt.Sprintf("seg-%03d", i), "acme", 0, int64(i)*1e9)})
		require.NoError(t, err)
	}
	fsm, err := raftfsm.New(c.cfg)
	require.NoError(t, err)
	l, err := bucketlog.Open(ctx, store, "compaction", fsm, "late-1", bucketlog.WithCheckpointEvery(16), bucketlog.WithTruncateGrace(0))
	require.NoError(t, err)
	require.Equal(t, c.logs[0].Applied(), l.Applied())
	var a, b bytes.Buffer
	require.NoError(t, c.svcs[0].FSM().Snapshot(&a))
	require.NoError(t, fsm.Snapshot(&b))
	require.Equal(t, a.Bytes(), b.Bytes())
	var keys []string
	require.NoError(t, store.List(ctx, "compaction/checkpoint/", func(k string) error { keys = append(keys, k); return nil }))
	require.NotEmpty(t, keys)

	// A corrupt entry stops a replica that reads it.
	require.NoError(t, store.Put(ctx, fmt.Sprintf("compaction/log/%020d", l.Applied()+1), bytes.NewReader([]byte("garbage"))))
	require.ErrorIs(t, l.Barrier(ctx), bucketlog.ErrCorrupt)

	// A store without conditional puts is refused.
	_, err = bucketlog.Open(ctx, plainStore{store}, "compaction", fsm, "x")
	require.ErrorIs(t, err, bucketlog.ErrUnsupportedStore)
	require.ErrorContains(t, err, "no conditional put")
}

type ckBlock = ck.BlockMeta

// plainStore hides the conditional put.
type plainStore struct{ blockmerge.Store }

// memStore is blockmerge's memory store with the optional interfaces it
// implements, for wrappers that change one of its methods.
type memStore interface {
	blockmerge.Store
	blockmerge.ConditionalPutter
	blockmerge.Timestamper
}

func newMemStore(opts ...blockmerge.Option) memStore {
	return blockmerge.NewMemStore(opts...).(memStore)
}

// Coordinators appending at once: every coordinator serves its own
// ingest and worker, appends race for the same indexes, losers catch up
// and prepare again; at the end no block is lost or added twice and all
// replicas are byte-identical.
func TestCoordinatorsContend(t *testing.T) {
	store, err := blockmerge.NewFileStore(t.TempDir(), blockmerge.WithoutSync())
	require.NoError(t, err)
	c := newCoordinators(t, store, 4)
	ctx := context.Background()
	var wg sync.WaitGroup
	for i, svc := range c.Services() {
		wg.Add(2)
		go func() { // ingest
			defer wg.Done()
			for b := range 15 {
				_, err := svc.AddBlocks(ctx, []ck.BlockMeta{leadertest.Block(fmt.Sprintf("seg-%d-%02d", i, b), fmt.Sprintf("t%d", i), 0, int64(b)*1e9)})
				require.NoError(t, err)
			}
		}()
		go func() { // a worker taking jobs and giving them back
			defer wg.Done()
			var held *ck.JobReply
			for seq := uint64(1); seq <= 15; seq++ {
				req := &ck.PollRequest{WorkerID: fmt.Sprintf("w%d-AAAAAAAAAAAAAAAA", i), Seq: seq, FreeSlots: 1}
				if held != nil {
					req.Updates = []ck.StatusUpdate{{Job: held.Job, Token: held.Token, Status: ck.ReportReleased}}
				}
				resp, err := svc.Poll(ctx, req)
				require.NoError(t, err)
				held = nil
				for j := range resp.Jobs {
					if resp.Jobs[j].Outcome == ck.OutcomeAssigned {
						held = &resp.Jobs[j]
					}
				}
			}
		}()
	}
	wg.Wait()
	c.Settle(t)
	var conflicts uint64
	var first []byte
	for i, l := range c.logs {
		conflicts += l.Stats().Conflicts
		var b bytes.Buffer
		require.NoError(t, c.svcs[i].FSM().Snapshot(&b))
		if i == 0 {
			first = b.Bytes()
		} else {
			require.Equal(t, first, b.Bytes(), "replica %d", i)
		}
	}
	t.Logf("entries %d, conflicts %d", c.logs[0].Applied(), conflicts)
	require.Positive(t, conflicts, "the coordinators raced")
	view := c.svcs[0].FSM().Index()
	defer view.Close()
	require.Equal(t, 60, view.Len(), "every block added once")
}

// An entry the state machine refuses (an operator command on an unknown
// job) changes no state: polls prepared after it are not taken for
// conflicts forever.
func TestRefusedEntryIsNoConflict(t *testing.T) {
	c := newCoordinators(t, blockmerge.NewMemStore(), 1)
	ctx := context.Background()
	_, err := c.svcs[0].AddBlocks(ctx, []ck.BlockMeta{leadertest.Block("seg-1", "acme", 0, 0)})
	require.NoError(t, err)
	_, err = c.svcs[0].Propose(ctx, &raftfsm.Command{Operator: &raftfsm.Operator{Action: raftfsm.OpCancel, Job: "no.such.job"}})
	require.ErrorIs(t, err, raftfsm.ErrOperator)
	for seq := uint64(1); seq <= 3; seq++ {
		_, err := c.svcs[0].Poll(ctx, &ck.PollRequest{WorkerID: "w1-AAAAAAAAAAAAAAAA", Seq: seq, FreeSlots: 1})
		require.NoError(t, err)
	}
	require.Zero(t, c.logs[0].Stats().Conflicts)
}
