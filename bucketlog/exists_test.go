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

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/bucketlog"
	"github.com/compactkit/compactkit/bucketlog/bucketlogtest"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/raftfsm"
)

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
	fsm, err := raftfsm.New(bucketlogConfig())
	require.NoError(t, err)
	l, err := bucketlog.Open(ctx, store, "compaction", fsm, "c1", bucketlog.WithCheckpointEvery(4),
		bucketlog.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))),
		bucketlog.WithObserver(func(cmd []byte, a leader.Applied) {
			c, err := raftfsm.DecodeCommand(cmd)
			require.NoError(t, err)
			applied = append(applied, fmt.Sprintf("%d:%s", a.Index, commandKind(c)))
		}))
	require.NoError(t, err)
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
	bucketlogtest.SameOnOpen(t, store, "compaction", bucketlogConfig(), l, fsm)
}

// A create answered "exists" because another coordinator's entry is there
// is a lost race, as before: the other's entry is applied, the command
// appended at the next entry.
func TestCreateAnsweredExistsByAnother(t *testing.T) {
	ctx := context.Background()
	mem := blockmerge.NewMemStore()
	open := func(id string) (*bucketlog.Log, *raftfsm.FSM) {
		fsm, err := raftfsm.New(bucketlogConfig())
		require.NoError(t, err)
		l, err := bucketlog.Open(ctx, mem, "compaction", fsm, id)
		require.NoError(t, err)
		return l, fsm
	}
	la, fa := open("a")
	lb, fb := open("b")
	addOne(t, la, fa, "seg-a") // entry 1, by a
	require.Equal(t, uint64(2), addOne(t, lb, fb, "seg-b").Index, "b lost entry 1 to a, appended entry 2")
	require.Equal(t, uint64(1), lb.Stats().Conflicts)
	require.Equal(t, uint64(1), lb.Stats().Appended)
}

// bucketlogConfig is a state machine whose level 0 makes a job of four
// blocks.
func bucketlogConfig() raftfsm.Config {
	cfg := raftfsm.DefaultConfig()
	cfg.Planner.Levels[0].MaxBlocks = 4
	return cfg
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
		fsm, err := raftfsm.New(bucketlogConfig())
		require.NoError(t, err)
		l, err := bucketlog.Open(ctx, store, "compaction", fsm, "c1", bucketlog.WithCheckpointEvery(2),
			bucketlog.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		require.NoError(t, err)
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
	open := func(id string, opts ...bucketlog.Option) (*bucketlog.Log, *raftfsm.FSM) {
		fsm, err := raftfsm.New(bucketlogConfig())
		require.NoError(t, err)
		l, err := bucketlog.Open(ctx, mem, "compaction", fsm, id, append([]bucketlog.Option{bucketlog.WithCheckpointEvery(4)}, opts...)...)
		require.NoError(t, err)
		return l, fsm
	}
	la, fa := open("a", bucketlog.WithCatchUpLimit(2))
	lb, fb := open("b")
	for i := range 12 {
		addOne(t, lb, fb, fmt.Sprintf("seg-b-%02d", i))
	}
	a := addOne(t, la, fa, "seg-a")
	require.Equal(t, uint64(13), a.Index)
	require.Equal(t, uint64(1), la.Stats().Jumps, "restored a checkpoint after reading the entry it lost")
	require.Equal(t, uint64(1), la.Stats().Conflicts)
	require.NoError(t, lb.Barrier(ctx))
	bucketlogtest.SameOnOpen(t, mem, "compaction", bucketlogConfig(), lb, fb)
}
