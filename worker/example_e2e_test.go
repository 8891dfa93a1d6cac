package worker_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/worker"
)

// Workers against the real state machine, in one process: the client is a
// function that prepares each poll and applies it as the next log entry,
// which is what a leader does around its log. Eight segments are ingested,
// three workers merge them into two level-1 blocks and delete the segments,
// and the state drains.
func Example_endToEnd() {
	ctx := context.Background()
	store := blockmerge.NewMemStore()

	// The state machine: level 0 is compacted in batches of exactly four
	// segments (no age limit), level 1 is final, and replaced segments may
	// be deleted at once, by cleanup-only jobs if no compaction carries them.
	cfg := raftfsm.DefaultConfig()
	cfg.Planner.Levels = cfg.Planner.Levels[:1]
	cfg.Planner.Levels[0].MaxBlocks, cfg.Planner.Levels[0].MaxAge = 4, 0
	cfg.Planner.FinalLevel, cfg.Planner.TombstoneMaxLevel = 1, 0
	cfg.Index.CleanupDelay = 0
	fsm, err := raftfsm.New(cfg, raftfsm.WithCleanupAfter(0))
	if err != nil {
		fmt.Println(err)
		return
	}

	// The log: entries applied in order, one at a time, stamped with the
	// leader's clock.
	var mu sync.Mutex
	var index uint64
	apply := func(cmd *raftfsm.Command) (*raftfsm.Result, error) {
		now := time.Now().UnixNano()
		data, err := fsm.Encode(cmd, now)
		if err != nil {
			return nil, err
		}
		index++
		return fsm.Apply(ck.Entry{Index: index, Term: 1, Time: now}, data)
	}
	client := worker.ClientFunc(func(_ context.Context, req *ck.PollRequest) (*ck.PollResponse, error) {
		mu.Lock() // the leader serialises polls
		defer mu.Unlock()
		cmd, err := fsm.Prepare(req, time.Now().UnixNano())
		if errors.Is(err, raftfsm.ErrInvalidRequest) || errors.Is(err, raftfsm.ErrStaleRequest) {
			return nil, fmt.Errorf("%w: %w", ck.ErrRejected, err) // not to be retried
		}
		if err != nil {
			return nil, err
		}
		res, err := apply(cmd)
		if err != nil {
			return nil, err
		}
		return res.Poll, nil
	})

	// Three workers.
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	for i := range 3 {
		w, err := worker.New(client, store, worker.Config{
			ID: worker.NewID(fmt.Sprintf("worker-%d", i+1)), Concurrency: 2, PollInterval: 5 * time.Millisecond})
		if err != nil {
			fmt.Println(err)
			return
		}
		wg.Go(func() {
			if err := w.Run(wctx); err != nil {
				fmt.Println(err)
			}
		})
	}

	// Ingest: write each segment, then add it through the log.
	ingested := 0
	for i := range 8 {
		recs := make([]blockmerge.Record, 5)
		for r := range recs {
			recs[r] = blockmerge.Record{Key: []byte("cpu"), Timestamp: int64(i*len(recs)+r) * 1e9, Value: []byte("1")}
		}
		meta, err := blockmerge.WriteBlock(ctx, store, blockmerge.BlockInfo{ID: fmt.Sprintf("seg-%d", i), Tenant: "acme"},
			[]blockmerge.Dataset{{Name: "cpu", Records: recs}})
		if err != nil {
			fmt.Println(err)
			return
		}
		mu.Lock()
		res, err := apply(&raftfsm.Command{AddBlocks: &raftfsm.AddBlocks{Blocks: []ck.BlockMeta{meta}}})
		mu.Unlock()
		if err == nil {
			err = res.Blocks[0].Err // nil: indexed and queued
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		ingested += len(recs)
	}

	// Drain: nothing queued, no job, no tombstone left.
	for st := fsm.Stats(); !st.Drained(); st = fsm.Stats() {
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	wg.Wait()

	// What is left: the live blocks, their records, the objects.
	view := fsm.Index()
	defer view.Close()
	live := 0
	for _, m := range view.Blocks("", 0) {
		rd, err := blockmerge.Open(ctx, store, m.ID)
		if err != nil {
			fmt.Println(err)
			return
		}
		it, err := rd.Dataset(ctx, "acme", "cpu")
		if err != nil {
			fmt.Println(err)
			return
		}
		for it.Next() {
			live++
		}
		fmt.Printf("level %d block, %d records\n", m.Level, m.Records())
	}
	objects := 0
	_ = store.List(ctx, ck.BlockPrefix, func(string) error { objects++; return nil })
	st := fsm.Stats()
	fmt.Printf("records: %d ingested, %d live; objects: %d; drained: %v\n", ingested, live, objects, st.Drained())
	// Output:
	// level 1 block, 20 records
	// level 1 block, 20 records
	// records: 40 ingested, 40 live; objects: 2; drained: true
}
