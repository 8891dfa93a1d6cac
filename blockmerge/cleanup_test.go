package blockmerge_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
)

func TestDeleteTombstone(t *testing.T) {
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
			block := compactkit.Tombstone{Kind: compactkit.TombstoneBlock, Target: "src-1"}
			prefix := compactkit.Tombstone{Kind: compactkit.TombstonePrefix, Target: compactkit.AttemptPrefix("job", 5)}
			for range 2 { // idempotent
				require.NoError(t, blockmerge.DeleteTombstone(ctx, s, block))
				require.NoError(t, blockmerge.DeleteTombstone(ctx, s, prefix))
			}
			require.Equal(t, []string{"blocks/job/50/0", "blocks/job/6/0", "blocks/src-2"}, listKeys(t, s, ""))

			bad := []compactkit.Tombstone{
				{Kind: compactkit.TombstonePrefix, Target: "other/x/"},
				{Kind: compactkit.TombstoneBlock, Target: "../x"},
				{Kind: 9, Target: "x"},
			}
			for _, tb := range bad {
				require.Error(t, blockmerge.DeleteTombstone(ctx, s, tb), "%s", tb)
			}

			done, err := blockmerge.DeleteTombstones(ctx, s, []compactkit.Tombstone{
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
