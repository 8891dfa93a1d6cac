package raftfsm

import (
	"iter"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/index"
)

// IndexView is a read-only view of the block index as it was when
// [FSM.Index] opened it: the live blocks and the pending tombstones.
// Opening one costs O(1); it never changes, and it may be used on any
// goroutine, by several at once, while the state machine applies entries.
// Close it when done: while a view is open, the index copies the parts of
// its trees the view may read before changing them.
type IndexView struct{ v *index.View }

// TombstoneInfo is the state of a pending tombstone: the log time and the
// entry that created it (0 for an orphan), when its cleanup delay passes,
// and the job that holds it (empty while unattached).
type TombstoneInfo index.TombstoneInfo

// Close releases the view; a closed view must not be used. Closing twice
// is harmless.
func (v *IndexView) Close() { v.v.Close() }

// Now returns the index's log time when the view was opened.
func (v *IndexView) Now() int64 { return v.v.Now() }

// Len returns the number of live blocks.
func (v *IndexView) Len() int { return v.v.Len() }

// Live reports whether a block with this ID is live.
func (v *IndexView) Live(id string) bool { return v.v.Live(id) }

// Lookup returns the metadata of the live block with this ID.
func (v *IndexView) Lookup(id string) (ck.BlockMeta, bool) { return v.v.Lookup(id) }

// Blocks returns up to limit live blocks in ID order, starting after the ID
// after ("" starts at the beginning); a limit <= 0 means no limit.
func (v *IndexView) Blocks(after string, limit int) []ck.BlockMeta { return v.v.Blocks(after, limit) }

// Query returns the live blocks of tenant that overlap [from, to]
// (MinTime <= to and MaxTime >= from), of the given shard only if shard is
// not nil, in time order: by (MinTime, ID). Multi-tenant level-0 segments
// are included when one of their datasets belongs to tenant.
func (v *IndexView) Query(tenant string, from, to int64, shard *uint32) iter.Seq[ck.BlockMeta] {
	return v.v.Query(tenant, from, to, shard)
}

// ReadAmplification returns the number of objects a query of tenant over
// [from, to] must read: the number of live blocks [IndexView.Query]
// returns for it. It is the figure compaction exists to reduce.
func (v *IndexView) ReadAmplification(tenant string, from, to int64) int {
	return v.v.ReadAmplification(tenant, from, to)
}

// Tombstone returns the state of the tombstone t, if it is pending.
func (v *IndexView) Tombstone(t ck.Tombstone) (TombstoneInfo, bool) {
	ti, ok := v.v.Tombstone(t)
	return TombstoneInfo(ti), ok
}

// Tombstones returns up to limit pending tombstones in (kind, target)
// order, starting after after (the zero tombstone starts at the
// beginning); a limit <= 0 means no limit.
func (v *IndexView) Tombstones(after ck.Tombstone, limit int) []TombstoneInfo {
	ts := v.v.Tombstones(after, limit)
	out := make([]TombstoneInfo, len(ts))
	for i := range ts {
		out[i] = TombstoneInfo(ts[i])
	}
	return out
}

// Watermark returns the recorded reader watermark, if any.
func (v *IndexView) Watermark() (int64, bool) { return v.v.Watermark() }
