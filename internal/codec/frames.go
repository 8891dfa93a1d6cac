package codec

import "github.com/google/btree"

// InFrames calls flush with successive batches of at most [FrameRecords]
// items visited by each (a tree's Ascend or Descend), and stops at the
// first error, which it returns. The batch grows with the items, so a
// small tree does not pay for a full frame's buffer; flush must not keep
// the slice it is given.
func InFrames[T any](each func(btree.ItemIteratorG[T]), flush func([]T) error) error {
	var batch []T
	var err error
	each(func(it T) bool {
		batch = append(batch, it)
		if len(batch) == FrameRecords {
			err = flush(batch)
			batch = batch[:0]
		}
		return err == nil
	})
	if err == nil && len(batch) > 0 {
		err = flush(batch)
	}
	return err
}
