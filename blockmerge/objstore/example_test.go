package objstore_test

import (
	"context"
	"fmt"

	thanos "github.com/thanos-io/objstore"

	"github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/blockmerge/objstore"
)

// A worker merges blocks in any thanos-io/objstore bucket: here the
// in-memory one; in production an S3, GCS or Azure bucket built by
// objstore's providers.
func ExampleNew() {
	ctx := context.Background()
	store := objstore.New(thanos.NewInMemBucket())

	for i, tenant := range []string{"acme", "globex"} {
		_, err := blockmerge.WriteBlock(ctx, store, blockmerge.BlockInfo{ID: fmt.Sprint("seg-", i)}, []blockmerge.Dataset{
			{Tenant: tenant, Name: "api", Records: []blockmerge.Record{{Key: []byte("k"), Timestamp: int64(i), Value: []byte("v")}}},
		})
		if err != nil {
			panic(err)
		}
	}
	outs, err := blockmerge.Merge(ctx, store, &compactkit.JobPlan{Name: "job", Sources: []string{"seg-0", "seg-1"}}, 3)
	if err != nil {
		panic(err)
	}
	_ = store.List(ctx, "blocks/job/", func(key string) error {
		fmt.Println(key)
		return nil
	})
	fmt.Println(len(outs), "outputs")
	// Output:
	// blocks/job/3/0
	// blocks/job/3/1
	// 2 outputs
}
