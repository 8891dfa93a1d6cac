package demo

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/raftfsm"
)

// ErrVerification reports a run whose final state failed a check.
var ErrVerification = errors.New("demo: verification failed")

// Check is one verified property.
type Check struct {
	Name   string
	OK     bool
	Detail string
}

// Verification is the list of checks of a run's final state.
type Verification struct {
	Checks []Check
	// Records and Checksum are those found in the live blocks.
	Records  int
	Checksum uint64
}

// OK reports whether every check passed.
func (v Verification) OK() bool {
	for _, c := range v.Checks {
		if !c.OK {
			return false
		}
	}
	return len(v.Checks) > 0
}

// Failed names the failed checks.
func (v Verification) Failed() string {
	var out []string
	for _, c := range v.Checks {
		if !c.OK {
			out = append(out, c.Name+": "+c.Detail)
		}
	}
	return strings.Join(out, "; ")
}

func (v *Verification) add(name string, ok bool, format string, args ...any) {
	v.Checks = append(v.Checks, Check{Name: name, OK: ok, Detail: fmt.Sprintf(format, args...)})
}

// Verify checks the final state: every record the ledger ingested is in
// exactly one live block (counts, a checksum and per-record accounting),
// no object is in the store but the live blocks' (no source, no orphan),
// every live block's object exists with the size and metadata the index
// has, and no job or tombstone is left. It also returns the live blocks and
// objects per level. An error means the check itself could not run.
func Verify(ctx context.Context, store blockmerge.Store, live []ck.BlockMeta, ledger *Ledger, st raftfsm.Stats) (Verification, []LevelCount, error) {
	var v Verification
	wantN, wantSum := ledger.Records()
	levels := map[uint32]*LevelCount{}
	level := func(l uint32) *LevelCount {
		if levels[l] == nil {
			levels[l] = &LevelCount{Level: l}
		}
		return levels[l]
	}

	// Objects in the store, under the blocks prefix (a bucket log keeps
	// its entries beside them).
	objects := map[string]bool{}
	if err := store.List(ctx, ck.BlockPrefix, func(key string) error { objects[key] = true; return nil }); err != nil {
		return v, nil, fmt.Errorf("listing the store: %w", err)
	}

	// Every live block: object present, footer agrees, records counted.
	seen := make(map[uint64]int, wantN)
	var unknown, mismatched int
	var firstMismatch string
	liveKeys := map[string]bool{}
	for i := range live {
		m := &live[i]
		key := ck.ObjectKey(m.ID)
		liveKeys[key] = true
		lc := level(m.Level)
		lc.Blocks++
		lc.Bytes += m.Size
		if !objects[key] {
			mismatched++
			if firstMismatch == "" {
				firstMismatch = "block " + m.ID + " has no object"
			}
			continue
		}
		lc.Objects++
		rd, err := blockmerge.Open(ctx, store, m.ID)
		if err != nil {
			return v, nil, fmt.Errorf("opening block %s: %w", m.ID, err)
		}
		if d := metaDiff(m, rd.Meta()); d != "" {
			mismatched++
			if firstMismatch == "" {
				firstMismatch = "block " + m.ID + ": " + d
			}
		}
		for _, d := range rd.Meta().Datasets {
			it, err := rd.Dataset(ctx, d.Tenant, d.Name)
			if err != nil {
				return v, nil, fmt.Errorf("reading block %s: %w", m.ID, err)
			}
			for it.Next() {
				h := RecordHash(it.Meta().Tenant, it.Meta().Name, it.Record())
				seen[h]++
				v.Records++
				v.Checksum += h
				if !ledger.Has(h) {
					unknown++
				}
			}
			if err := it.Err(); err != nil {
				return v, nil, fmt.Errorf("reading block %s: %w", m.ID, err)
			}
		}
	}
	dups, missing := 0, 0
	for _, n := range seen {
		if n > 1 {
			dups += n - 1
		}
	}
	missing = wantN - (len(seen) - unknown)
	v.add("records", v.Records == wantN, "%d ingested, %d in the live blocks", wantN, v.Records)
	v.add("checksum", v.Checksum == wantSum, "ingested %016x, live blocks %016x", wantSum, v.Checksum)
	v.add("exactly once", dups == 0 && missing == 0 && unknown == 0,
		"%d missing, %d duplicated, %d unknown", missing, dups, unknown)

	// Objects that belong to no live block: leftover sources or orphans.
	var stray []string
	segs, _ := ledger.Segments()
	leftSources := 0
	for key := range objects {
		if !liveKeys[key] {
			stray = append(stray, key)
		}
	}
	for i := range segs {
		if k := ck.ObjectKey(segs[i].ID); objects[k] && !liveKeys[k] {
			leftSources++
		}
	}
	sort.Strings(stray)
	detail := fmt.Sprintf("%d objects, %d live blocks", len(objects), len(live))
	if len(stray) > 0 {
		detail += fmt.Sprintf("; %d stray, first %s", len(stray), stray[0])
	}
	v.add("no source left", leftSources == 0, "%d of %d ingested segments replaced and deleted, %d left",
		len(segs)-countLive(segs, liveKeys)-leftSources, len(segs), leftSources)
	v.add("no orphan", len(stray) == 0, "%s", detail)
	if firstMismatch == "" {
		firstMismatch = "every live block's object exists and its footer matches the index"
	}
	v.add("index = object store", mismatched == 0 && int64(len(live)) == st.Index.Blocks, "%s (%d mismatched)", firstMismatch, mismatched)
	v.add("nothing pending", st.Drained() && st.Planner.Quarantined == 0 && st.Index.Orphans == 0,
		"%d queued, %d claimed, %d quarantined, %d jobs, %d tombstones, %d orphan prefixes",
		st.Planner.Queued, st.Planner.Claimed, st.Planner.Quarantined, st.Scheduler.Jobs, st.Tombstones, st.Index.Orphans)

	out := make([]LevelCount, 0, len(levels))
	for _, lc := range levels {
		out = append(out, *lc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Level < out[j].Level })
	return v, out, nil
}

func countLive(segs []ck.BlockMeta, live map[string]bool) int {
	n := 0
	for i := range segs {
		if live[ck.ObjectKey(segs[i].ID)] {
			n++
		}
	}
	return n
}

// metaDiff compares the index's metadata of a block with its footer's.
func metaDiff(idx *ck.BlockMeta, obj ck.BlockMeta) string {
	switch {
	case idx.ID != obj.ID, idx.Tenant != obj.Tenant, idx.Shard != obj.Shard, idx.Level != obj.Level:
		return fmt.Sprintf("identity differs: index %s/%q/%d/L%d, object %s/%q/%d/L%d",
			idx.ID, idx.Tenant, idx.Shard, idx.Level, obj.ID, obj.Tenant, obj.Shard, obj.Level)
	case idx.MinTime != obj.MinTime, idx.MaxTime != obj.MaxTime:
		return "time range differs"
	case idx.Size != obj.Size:
		return fmt.Sprintf("size: index %d, object %d", idx.Size, obj.Size)
	case idx.Records() != obj.Records(), len(idx.Datasets) != len(obj.Datasets):
		return fmt.Sprintf("records: index %d in %d datasets, object %d in %d", idx.Records(), len(idx.Datasets), obj.Records(), len(obj.Datasets))
	}
	return ""
}
