// Command objstore merges two blocks in thanos-io/objstore's in-memory
// bucket through compactkit's objstore adapter.
package main

import (
	"context"
	"fmt"
	"log"

	thanos "github.com/thanos-io/objstore"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/blockmerge/objstore"
)

func main() {
	ctx := context.Background()
	store := objstore.New(thanos.NewInMemBucket())
	for i, tenant := range []string{"acme", "globex"} {
		_, err := blockmerge.WriteBlock(ctx, store, blockmerge.BlockInfo{ID: fmt.Sprint("seg-", i)}, []blockmerge.Dataset{
			{Tenant: tenant, Name: "api", Records: []blockmerge.Record{{Key: []byte("k"), Timestamp: int64(i), Value: []byte("v")}}},
		})
		if err != nil {
			log.Fatal(err)
		}
	}
	outs, err := blockmerge.Merge(ctx, store, &ck.JobPlan{Name: "job", Sources: []string{"seg-0", "seg-1"}}, 3)
	if err != nil {
		log.Fatal(err)
	}
	var keys []string
	if err := store.List(ctx, "blocks/job/", func(key string) error { keys = append(keys, key); return nil }); err != nil {
		log.Fatal(err)
	}
	if len(outs) != 2 || len(keys) != 2 {
		log.Fatalf("%d outputs, keys %v; want one output per tenant", len(outs), keys)
	}
	fmt.Println("objstore: merged into", keys)
}
