package sim

import (
	"slices"
	"strings"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
)

// checkData reads every live block from the store and compares its
// records with the model's: each record ingested, and not removed by
// retention, is in exactly one live block — the one its block's data went
// to — and nothing else is.
func (s *Sim) checkData() {
	s.rep.DataChecks++
	m := s.model
	seen := map[string]string{}
	ids := make([]string, 0, len(m.live))
	for id := range m.live {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		want := map[string]bool{}
		for _, ks := range m.blocks[id].keys {
			for _, k := range ks {
				want[k] = true
			}
		}
		rd, err := blockmerge.Open(s.ctx, s.store, id)
		if err != nil {
			s.fail("records exactly once", "live block %s unreadable: %v", id, err)
		}
		got := 0
		for i := range rd.Datasets() {
			it, err := rd.DatasetAt(s.ctx, i)
			if err != nil {
				s.fail("records exactly once", "block %s dataset %d: %v", id, i, err)
			}
			for it.Next() {
				k := string(it.Record().Key)
				if prev, dup := seen[k]; dup {
					s.fail("records exactly once", "record %s in %s and %s", k, prev, id)
				}
				seen[k] = id
				if !want[k] {
					s.fail("records exactly once", "record %s in %s, expected elsewhere", k, id)
				}
				got++
			}
			if err := it.Err(); err != nil {
				s.fail("records exactly once", "block %s: %v", id, err)
			}
			_ = it.Close()
		}
		if got != len(want) {
			s.fail("records exactly once", "block %s holds %d records, want %d", id, got, len(want))
		}
	}
}

// checkStore, at the fixed point: the store holds exactly the live blocks
// (no orphan left, nothing live deleted).
func (s *Sim) checkStore() {
	var keys []string
	_ = s.store.List(s.ctx, ck.BlockPrefix, func(k string) error {
		keys = append(keys, k)
		return nil
	})
	for _, k := range keys {
		id := strings.TrimPrefix(k, ck.BlockPrefix)
		if !s.model.live[id] {
			s.fail("no orphan left", "object %s left in the store (%s)", k, s.model.why(id))
		}
	}
	for id := range s.model.live {
		if !slices.Contains(keys, ck.ObjectKey(id)) {
			s.fail("nothing lost, nothing twice", "live block %s has no object", id)
		}
	}
}
