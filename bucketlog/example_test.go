package bucketlog_test

import (
	"context"
	"fmt"
	"os"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/bucketlog"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/raftfsm"
)

// Two coordinators on one bucket (here a directory; any store with
// conditional puts), each serving workers through a leader service over
// its own view of the log. Whatever one appends, the other applies.
func Example() {
	store, remove := exampleStore()
	defer remove()
	ctx := context.Background()
	open := func(id string) *leader.Service {
		cfg := raftfsm.DefaultConfig()
		cfg.Planner.Levels[0].MaxBlocks = 2
		fsm, err := raftfsm.New(cfg)
		if err != nil {
			panic(err)
		}
		l, err := bucketlog.Open(ctx, store, "compaction", fsm, id)
		if err != nil {
			panic(err)
		}
		// Appends race: retry prepared polls with a short backoff; prepare
		// them at the log's time.
		return leader.New(l, fsm, leader.WithClock(l.Now),
			leader.WithRetries(32, func(n int) time.Duration { return time.Duration(n+1) * time.Millisecond }))
	}
	a, b := open("coordinator-a"), open("coordinator-b")

	if _, err := a.AddBlocks(ctx, []ck.BlockMeta{leadertest.Block("seg-1", "acme", 0, 0), leadertest.Block("seg-2", "acme", 0, 1e9)}); err != nil {
		panic(err)
	}
	resp, err := b.Poll(ctx, &ck.PollRequest{WorkerID: "worker-1", Seq: 1, FreeSlots: 1})
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Jobs[0].Outcome, resp.Jobs[0].Plan.Sources)
	// Output: assigned [seg-1 seg-2]
}

// exampleStore returns a file store in a new temporary directory, and the
// function that closes it and removes the directory.
func exampleStore() (*blockmerge.FileStore, func()) {
	dir, err := os.MkdirTemp("", "bucketlog-example-")
	if err != nil {
		panic(err)
	}
	store, err := blockmerge.NewFileStore(dir)
	if err != nil {
		panic(err)
	}
	return store, func() {
		store.Close()
		os.RemoveAll(dir)
	}
}

// Serverless: no coordinator. The ingest process and each worker open
// their own node of the log; a node is a worker.Client, so a worker.Worker
// runs on it directly (here one poll by hand).
func ExampleOpenNode() {
	store, remove := exampleStore()
	defer remove()
	ctx := context.Background()
	cfg := bucketlog.NodeConfig{State: raftfsm.DefaultConfig()}
	cfg.State.Planner.Levels[0].MaxBlocks = 2
	ingest, err := bucketlog.OpenNode(ctx, store, "compaction", "ingest-1", cfg)
	if err != nil {
		panic(err)
	}
	defer ingest.Close()
	w, err := bucketlog.OpenNode(ctx, store, "compaction", "worker-1", cfg)
	if err != nil {
		panic(err)
	}
	defer w.Close()

	if _, err := ingest.AddBlocks(ctx, []ck.BlockMeta{leadertest.Block("seg-1", "acme", 0, 0), leadertest.Block("seg-2", "acme", 0, 1e9)}); err != nil {
		panic(err)
	}
	// The worker's node reads the ingest's entry, prepares the poll on
	// its own replica and appends it.
	resp, err := w.Poll(ctx, &ck.PollRequest{WorkerID: "worker-1", Seq: 1, FreeSlots: 1})
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Jobs[0].Outcome, resp.Jobs[0].Plan.Sources)
	// Output: assigned [seg-1 seg-2]
}
