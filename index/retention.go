package index

import (
	"slices"
	"strings"

	ck "github.com/compactkit/compactkit"
)

// DropBefore applies a retention policy at entry e and log time now: the
// live blocks that end before before (MaxTime < before) leave the index and
// become block tombstones, releasable after the cleanup delay like replaced
// sources. It returns their metadata sorted by ID, so that the state
// machine can drop them from the planner and cancel the jobs that claim
// them.
//
// With all set, every tenant's blocks are considered, multi-tenant level-0
// segments included. Otherwise only tenant's: its single-tenant blocks,
// and the multi-tenant segments whose every dataset belongs to tenant. A
// segment that also holds another tenant's data is never dropped by a
// per-tenant retention, since that would delete the other tenant's data;
// it is dropped by an all-tenant retention, or its tenant's data leaves it
// when compaction splits it into single-tenant blocks. An empty tenant
// without all drops nothing.
func (x *Index) DropBefore(e ck.Entry, now int64, tenant string, all bool, before int64) []ck.BlockMeta {
	x.advance(now)
	t, ok := x.s.lookupName(tenant)
	if !all && (!ok || t == 0) || before == minInt64 {
		return nil
	}
	if all {
		t = 0
	}
	var victims []*block
	x.s.eachRun(t, all, func(r *run) bool {
		// MaxTime < before implies MinTime < before.
		x.s.scanRun(r, minInt64, before-1, func(it titem) bool {
			if it.b.maxTime >= before {
				return true
			}
			if !all && it.b.tenant == 0 {
				// A multi-tenant segment: only if all its data is tenant's.
				r := it.b.datasets()
				for d := (dataset{}); r.next(&d); {
					if d.tenant != t {
						return true
					}
				}
			}
			victims = append(victims, it.b)
			return true
		})
		return true
	})
	slices.SortFunc(victims, func(a, b *block) int { return strings.Compare(a.id, b.id) })
	victims = slices.CompactFunc(victims, func(a, b *block) bool { return a == b })
	out := make([]ck.BlockMeta, len(victims))
	ks := make([]tkey, len(victims))
	for i, b := range victims {
		out[i] = x.s.meta(b)
		x.remove(b)
		ks[i] = newKey(ck.TombstoneBlock, b.id)
	}
	x.newTombs(ks, e.Index)
	return out
}
