package codec_test

import (
	"errors"
	"testing"

	"github.com/google/btree"
	"github.com/stretchr/testify/require"

	"github.com/compactkit/compactkit/internal/codec"
)

func TestInFrames(t *testing.T) {
	tree := btree.NewOrderedG[int](8)
	n := 2*codec.FrameRecords + 3
	for i := range n {
		tree.ReplaceOrInsert(i)
	}
	var sizes []int
	next := 0
	require.NoError(t, codec.InFrames(tree.Ascend, func(batch []int) error {
		sizes = append(sizes, len(batch))
		for _, v := range batch {
			require.Equal(t, next, v)
			next++
		}
		return nil
	}))
	require.Equal(t, []int{codec.FrameRecords, codec.FrameRecords, 3}, sizes)

	require.NoError(t, codec.InFrames(btree.NewOrderedG[int](8).Ascend, func([]int) error {
		t.Fatal("an empty tree flushes nothing")
		return nil
	}))

	boom := errors.New("boom")
	calls := 0
	err := codec.InFrames(tree.Descend, func([]int) error { calls++; return boom })
	require.ErrorIs(t, err, boom)
	require.Equal(t, 1, calls, "the first error stops the walk")
}
