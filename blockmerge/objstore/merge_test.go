package objstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"

	thanos "github.com/thanos-io/objstore"

	"github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/blockmerge/objstore"
	"github.com/compactkit/compactkit/blockmerge/objstore/versitytest"
)

// TestMergeThroughBuckets runs a whole compaction through the adapter:
// ingest writes level-0 segments, a worker merges them (outputs staged in
// a temporary file and uploaded), reads them back with range reads, and
// deletes the sources by tombstone; a corrupt source leaves nothing
// behind.
func TestMergeThroughBuckets(t *testing.T) {
	srv := newFakeS3(t)
	for _, tc := range []struct {
		name  string
		store func(t *testing.T) *objstore.Store
	}{
		{"inmem", func(*testing.T) *objstore.Store { return objstore.New(thanos.NewInMemBucket()) }},
		{"s3", func(t *testing.T) *objstore.Store { return srv.bucket(t) }},
		{"versitygw", func(t *testing.T) *objstore.Store { // a real S3 server
			s, _ := versitytest.Start(t).ConditionalStore(t, 5<<20)
			return s.Store
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := tc.store(t)
			want := map[string][]blockmerge.Record{}
			var sources []string
			for i := range 3 {
				var ds []blockmerge.Dataset
				for _, tenant := range []string{"acme", "globex"} {
					var recs []blockmerge.Record
					for j := range 500 {
						recs = append(recs, blockmerge.Record{
							Key:       fmt.Appendf(nil, "%s-key-%04d", tenant, (j*7+i*3)%700),
							Timestamp: int64(j % 50),
							Value:     bytes.Repeat([]byte{byte('a' + i)}, j%90*4), // several 64 KiB pages
						})
					}
					ds = append(ds, blockmerge.Dataset{Tenant: tenant, Name: "profiles", Records: recs})
					want[tenant] = append(want[tenant], recs...)
				}
				id := fmt.Sprintf("seg-%d", i)
				if _, err := blockmerge.WriteBlock(ctx, s, blockmerge.BlockInfo{ID: id}, ds); err != nil {
					t.Fatal(err)
				}
				sources = append(sources, id)
			}

			plan := &compactkit.JobPlan{Name: "job", Sources: sources}
			outs, err := blockmerge.Merge(ctx, s, plan, 7)
			if err != nil {
				t.Fatal(err)
			}
			if len(outs) != 2 || outs[0].Tenant != "acme" || outs[1].Tenant != "globex" {
				t.Fatalf("outputs %+v", outs)
			}
			for _, o := range outs {
				if err := o.Validate(); err != nil {
					t.Fatal(err)
				}
				v, err := blockmerge.Verify(ctx, s, o.ID)
				if err != nil {
					t.Fatal(err)
				}
				if v.Size != o.Size || v.Records() != o.Records() {
					t.Fatalf("footer %+v, returned %+v", v, o)
				}
				r, err := blockmerge.Open(ctx, s, o.ID)
				if err != nil {
					t.Fatal(err)
				}
				it, err := r.Dataset(ctx, "", "profiles")
				if err != nil {
					t.Fatal(err)
				}
				var got []blockmerge.Record
				for it.Next() {
					got = append(got, it.Record().Clone())
				}
				if err := it.Err(); err != nil {
					t.Fatal(err)
				}
				exp := slices.SortedFunc(slices.Values(want[o.Tenant]), blockmerge.Compare)
				exp = slices.CompactFunc(exp, func(a, b blockmerge.Record) bool { return blockmerge.Compare(a, b) == 0 })
				if len(got) != len(exp) {
					t.Fatalf("%s: %d records, want %d", o.Tenant, len(got), len(exp))
				}
				for i := range got {
					if blockmerge.Compare(got[i], exp[i]) != 0 {
						t.Fatalf("%s: record %d differs", o.Tenant, i)
					}
				}
			}

			// The sources are deleted by tombstone, idempotently.
			for _, id := range sources {
				for range 2 {
					if _, err := blockmerge.ObjectLayout.DeleteTombstones(ctx, s, []compactkit.Tombstone{{Kind: compactkit.TombstoneBlock, Target: id}}); err != nil {
						t.Fatal(err)
					}
				}
			}
			keys := list(t, s, "")
			if len(keys) != 2 || keys[0] != compactkit.ObjectKey(outs[0].ID) || keys[1] != compactkit.ObjectKey(outs[1].ID) {
				t.Fatalf("objects left: %q", keys)
			}

			// Merging the outputs again, with one corrupted, fails and
			// leaves nothing under the new attempt's prefix.
			rc, err := s.Get(ctx, compactkit.ObjectKey(outs[1].ID))
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatal(err)
			}
			b[20] ^= 0xff
			if err := s.Put(ctx, compactkit.ObjectKey(outs[1].ID), bytes.NewReader(b)); err != nil {
				t.Fatal(err)
			}
			plan2 := &compactkit.JobPlan{Name: "job2", Sources: []string{outs[0].ID, outs[1].ID}}
			_, err = blockmerge.Merge(ctx, s, plan2, 8)
			if !errors.Is(err, compactkit.ErrChecksum) {
				t.Fatalf("merge of a corrupt source: %v", err)
			}
			if left := list(t, s, compactkit.AttemptPrefix("job2", 8)); len(left) != 0 {
				t.Fatalf("outputs left behind: %q", left)
			}
		})
	}
}

func list(t *testing.T, s blockmerge.Store, prefix string) []string {
	t.Helper()
	var keys []string
	if err := s.List(context.Background(), prefix, func(k string) error {
		keys = append(keys, k)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return keys
}
