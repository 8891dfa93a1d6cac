package blockmerge_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/fencing"
)

func TestFencedStoreRefusesStaleWrites(t *testing.T) {
	ctx := context.Background()
	mem := blockmerge.NewMemStore()
	var g fencing.Guard
	old := blockmerge.NewFencedStore(mem, &g, "job-1", 10)
	newer := blockmerge.NewFencedStore(mem, &g, "job-1", 11)
	other := blockmerge.NewFencedStore(mem, &g, "job-2", 3)

	putBytes(t, old, "blocks/job-1/10/0", []byte("old attempt"))
	// The old attempt starts a streaming write before the newer one
	// shows up...
	w, err := blockmerge.CreateObject(ctx, old, "blocks/job-1/10/1", "")
	require.NoError(t, err)
	_, err = w.Write([]byte("late"))
	require.NoError(t, err)

	putBytes(t, newer, "blocks/job-1/11/0", []byte("new attempt"))

	// ...and from now on every write of the old attempt is refused.
	require.ErrorIs(t, w.Commit(), fencing.ErrStaleToken)
	require.ErrorIs(t, old.Put(ctx, "blocks/job-1/10/2", strings.NewReader("x")), fencing.ErrStaleToken)
	err = old.Delete(ctx, "blocks/job-1/11/0")
	require.ErrorIs(t, err, fencing.ErrStaleToken)
	require.ErrorContains(t, err, "blocks/job-1/11/0")
	require.ErrorIs(t, old.DeleteByPrefix(ctx, "blocks/job-1/"), fencing.ErrStaleToken)
	_, err = blockmerge.CreateObject(ctx, old, "blocks/job-1/10/3", "")
	require.ErrorIs(t, err, fencing.ErrStaleToken)

	// Reads still work, for the old attempt too.
	require.Equal(t, "new attempt", string(objectBytes(t, old, "blocks/job-1/11/0")))
	require.Equal(t, []string{"blocks/job-1/10/0", "blocks/job-1/11/0"}, listKeys(t, old, "blocks/job-1/"))

	// Other jobs are not affected, nor is the newer attempt.
	putBytes(t, other, "blocks/job-2/3/0", []byte("x"))
	putBytes(t, newer, "blocks/job-1/11/1", []byte("y"))
	require.NoError(t, newer.Delete(ctx, "blocks/job-1/11/1"))
	require.Equal(t, []string{"blocks/job-1/10/0", "blocks/job-1/11/0", "blocks/job-2/3/0"}, listKeys(t, mem, ""))

	// The stale attempt may still delete its own outputs, and only those.
	putBytes(t, mem, "blocks/job-1/100/0", []byte("a token sharing a textual prefix"))
	require.ErrorIs(t, old.DeleteByPrefix(ctx, "blocks/job-1/10"), fencing.ErrStaleToken)
	require.NoError(t, old.DeleteByPrefix(ctx, "blocks/job-1/10/"))
	require.NoError(t, old.Delete(ctx, "blocks/job-1/10/0"))
	require.Equal(t, []string{"blocks/job-1/100/0", "blocks/job-1/11/0", "blocks/job-2/3/0"}, listKeys(t, mem, ""))
}
