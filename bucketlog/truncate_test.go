package bucketlog_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
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
	fsm, err := raftfsm.New(bucketlogtest.Config())
	require.NoError(t, err)
	l, err := bucketlog.Open(ctx, store, "compaction", fsm, "c1", bucketlog.WithCheckpointEvery(16),
		bucketlog.WithClock(func() time.Time { return now }))
	require.NoError(t, err)
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
		fsm, err := raftfsm.New(bucketlogtest.Config())
		require.NoError(t, err)
		l, err := bucketlog.Open(ctx, store, "compaction", fsm, id, bucketlog.WithCheckpointEvery(16), bucketlog.WithTruncateGrace(0))
		require.NoError(t, err)
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
