package bucketlog_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/bucketlog"
	"github.com/compactkit/compactkit/bucketlog/bucketlogtest"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/raftfsm"
)

// openLog opens a coordinator of the log "compaction" in store, with a
// new state machine of bucketlogtest.Config.
func openLog(t testing.TB, store blockmerge.Store, id string, opts ...bucketlog.Option) (*bucketlog.Log, *raftfsm.FSM) {
	t.Helper()
	fsm, err := raftfsm.New(bucketlogtest.Config())
	require.NoError(t, err)
	l, err := bucketlog.Open(context.Background(), store, "compaction", fsm, id, opts...)
	require.NoError(t, err)
	return l, fsm
}

// newFileStore returns a FileStore in dir, fsync off.
func newFileStore(t testing.TB, dir string) blockmerge.Store {
	t.Helper()
	s, err := blockmerge.NewFileStore(dir, blockmerge.WithoutSync())
	require.NoError(t, err)
	return s
}

// poller is what a worker polls: a leader service or a node.
type poller interface {
	Poll(context.Context, *ck.PollRequest) (*ck.PollResponse, error)
}

// pollHolding is one poll, with sequence number seq, of a worker that
// holds one job at most: it reports on held, the job the worker holds
// (nil: none), as report says, and returns the job assigned to it (nil:
// none; a job without sources is not held).
func pollHolding(ctx context.Context, p poller, worker string, seq uint64, held *ck.JobReply, report func(held *ck.JobReply) ck.StatusUpdate) (*ck.JobReply, error) {
	req := &ck.PollRequest{WorkerID: worker, Seq: seq, FreeSlots: 1}
	if held != nil {
		req.Updates = []ck.StatusUpdate{report(held)}
	}
	resp, err := p.Poll(ctx, req)
	if err != nil {
		return nil, err
	}
	for i := range resp.Jobs {
		if resp.Jobs[i].Outcome == ck.OutcomeAssigned && len(resp.Jobs[i].Plan.Sources) > 0 {
			return &resp.Jobs[i], nil
		}
	}
	return nil, nil
}

// release gives a held job back.
func release(held *ck.JobReply) ck.StatusUpdate {
	return ck.StatusUpdate{Job: held.Job, Token: held.Token, Status: ck.ReportReleased}
}

// completeOn completes a held job with the outputs its plan makes on
// fsm's state, or fails it if its sources are gone.
func completeOn(fsm *raftfsm.FSM) func(held *ck.JobReply) ck.StatusUpdate {
	return func(held *ck.JobReply) ck.StatusUpdate {
		if outs, ok := leadertest.Outputs(fsm, held); ok {
			return ck.StatusUpdate{Job: held.Job, Token: held.Token, Status: ck.ReportSuccess, Outputs: outs}
		}
		return ck.StatusUpdate{Job: held.Job, Token: held.Token, Status: ck.ReportFailure, Reason: "sources gone"}
	}
}

// coordinators is a set of coordinators of one bucket log, each with its
// own replica and leader service; ChangeLeader restarts one of them from
// the newest checkpoint.
type coordinators struct {
	t     testing.TB
	store blockmerge.Store
	mu    sync.Mutex
	logs  []*bucketlog.Log
	svcs  []*leader.Service
	gen   int
	next  int
}

func newCoordinators(t testing.TB, store blockmerge.Store, n int) *coordinators {
	c := &coordinators{t: t, store: store, logs: make([]*bucketlog.Log, n), svcs: make([]*leader.Service, n)}
	for i := range n {
		c.start(i)
	}
	return c
}

// start (re)starts coordinator i.
func (c *coordinators) start(i int) {
	c.t.Helper()
	c.gen++
	l, fsm := openLog(c.t, c.store, fmt.Sprintf("c%d-%d", i, c.gen), bucketlog.WithCheckpointEvery(16), bucketlog.WithTruncateGrace(0))
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
		"mem":  func(*testing.T) blockmerge.Store { return blockmerge.NewMemStore() },
		"file": func(t *testing.T) blockmerge.Store { return newFileStore(t, t.TempDir()) },
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
		_, err := c.svcs[0].AddBlocks(ctx, []ck.BlockMeta{leadertest.Block(fmt.Sprintf("seg-%03d", i), "acme", 0, int64(i)*1e9)})
		require.NoError(t, err)
	}
	l, fsm := openLog(t, store, "late-1", bucketlog.WithCheckpointEvery(16), bucketlog.WithTruncateGrace(0))
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
	_, err := bucketlog.Open(ctx, plainStore{store}, "compaction", fsm, "x")
	require.ErrorIs(t, err, bucketlog.ErrUnsupportedStore)
	require.ErrorContains(t, err, "no conditional put")
}

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
	c := newCoordinators(t, newFileStore(t, t.TempDir()), 4)
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
				var err error
				held, err = pollHolding(ctx, svc, fmt.Sprintf("w%d-AAAAAAAAAAAAAAAA", i), seq, held, release)
				require.NoError(t, err)
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

// Sixteen serverless workers — each its own node on one bucket, no
// coordinator — polling at once while an ingest node adds blocks: lost
// races are prepared again with jittered backoff, every worker gets work
// (none starves), every block is compacted, and the replicas end
// byte-identical.
func TestServerlessWorkersContend(t *testing.T) {
	ctx := context.Background()
	store := newFileStore(t, t.TempDir())
	cfg := bucketlog.NodeConfig{State: bucketlogtest.Config(), LogOptions: []bucketlog.Option{bucketlog.WithCheckpointEvery(32)}}
	const workers, minBlocks = 16, 192
	ingest, err := bucketlog.OpenNode(ctx, store, "compaction", "ingest", cfg)
	require.NoError(t, err)
	nodes := make([]*bucketlog.Node, workers)
	for i := range nodes {
		nodes[i], err = bucketlog.OpenNode(ctx, store, "compaction", fmt.Sprintf("w%d", i), cfg)
		require.NoError(t, err)
	}

	var (
		mu       sync.Mutex
		assigned = make([]int, workers)
		done     = make(chan struct{})
	)
	allServed := func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, n := range assigned {
			if n == 0 {
				return false
			}
		}
		return true
	}
	var wg sync.WaitGroup
	for i, node := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var held *ck.JobReply
			for seq := uint64(1); ; seq++ {
				var err error
				held, err = pollHolding(ctx, node, fmt.Sprintf("w%d-XXXXXXXXXXXXXXXX", i), seq, held, completeOn(node.FSM()))
				if err != nil {
					t.Errorf("worker %d: %v", i, err)
					return
				}
				if held != nil {
					mu.Lock()
					assigned[i]++
					mu.Unlock()
				}
				select {
				case <-done:
					if held == nil {
						return
					}
				case <-time.After(20 * time.Millisecond):
				}
			}
		}()
	}
	// Ingest runs until every worker was served (at least minBlocks, in
	// full batches of 4 per shard),
	// then the queue drains: every level-0 block compacted, nothing in
	// progress (the deadline is the guard).
	deadline := time.Now().Add(2 * time.Minute)
	for b := 0; b < minBlocks || !allServed() || b%16 != 0; b++ { // full level-0 batches: none waits for its age
		_, err := ingest.AddBlocks(ctx, []ck.BlockMeta{leadertest.Block(fmt.Sprintf("seg-%05d", b), "acme", uint32(b%4), int64(b)*1e9)})
		require.NoError(t, err)
		if time.Now().After(deadline) {
			mu.Lock()
			t.Fatalf("after %d blocks some worker never got a job: assignments %v", b, assigned)
		}
	}
	for {
		require.NoError(t, ingest.Log.Barrier(ctx))
		st := ingest.FSM().Stats()
		if st.Planner.Levels[0].Queued == 0 && st.Planner.Claimed == 0 && st.Scheduler.Jobs == 0 {
			break
		}
		if time.Now().After(deadline) {
			mu.Lock()
			t.Fatalf("no fixed point: assignments %v, stats %+v", assigned, st)
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(done)
	wg.Wait()

	var first []byte
	for i, n := range append(nodes, ingest) {
		require.NoError(t, n.Log.Barrier(ctx))
		var b bytes.Buffer
		require.NoError(t, n.FSM().Snapshot(&b))
		if i == 0 {
			first = b.Bytes()
		} else {
			require.Equal(t, first, b.Bytes(), "node %d", i)
		}
	}
	var conflicts, appended uint64
	for _, n := range nodes {
		st := n.Log.Stats()
		conflicts += st.Conflicts
		appended += st.Appended
	}
	t.Logf("assignments per worker %v; %d entries, %d appended by workers, %d conflicts", assigned, ingest.Log.Applied(), appended, conflicts)
}

// A coordinator paused far behind while another one appends, checkpoints
// and truncates: when it resumes, it finds its next entry deleted below
// the low-water mark, restores the checkpoint at the mark instead of
// re-creating the deleted index (which would fork the log), and its next
// append lands at the tip. Replicas end byte-identical.
func TestPausedPastTruncation(t *testing.T) {
	store := blockmerge.NewMemStore()
	c := newCoordinators(t, store, 2)
	ctx := context.Background()
	add := func(i int, name string) {
		_, err := c.svcs[i].AddBlocks(ctx, []ck.BlockMeta{leadertest.Block(name, "acme", 0, 0)})
		require.NoError(t, err)
	}
	add(1, "seg-first")
	paused := c.logs[1].Applied() // coordinator 1 stops here

	for i := range 60 {
		add(0, fmt.Sprintf("seg-%03d", i))
	}
	mark, err := c.logs[0].Truncate(ctx)
	require.NoError(t, err)
	require.Greater(t, mark, paused+1, "the mark passed the paused coordinator's next entry")
	ok, err := store.Exists(ctx, fmt.Sprintf("compaction/log/%020d", paused+1))
	require.NoError(t, err)
	require.False(t, ok, "the entry it would append next is deleted")

	tip := c.logs[0].Applied()
	add(1, "seg-after-pause") // resumes: restores, then appends at the tip
	require.Equal(t, tip+1, c.logs[1].Applied())
	require.NoError(t, c.logs[0].Barrier(ctx))
	var a, b bytes.Buffer
	require.NoError(t, c.svcs[0].FSM().Snapshot(&a))
	require.NoError(t, c.svcs[1].FSM().Snapshot(&b))
	require.Equal(t, a.Bytes(), b.Bytes())
	ok, err = store.Exists(ctx, fmt.Sprintf("compaction/log/%020d", paused+1))
	require.NoError(t, err)
	require.False(t, ok, "the deleted index was not re-created")

	// A new coordinator starts from the checkpoint at the mark.
	late := newCoordinators(t, store, 1)
	require.Equal(t, c.logs[0].Applied(), late.logs[0].Applied())
}

// Truncate deletes an entry only once the part of the mark over it was
// raised the grace period ago.
func TestTruncateGrace(t *testing.T) {
	ctx := context.Background()
	store := blockmerge.NewMemStore()
	now := time.Unix(1e9, 0)
	l, fsm := openLog(t, store, "c1", bucketlog.WithCheckpointEvery(16), bucketlog.WithClock(func() time.Time { return now }))
	svc := leader.New(l, fsm)
	for i := range 80 {
		_, err := svc.AddBlocks(ctx, []ck.BlockMeta{leadertest.Block(fmt.Sprintf("seg-%03d", i), "acme", 0, 0)})
		require.NoError(t, err)
	}
	entry1 := "compaction/log/" + fmt.Sprintf("%020d", 1)
	mark, err := l.Truncate(ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(64), mark)
	ok, err := store.Exists(ctx, entry1)
	require.NoError(t, err)
	require.True(t, ok, "marked, not yet deleted")

	now = now.Add(time.Minute) // the default grace
	_, err = l.Truncate(ctx)
	require.NoError(t, err)
	ok, err = store.Exists(ctx, entry1)
	require.NoError(t, err)
	require.False(t, ok, "deleted once the grace passed")
	ok, err = store.Exists(ctx, "compaction/log/"+fmt.Sprintf("%020d", 65))
	require.NoError(t, err)
	require.True(t, ok, "above the mark: kept")
}

// stallingStore runs stall once, inside the first create of an entry
// whose key has the given suffix: between the appending coordinator's
// check of the mark and its create.
type stallingStore struct {
	memStore
	key   string
	stall func()
}

func (s *stallingStore) PutIfAbsent(ctx context.Context, key string, r io.Reader) error {
	if s.stall != nil && key == s.key {
		stall := s.stall
		s.stall = nil
		stall()
	}
	return s.memStore.PutIfAbsent(ctx, key, r)
}

// A coordinator that stalls between its check of the low-water mark and
// its create, while the others move on, checkpoint and truncate past the
// entry it creates (no grace), re-creates a deleted index — then finds
// the mark over it, deletes it again, restores the checkpoint and appends
// at the tip. No fork: replicas end byte-identical.
func TestStalledAppendBelowMark(t *testing.T) {
	ctx := context.Background()
	mem := newMemStore()
	store := &stallingStore{memStore: mem}
	open := func(id string) (*bucketlog.Log, *leader.Service) {
		l, fsm := openLog(t, store, id, bucketlog.WithCheckpointEvery(16), bucketlog.WithTruncateGrace(0))
		return l, leader.New(l, fsm)
	}
	la, a := open("a")
	lb, b := open("b")
	add := func(svc *leader.Service, name string) {
		_, err := svc.AddBlocks(ctx, []ck.BlockMeta{leadertest.Block(name, "acme", 0, 0)})
		require.NoError(t, err)
	}
	add(a, "seg-a")
	next := la.Applied() + 1
	store.key = fmt.Sprintf("compaction/log/%020d", next)
	store.stall = func() {
		for i := range 80 {
			add(b, fmt.Sprintf("seg-b-%03d", i))
		}
		mark, err := lb.Truncate(ctx)
		require.NoError(t, err)
		require.GreaterOrEqual(t, mark, next)
		ok, err := mem.Exists(ctx, store.key)
		require.NoError(t, err)
		require.False(t, ok, "the entry a creates next was deleted")
	}
	add(a, "seg-a-stalled")
	require.Greater(t, la.Applied(), lb.Applied(), "a restored, then appended at the tip")
	require.NoError(t, lb.Barrier(ctx))
	var sa, sb bytes.Buffer
	require.NoError(t, a.FSM().Snapshot(&sa))
	require.NoError(t, b.FSM().Snapshot(&sb))
	require.Equal(t, sa.Bytes(), sb.Bytes())
	ok, err := mem.Exists(ctx, store.key)
	require.NoError(t, err)
	require.False(t, ok, "the re-created index was taken back")
}

// createdThenExists performs every conditional create and, for the keys
// lose selects, answers "exists" all the same: what an S3 client reports
// when the server applied its create, the answer was lost, and its own
// retry got 412 Precondition Failed.
type createdThenExists struct {
	memStore
	lose func(key string) bool
	mu   sync.Mutex
	lost []string
}

func (s *createdThenExists) PutIfAbsent(ctx context.Context, key string, r io.Reader) error {
	if err := s.memStore.PutIfAbsent(ctx, key, r); err != nil {
		return err
	}
	if s.lose(key) {
		s.mu.Lock()
		s.lost = append(s.lost, key)
		s.mu.Unlock()
		return fmt.Errorf("put %q: retried after a lost answer: %w", key, blockmerge.ErrExists)
	}
	return nil
}

func (s *createdThenExists) answersLost() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.lost...)
}

// A create that made the entry but was answered "exists" is the
// coordinator's own append, told by the entry's nonce: every command is
// applied once and its caller gets that result — blocks added once (no
// duplicate), a job cancelled once (not "unknown job") — and a checkpoint
// so answered was written.
func TestCreateAnsweredExistsIsOwnAppend(t *testing.T) {
	ctx := context.Background()
	store := &createdThenExists{memStore: newMemStore(), lose: func(string) bool { return true }}
	var logs bytes.Buffer
	var applied []string
	l, fsm := openLog(t, store, "c1", bucketlog.WithCheckpointEvery(4),
		bucketlog.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))),
		bucketlog.WithObserver(func(cmd []byte, a leader.Applied) {
			c, err := raftfsm.DecodeCommand(cmd)
			require.NoError(t, err)
			applied = append(applied, fmt.Sprintf("%d:%s", a.Index, commandKind(c)))
		}))
	svc := leader.New(l, fsm)

	for i := range 4 {
		res, err := svc.AddBlocks(ctx, []ck.BlockMeta{leadertest.Block(fmt.Sprintf("seg-%d", i), "acme", 0, int64(i)*1e9)})
		require.NoError(t, err)
		require.Len(t, res, 1)
		require.NoError(t, res[0].Err, "add %d: the block this very call added", i)
	}
	resp, err := svc.Poll(ctx, &ck.PollRequest{WorkerID: "w1", Seq: 1, FreeSlots: 1})
	require.NoError(t, err)
	require.Len(t, resp.Jobs, 1)
	require.Equal(t, ck.OutcomeAssigned, resp.Jobs[0].Outcome)
	_, err = svc.Propose(ctx, &raftfsm.Command{Operator: &raftfsm.Operator{Action: raftfsm.OpCancel, Job: resp.Jobs[0].Job}})
	require.NoError(t, err, "the cancel this very call applied")

	require.Len(t, store.answersLost(), 10, "eight entries and two checkpoints answered exists")
	require.Equal(t, []string{"1:config", "2:took-office", "3:add", "4:add", "5:add", "6:add", "7:poll", "8:operator"}, applied,
		"each command applied once")
	st := l.Stats()
	require.Equal(t, uint64(8), st.Appended)
	require.Zero(t, st.Conflicts)
	require.NotContains(t, logs.String(), "checkpoint not written")
	ok, err := store.Exists(ctx, "compaction/checkpoint/"+fmt.Sprintf("%020d", 4))
	require.NoError(t, err)
	require.True(t, ok)

	// Another coordinator, starting from that checkpoint, holds the same
	// state.
	bucketlogtest.SameOnOpen(t, store, "compaction", bucketlogtest.Config(), l, fsm)
}

// A create answered "exists" because another coordinator's entry is there
// is a lost race like any other: the other's entry is applied, the command
// appended at the next entry.
func TestCreateAnsweredExistsByAnother(t *testing.T) {
	mem := blockmerge.NewMemStore()
	la, fa := openLog(t, mem, "a")
	lb, fb := openLog(t, mem, "b")
	addOne(t, la, fa, "seg-a") // entry 1, by a
	require.Equal(t, uint64(2), addOne(t, lb, fb, "seg-b").Index, "b lost entry 1 to a, appended entry 2")
	require.Equal(t, uint64(1), lb.Stats().Conflicts)
	require.Equal(t, uint64(1), lb.Stats().Appended)
}

// commandKind names what a command does, for the test's record.
func commandKind(c *raftfsm.Command) string {
	switch {
	case c.AddBlocks != nil:
		return "add"
	case c.Poll != nil, c.PreparePoll != nil:
		return "poll"
	case c.Operator != nil:
		return "operator"
	case c.TookOffice != nil:
		return "took-office"
	case c.Config != nil:
		return "config"
	}
	return "other"
}

// A checkpoint whose create was answered "exists" after it was made is
// written, not logged as "not written"; one that exists with another
// entry's hash is reported.
func TestCheckpointAnsweredExists(t *testing.T) {
	ctx := context.Background()
	run := func(t *testing.T, store blockmerge.Store) string {
		var logs bytes.Buffer
		l, fsm := openLog(t, store, "c1", bucketlog.WithCheckpointEvery(2), bucketlog.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		for i := range 4 {
			addOne(t, l, fsm, fmt.Sprintf("seg-%d", i))
		}
		return logs.String()
	}
	t.Run("own", func(t *testing.T) {
		store := &createdThenExists{memStore: newMemStore(), lose: func(key string) bool {
			return strings.Contains(key, "/checkpoint/")
		}}
		logs := run(t, store)
		require.Len(t, store.answersLost(), 2)
		require.NotContains(t, logs, "checkpoint not written")
	})
	t.Run("other", func(t *testing.T) {
		mem := blockmerge.NewMemStore()
		require.NoError(t, mem.Put(ctx, "compaction/checkpoint/"+fmt.Sprintf("%020d", 2), strings.NewReader("ckcp\x02 not this log's")))
		logs := run(t, mem)
		require.Contains(t, logs, "checkpoint not written")
		require.Contains(t, logs, "another checkpoint of entry 2 exists")
	})
}

// A coordinator far behind whose create is answered "exists" reads the
// entry it tried to create, to tell whose it is, then restores a
// checkpoint to skip the rest (WithCatchUpLimit), as any catch-up does.
func TestCreateAnsweredExistsFarBehindJumps(t *testing.T) {
	ctx := context.Background()
	mem := blockmerge.NewMemStore()
	la, fa := openLog(t, mem, "a", bucketlog.WithCheckpointEvery(4), bucketlog.WithCatchUpLimit(2))
	lb, fb := openLog(t, mem, "b", bucketlog.WithCheckpointEvery(4))
	for i := range 12 {
		addOne(t, lb, fb, fmt.Sprintf("seg-b-%02d", i))
	}
	a := addOne(t, la, fa, "seg-a")
	require.Equal(t, uint64(13), a.Index)
	require.Equal(t, uint64(1), la.Stats().Jumps, "restored a checkpoint after reading the entry it lost")
	require.Equal(t, uint64(1), la.Stats().Conflicts)
	require.NoError(t, lb.Barrier(ctx))
	bucketlogtest.SameOnOpen(t, mem, "compaction", bucketlogtest.Config(), lb, fb)
}

// clocks are the store's clock and a proposer's, set by the test.
type clocks struct{ store, proposer time.Time }

// proposerClock makes the proposer's clock a log's.
func (c *clocks) proposerClock() bucketlog.Option {
	return bucketlog.WithClock(func() time.Time { return c.proposer })
}

func addOne(t *testing.T, l *bucketlog.Log, fsm *raftfsm.FSM, id string) leader.Applied {
	t.Helper()
	b := leadertest.Block(id, "acme", 0, 1e9)
	cmd, err := fsm.Encode(&raftfsm.Command{AddBlocks: &raftfsm.AddBlocks{Blocks: []ck.BlockMeta{b}}}, time.Now().UnixNano())
	require.NoError(t, err)
	a, err := l.Propose(context.Background(), cmd, 0)
	require.NoError(t, err)
	require.NoError(t, a.Err)
	return a
}

// An entry's time is the store's, while the proposer's clock is within
// the clock step of it; a proposer further off moves the log's time by
// its error less the step, never back, at most one step per entry.
func TestEntryTimeFromStore(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)
	c := &clocks{store: t0, proposer: t0}
	store := blockmerge.NewMemStore(blockmerge.WithMemClock(func() time.Time { return c.store }))
	l, fsm := openLog(t, store, "c1", c.proposerClock())
	step := func(name string, store, proposer time.Duration) time.Time {
		c.store, c.proposer = t0.Add(store), t0.Add(proposer)
		return time.Unix(0, addOne(t, l, fsm, name).Result.Now).UTC()
	}
	require.Equal(t, t0.Add(time.Second), step("a", time.Second, time.Second))
	require.Equal(t, t0.Add(2*time.Second), step("b", 2*time.Second, 40*time.Minute), "a fast proposer within the step: the store's time")
	require.Equal(t, t0.Add(3*time.Second), step("c", 3*time.Second, -40*time.Minute), "a slow one within the step: the store's time")
	require.Equal(t, t0.Add(3*time.Second), step("d", 4*time.Second, -3*time.Hour), "further behind: the stamp plus the step, but never back")
	require.Equal(t, t0.Add(time.Hour+3*time.Second), step("e", 5*time.Second, 3*time.Hour), "further ahead: the stamp less the step, one step at most")

	// Without store time, the stamp alone (bounded by the state machine).
	l2, fsm2 := openLog(t, blockmerge.NewMemStore(), "c2", c.proposerClock(), bucketlog.WithoutStoreTime())
	c.proposer = t0.Add(7 * time.Second)
	require.Equal(t, t0.Add(7*time.Second), time.Unix(0, addOne(t, l2, fsm2, "a").Result.Now).UTC())
}

// A step of the log's time beyond one lease (here: no entry for a minute,
// a coordinator outage) first extends the leases in progress, so the job
// a worker holds is not expired and charged a failure.
func TestTimeStepExtendsLeases(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)
	c := &clocks{store: t0, proposer: t0}
	store := blockmerge.NewMemStore(blockmerge.WithMemClock(func() time.Time { return c.store }))
	l, fsm := openLog(t, store, "c1", c.proposerClock())
	svc := leader.New(l, fsm, leader.WithClock(func() time.Time { return c.proposer }))
	for i := range 4 {
		_, err := svc.AddBlocks(context.Background(), []ck.BlockMeta{leadertest.Block(fmt.Sprintf("b%d", i), "acme", 0, int64(i)*1e9)})
		require.NoError(t, err)
	}
	resp, err := svc.Poll(context.Background(), &ck.PollRequest{WorkerID: "w1", Seq: 1, FreeSlots: 1})
	require.NoError(t, err)
	require.Len(t, resp.Jobs, 1)
	job := resp.Jobs[0]

	c.store, c.proposer = t0.Add(time.Minute), t0.Add(time.Minute)
	_, err = svc.AddBlocks(context.Background(), []ck.BlockMeta{leadertest.Block("late", "acme", 0, 9e9)})
	require.NoError(t, err)
	require.Equal(t, uint64(1), l.Stats().Extensions)
	js, _, ok := fsm.Job(job.Job)
	require.True(t, ok)
	require.Equal(t, ck.StatusInProgress, js.Status, "the lease was extended, not expired")
	require.Zero(t, js.Failures)
	require.Equal(t, t0.Add(time.Minute+15*time.Second).UnixNano(), js.Deadline)
}

// A replica that reads an entry timed by the store through a store that
// reports no times stops with a clear error instead of timing it
// differently (a fork).
func TestStoreTimeRequired(t *testing.T) {
	c := &clocks{store: time.Unix(1e9, 0), proposer: time.Unix(1e9, 0)}
	store := blockmerge.NewMemStore(blockmerge.WithMemClock(func() time.Time { return c.store }))
	l, fsm := openLog(t, store, "c1", c.proposerClock())
	addOne(t, l, fsm, "a")
	other, err := raftfsm.New(bucketlogtest.Config())
	require.NoError(t, err)
	_, err = bucketlog.Open(context.Background(), noTimes{store, store.(blockmerge.ConditionalPutter)}, "compaction", other, "c2")
	require.ErrorIs(t, err, bucketlog.ErrUnsupportedStore)
	require.ErrorContains(t, err, "reports no modification times")

	// Entries appended WithoutStoreTime are read by any replica.
	store2 := newMemStore()
	l2, fsm2 := openLog(t, store2, "c1", c.proposerClock(), bucketlog.WithoutStoreTime())
	addOne(t, l2, fsm2, "a")
	other, err = raftfsm.New(bucketlogtest.Config())
	require.NoError(t, err)
	r, err := bucketlog.Open(context.Background(), noTimes{store2, store2}, "compaction", other, "c2")
	require.NoError(t, err)
	require.Equal(t, uint64(1), r.Applied())
}

// noTimes hides the store's modification times.
type noTimes struct {
	blockmerge.Store
	blockmerge.ConditionalPutter
}

// A coordinator whose clock is 40 minutes ahead of the store's (within
// the clock step, so the log keeps the store's time) prepares polls at
// Log.Now, the log's time as it can tell it: a healthy job held by
// another worker is not taken for expired. Prepared at its own clock, the
// poll would propose the job's reassignment, which Apply refuses (the
// lease has not run out in log time), and the worker would get nothing.
func TestPrepareAtLogTime(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)
	for _, logClock := range []bool{true, false} {
		t.Run(fmt.Sprintf("log-clock=%t", logClock), func(t *testing.T) {
			c := &clocks{store: t0, proposer: t0.Add(40 * time.Minute)}
			store := blockmerge.NewMemStore(blockmerge.WithMemClock(func() time.Time { return c.store }))
			l, fsm := openLog(t, store, "c1", c.proposerClock())
			clock := func() time.Time { return c.proposer }
			if logClock {
				clock = l.Now
			}
			svc := leader.New(l, fsm, leader.WithClock(clock))
			ctx := context.Background()
			var bs []ck.BlockMeta
			for i := range 8 {
				bs = append(bs, leadertest.Block(fmt.Sprintf("b%d", i), "acme", 0, int64(i)*1e9))
			}
			_, err := svc.AddBlocks(ctx, bs)
			require.NoError(t, err)
			resp, err := svc.Poll(ctx, &ck.PollRequest{WorkerID: "w1", Seq: 1, FreeSlots: 1})
			require.NoError(t, err)
			require.Len(t, resp.Jobs, 1)
			held := resp.Jobs[0].Job
			require.Equal(t, c.store, l.Now(), "after its own appends, Now is the store's clock")

			c.store = c.store.Add(time.Second)
			c.proposer = c.proposer.Add(time.Second)
			resp, err = svc.Poll(ctx, &ck.PollRequest{WorkerID: "w2", Seq: 1, FreeSlots: 1})
			require.NoError(t, err)
			skipped := fsm.Stats().Scheduler.Counters.Skipped
			if logClock {
				require.WithinDuration(t, c.store, l.Now(), time.Second, "Now follows the store's clock")
				require.Len(t, resp.Jobs, 1, "w2 gets the second batch")
				require.NotEqual(t, held, resp.Jobs[0].Job)
				require.Zero(t, skipped)
			} else {
				require.Empty(t, resp.Jobs, "its only slot went to a reassignment Apply refused")
				require.Equal(t, uint64(1), skipped)
			}
			js, _, _ := fsm.Job(held)
			require.Equal(t, ck.StatusInProgress, js.Status)
			require.Zero(t, js.Failures)
		})
	}
}
