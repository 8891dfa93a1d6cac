package blockmerge_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
)

func TestDeleteTombstones(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"mem", "file"} {
		t.Run(name, func(t *testing.T) {
			var s blockmerge.Store = blockmerge.NewMemStore()
			if name == "file" {
				s = newFileStore(t)
			}
			for _, k := range []string{"blocks/src-1", "blocks/src-2", "blocks/job/5/0", "blocks/job/5/1", "blocks/job/50/0", "blocks/job/6/0"} {
				putBytes(t, s, k, []byte(k))
			}
			deleteOne := func(tb compactkit.Tombstone) error {
				done, err := blockmerge.ObjectLayout.DeleteTombstones(ctx, s, []compactkit.Tombstone{tb})
				if err == nil {
					require.Equal(t, []compactkit.Tombstone{tb}, done)
				} else {
					require.Empty(t, done)
				}
				return err
			}
			block := compactkit.Tombstone{Kind: compactkit.TombstoneBlock, Target: "src-1"}
			prefix := compactkit.Tombstone{Kind: compactkit.TombstonePrefix, Target: compactkit.AttemptPrefix("job", 5)}
			for range 2 { // idempotent
				require.NoError(t, deleteOne(block))
				require.NoError(t, deleteOne(prefix))
			}
			require.Equal(t, []string{"blocks/job/50/0", "blocks/job/6/0", "blocks/src-2"}, listKeys(t, s, ""))

			bad := []compactkit.Tombstone{
				{Kind: compactkit.TombstonePrefix, Target: "other/x/"},
				{Kind: compactkit.TombstoneBlock, Target: "../x"},
				{Kind: 9, Target: "x"},
			}
			for _, tb := range bad {
				require.Error(t, deleteOne(tb), "%s", tb)
			}

			done, err := blockmerge.ObjectLayout.DeleteTombstones(ctx, s, []compactkit.Tombstone{
				{Kind: compactkit.TombstoneBlock, Target: "src-2"},
				bad[1],
				{Kind: compactkit.TombstonePrefix, Target: compactkit.AttemptPrefix("job", 6)},
			})
			require.ErrorIs(t, err, compactkit.ErrInvalidID)
			require.Equal(t, []compactkit.Tombstone{
				{Kind: compactkit.TombstoneBlock, Target: "src-2"},
				{Kind: compactkit.TombstonePrefix, Target: compactkit.AttemptPrefix("job", 6)},
			}, done)
			require.Equal(t, []string{"blocks/job/50/0"}, listKeys(t, s, ""))
		})
	}
}

// TestPrefixLayout: a block of several objects is deleted whole, and
// nothing of a block whose ID merely starts with the same characters.
func TestPrefixLayout(t *testing.T) {
	ctx := context.Background()
	s := blockmerge.NewMemStore()
	for _, k := range []string{"blocks/src-1/meta.json", "blocks/src-1/chunks/000001", "blocks/src-10/meta.json", "blocks/src-1x", "blocks/job/5/0/meta.json"} {
		putBytes(t, s, k, []byte(k))
	}
	block := compactkit.Tombstone{Kind: compactkit.TombstoneBlock, Target: "src-1"}
	for range 2 { // idempotent
		done, err := blockmerge.PrefixLayout.DeleteTombstones(ctx, s, []compactkit.Tombstone{block})
		require.NoError(t, err)
		require.Equal(t, []compactkit.Tombstone{block}, done)
	}
	require.Equal(t, []string{"blocks/job/5/0/meta.json", "blocks/src-10/meta.json", "blocks/src-1x"}, listKeys(t, s, ""))
	_, err := blockmerge.PrefixLayout.DeleteTombstones(ctx, s, []compactkit.Tombstone{{Kind: compactkit.TombstonePrefix, Target: compactkit.AttemptPrefix("job", 5)}})
	require.NoError(t, err)
	require.Equal(t, []string{"blocks/src-10/meta.json", "blocks/src-1x"}, listKeys(t, s, ""))
	done, err := blockmerge.Layout(7).DeleteTombstones(ctx, s, []compactkit.Tombstone{{Kind: compactkit.TombstoneBlock, Target: "src-10"}})
	require.ErrorIs(t, err, blockmerge.ErrInvalidKey, "an unknown layout")
	require.Empty(t, done)
}
