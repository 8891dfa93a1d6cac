package bucketlog_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/leader/leadertest"
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
