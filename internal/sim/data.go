package sim

import (
	"crypto/sha256"
	"io"
	"slices"
	"strings"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
)

// checkData reads every live block from the store and compares its
// records with the model's: each record ingested, and not removed by
// retention, is in exactly one live block — the one its block's data went
// to — and nothing else is.
//
// A block's records are decoded once per content: an object whose bytes
// hash as they did at the last check reuses the keys read then.
func (s *Sim) checkData() {
	s.rep.DataChecks++
	m := s.model
	seen := map[string]string{}
	ids := make([]string, 0, len(m.live))
	for id := range m.live {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	cache := make(map[string]blockRecords, len(ids))
	for _, id := range ids {
		want := map[string]bool{}
		for _, ks := range m.blocks[id].keys {
			for _, k := range ks {
				want[k] = true
			}
		}
		recs := s.blockRecords(id)
		cache[id] = recs
		for _, k := range recs.keys {
			if prev, dup := seen[k]; dup {
				s.fail("records exactly once", "record %s in %s and %s", k, prev, id)
			}
			seen[k] = id
			if !want[k] {
				s.fail("records exactly once", "record %s in %s, expected elsewhere", k, id)
			}
		}
		if len(recs.keys) != len(want) {
			s.fail("records exactly once", "block %s holds %d records, want %d", id, len(recs.keys), len(want))
		}
	}
	s.records = cache
}

// blockRecords are the record keys of a block object, and the hash of the
// object's bytes they were read from.
type blockRecords struct {
	sum  [32]byte
	keys []string
}

// blockRecords reads the keys of a live block's records, from the cache
// when the object's bytes have not changed since they were read.
func (s *Sim) blockRecords(id string) blockRecords {
	rc, err := s.store.Get(s.ctx, ck.ObjectKey(id))
	if err != nil {
		s.fail("records exactly once", "live block %s unreadable: %v", id, err)
	}
	data, err := io.ReadAll(rc)
	_ = rc.Close()
	if err != nil {
		s.fail("records exactly once", "live block %s unreadable: %v", id, err)
	}
	sum := sha256.Sum256(data)
	if c, ok := s.records[id]; ok && c.sum == sum {
		return c
	}
	rd, err := blockmerge.Open(s.ctx, s.store, id)
	if err != nil {
		s.fail("records exactly once", "live block %s unreadable: %v", id, err)
	}
	out := blockRecords{sum: sum}
	for i, d := range rd.Meta().Datasets {
		it, err := rd.Dataset(s.ctx, d.Tenant, d.Name)
		if err != nil {
			s.fail("records exactly once", "block %s dataset %d: %v", id, i, err)
		}
		for it.Next() {
			out.keys = append(out.keys, string(it.Record().Key))
		}
		if err := it.Err(); err != nil {
			s.fail("records exactly once", "block %s: %v", id, err)
		}
		_ = it.Close()
	}
	return out
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
