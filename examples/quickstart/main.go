// Command quickstart is compactkit end to end in one short program, to read
// top to bottom and copy: the state machine hosted on a single-node
// hashicorp/raft cluster, a filesystem object store, ingest of small level-0
// segments, workers that merge them level by level and delete what they
// replaced, and a check that every ingested record is in the final blocks.
// It runs in a few seconds once built; the first go run also compiles
// the dependencies, which takes longer.
//
//	go run ./examples/quickstart
//
// examples/demo does the same at scale, with progress bars, a status page
// (kept up after the run with -serve), a worker cut off mid-run and a full
// verification; its tests also run it on a real S3 server.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/raftfsm/hraft/hraftnode"
	"github.com/compactkit/compactkit/worker"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if _, err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// outcome is what a run ingested and found at the end.
type outcome struct {
	Segments, Ingested int            // level-0 segments and records ingested
	Blocks, Live       int            // live blocks at the end and their records
	Objects            int            // objects left in the store
	Levels             map[uint32]int // live blocks per level
	Stats              raftfsm.Stats  // the state machine once drained
}

func run(ctx context.Context, out io.Writer) (res outcome, err error) {
	// 1. The object store: a directory (in production, a bucket through
	// blockmerge/objstore).
	dir, err := os.MkdirTemp("", "compactkit-quickstart-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	store, err := blockmerge.NewFileStore(dir)
	if err != nil {
		return res, err
	}
	defer store.Close()

	// 2. The replicated configuration: the defaults (levels 0, 1 and 2
	// compacted, level 3 final) with batches of 4 blocks that wait at most
	// half a second, and replaced blocks deleted soon after.
	state := raftfsm.DefaultConfig()
	for i := range state.Planner.Levels {
		state.Planner.Levels[i].MaxBlocks = 4
		state.Planner.Levels[i].MaxAge = 500 * time.Millisecond
	}
	state.Index.CleanupDelay = 100 * time.Millisecond

	// 3. The host: one hashicorp/raft node with in-memory stores, running
	// the state machine. node.Service is the leader's API.
	_, trans := raft.NewInmemTransport("")
	node, err := hraftnode.New(hraftnode.Config{ID: "node-1", Transport: trans, State: &state,
		FSMOptions: []raftfsm.Option{raftfsm.WithCleanupAfter(200 * time.Millisecond)}})
	if err != nil {
		return res, err
	}
	defer node.Shutdown()
	if err := node.Bootstrap(); err != nil {
		return res, err
	}
	if err := node.WaitServing(ctx); err != nil {
		return res, err
	}
	leader := node.Service

	// 4. Workers. The service is a worker.Client; across processes the
	// leader serves rpc.NewHandler(node.Service.Service) and a worker's
	// client is an rpc.NewClient (examples/demo runs them so).
	wctx, stopWorkers := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stopWorkers(); wg.Wait() }() // before the node shuts down
	for i := range 3 {
		w, err := worker.New(leader, store, worker.Config{
			ID: worker.NewID(fmt.Sprintf("worker-%d", i+1)), Concurrency: 2, PollInterval: 50 * time.Millisecond})
		if err != nil {
			return res, err
		}
		wg.Go(func() { _ = w.Run(wctx) }) // returns once wctx is done
	}

	// 5. Ingest: write each segment to the store, then add its metadata.
	// A segment holds datasets of several tenants; compaction splits them.
	start := time.Now().Add(-time.Hour).UnixNano()
	for i := range 32 {
		shard := uint32(i % 2)
		var sets []blockmerge.Dataset
		for _, tenant := range []string{"acme", "globex"} {
			recs := make([]blockmerge.Record, 10)
			for r := range recs {
				ts := start + int64(i*len(recs)+r)*int64(time.Second)
				recs[r] = blockmerge.Record{Key: fmt.Appendf(nil, `cpu{host="h%d"}`, r%3), Timestamp: ts, Value: fmt.Appendf(nil, "%d", r)}
			}
			sets = append(sets, blockmerge.Dataset{Tenant: tenant, Name: "cpu", Records: recs})
			res.Ingested += len(recs)
		}
		info := blockmerge.BlockInfo{ID: fmt.Sprintf("seg/%d/%03d", shard, i), Shard: shard}
		meta, err := blockmerge.WriteBlock(ctx, store, info, sets)
		if err != nil {
			return res, err
		}
		added, err := leader.AddBlocks(ctx, []ck.BlockMeta{meta})
		if err == nil {
			err = added[0].Err // nil: the block is indexed and queued
		}
		if err != nil {
			return res, err
		}
		res.Segments++
	}
	fmt.Fprintf(out, "ingested %d segments, %d records\n", res.Segments, res.Ingested)

	// 6. Drain: wait until nothing is queued, no job runs and no replaced
	// block awaits deletion.
	for {
		fsm, err := leader.Read(ctx)
		if err != nil {
			return res, err // ctx done, or no longer the leader
		}
		res.Stats = fsm.Stats()
		if res.Stats.Drained() {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Fprintf(out, "drained: %d jobs completed, log index %d\n", res.Stats.Scheduler.Counters.Completed, res.Stats.LastApplied)

	// 7. Verify: read every live block back and count its records.
	fsm, err := leader.Read(ctx)
	if err != nil {
		return res, err
	}
	view := fsm.Index()
	defer view.Close()
	res.Levels = map[uint32]int{}
	for _, m := range view.Blocks("", 0) {
		rd, err := blockmerge.Open(ctx, store, m.ID)
		if err != nil {
			return res, err
		}
		for _, d := range rd.Meta().Datasets {
			it, err := rd.Dataset(ctx, d.Tenant, d.Name)
			if err != nil {
				return res, err
			}
			for it.Next() {
				res.Live++
			}
			if err := it.Err(); err != nil {
				return res, err
			}
		}
		res.Blocks++
		res.Levels[m.Level]++
	}
	if err := store.List(ctx, ck.BlockPrefix, func(string) error { res.Objects++; return nil }); err != nil {
		return res, err
	}
	fmt.Fprintf(out, "live blocks per level: %v; objects in the store: %d\n", res.Levels, res.Objects)
	fmt.Fprintf(out, "records: %d ingested, %d in the live blocks\n", res.Ingested, res.Live)
	if res.Live != res.Ingested || res.Objects != res.Blocks {
		return res, fmt.Errorf("verification failed")
	}
	fmt.Fprintln(out, "ok: every record compacted, every replaced segment deleted")
	return res, nil
}
