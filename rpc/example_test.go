package rpc_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/bucketlog"
	"github.com/compactkit/compactkit/index"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/rpc"
)

// Example serves a leader over the protocol and reaches it as an
// ingester and as a worker would. The handler serves the leader.Service of
// any host; here it is a bucket log's node over an in-memory store.
func Example() {
	ctx := context.Background()
	node, err := bucketlog.OpenNode(ctx, blockmerge.NewMemStore(), "compaction", "leader-1", bucketlog.NodeConfig{State: raftfsm.DefaultConfig()})
	if err != nil {
		panic(err)
	}
	defer node.Close()

	// The leader's endpoint: gRPC, gRPC-Web and Connect over plain-text
	// HTTP/2. A host with several nodes passes rpc.WithLeaderURL.
	h := rpc.NewHandler(node.Service)
	srv := httptest.NewUnstartedServer(h)
	srv.Config = rpc.NewServer(h)
	srv.Start()
	defer srv.Close()

	c, err := rpc.NewClient([]string{srv.URL})
	if err != nil {
		panic(err)
	}
	// An ingester adds the blocks it wrote; sending them again is safe:
	// a block added before comes back as a duplicate.
	written := []ck.BlockMeta{leadertest.Block("seg-1", "acme", 0, 0), leadertest.Block("seg-2", "acme", 0, 1e9)}
	for range 2 {
		res, err := c.AddBlocks(ctx, written)
		if err != nil {
			panic(err)
		}
		fmt.Println("added:", res[0].Err == nil && res[1].Err == nil,
			"duplicates:", errors.Is(res[0].Err, index.ErrDuplicate) && errors.Is(res[1].Err, index.ErrDuplicate))
	}
	live, _, err := c.ListBlocks(ctx, "", rpc.MaxListLimit)
	if err != nil {
		panic(err)
	}
	fmt.Println("listed:", len(live), live[0].ID, live[1].ID)

	// c is a worker.Client: worker.New(c, store, cfg) polls through it.
	// Level 0 waits for 20 blocks (or 36 s) before it plans a job.
	resp, err := c.Poll(ctx, &ck.PollRequest{WorkerID: "worker-1", Seq: 1, FreeSlots: 1})
	if err != nil {
		panic(err)
	}
	fmt.Println("jobs:", len(resp.Jobs))
	// Output:
	// added: true duplicates: false
	// added: false duplicates: true
	// listed: 2 seg-1 seg-2
	// jobs: 0
}
