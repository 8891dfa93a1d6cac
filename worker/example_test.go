package worker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/worker"
)

// A worker takes one job from an in-process leader: it deletes the job's
// tombstone, merges the two level-0 segments into one level-1 block and
// reports success with the output's metadata.
func Example() {
	ctx := context.Background()
	store := blockmerge.NewMemStore()

	// Ingest wrote two segments, and an older block is due for deletion.
	rec := func(key string) blockmerge.Record {
		return blockmerge.Record{Key: []byte(key), Timestamp: 1, Value: []byte("v")}
	}
	for id, keys := range map[string][]string{"seg-1": {"a", "b"}, "seg-2": {"b", "c"}, "old-1": {"z"}} {
		recs := make([]blockmerge.Record, len(keys))
		for i, k := range keys {
			recs[i] = rec(k)
		}
		_, err := blockmerge.WriteBlock(ctx, store, blockmerge.BlockInfo{ID: id, Tenant: "acme"},
			[]blockmerge.Dataset{{Name: "api", Records: recs}})
		if err != nil {
			fmt.Println(err)
			return
		}
	}
	plan := &ck.JobPlan{
		Name: "job-1", Tenant: "acme",
		Sources:    []string{"seg-1", "seg-2"},
		Tombstones: []ck.Tombstone{{Kind: ck.TombstoneBlock, Target: "old-1"}},
	}

	// The leader: assigns the job once, renews it while it runs, and
	// takes the worker's final report. (A real one is the state machine
	// behind HTTP; Poll is called by one goroutine at a time.)
	ctx, stop := context.WithCancel(ctx)
	var report ck.StatusUpdate
	assigned := false
	leader := worker.ClientFunc(func(_ context.Context, req *ck.PollRequest) (*ck.PollResponse, error) {
		resp := &ck.PollResponse{}
		for _, u := range req.Updates {
			reply := ck.JobReply{Job: u.Job, Token: u.Token, Outcome: ck.OutcomeRenewed, Lease: 15 * time.Second}
			if u.Status != ck.ReportInProgress {
				reply = ck.JobReply{Job: u.Job, Token: u.Token, Outcome: ck.OutcomeCompleted}
				report = u
				stop() // enough for the example
			}
			resp.Jobs = append(resp.Jobs, reply)
		}
		if !assigned && req.FreeSlots > 0 {
			assigned = true
			resp.Jobs = append(resp.Jobs, ck.JobReply{
				Job: plan.Name, Outcome: ck.OutcomeAssigned, Token: 7, Lease: 15 * time.Second, Plan: plan,
			})
		}
		return resp, nil
	})

	w, err := worker.New(leader, store, worker.Config{
		ID:           worker.NewID("compactor"),
		Concurrency:  2,
		PollInterval: 10 * time.Millisecond,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := w.Run(ctx); err != nil { // returns once stopped
		fmt.Println(err)
		return
	}

	fmt.Println("worker ID:", strings.HasPrefix(w.ID(), "compactor-"))
	fmt.Println("report:", report.Job, report.Status)
	for _, out := range report.Outputs {
		fmt.Printf("output %s: level %d, %d records\n", ck.ObjectKey(out.ID), out.Level, out.Records())
	}
	stored, _ := store.Exists(context.Background(), ck.ObjectKey("old-1"))
	fmt.Println("old-1 still stored:", stored)
	s := w.Stats()
	fmt.Printf("completed %d, failed %d, tombstones deleted %d, blocks written %d\n",
		s.JobsCompleted, s.JobsFailed, s.TombstonesDeleted, s.BlocksWritten)
	// Output:
	// worker ID: true
	// report: job-1 success
	// output blocks/job-1/7/0: level 1, 3 records
	// old-1 still stored: false
	// completed 1, failed 0, tombstones deleted 1, blocks written 1
}

// A worker ID for a process incarnation: a readable name and a random
// suffix, so that a restarted worker never reuses its predecessor's ID.
func ExampleNewID() {
	id := worker.NewID("compactor-eu-1")
	fmt.Println(strings.HasPrefix(id, "compactor-eu-1-"), len(id))
	// Output:
	// true 41
}

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
