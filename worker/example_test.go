package worker_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
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
	plan := &compactkit.JobPlan{
		Name: "job-1", Tenant: "acme",
		Sources:    []string{"seg-1", "seg-2"},
		Tombstones: []compactkit.Tombstone{{Kind: compactkit.TombstoneBlock, Target: "old-1"}},
	}

	// The leader: assigns the job once, renews it while it runs, and
	// takes the worker's final report. (A real one is the state machine
	// behind HTTP; Poll is called by one goroutine at a time.)
	ctx, stop := context.WithCancel(ctx)
	var report compactkit.StatusUpdate
	assigned := false
	leader := worker.ClientFunc(func(_ context.Context, req *compactkit.PollRequest) (*compactkit.PollResponse, error) {
		resp := &compactkit.PollResponse{}
		for _, u := range req.Updates {
			reply := compactkit.JobReply{Job: u.Job, Token: u.Token, Outcome: compactkit.OutcomeRenewed, Lease: 15 * time.Second}
			if u.Status != compactkit.ReportInProgress {
				reply = compactkit.JobReply{Job: u.Job, Token: u.Token, Outcome: compactkit.OutcomeCompleted}
				report = u
				stop() // enough for the example
			}
			resp.Jobs = append(resp.Jobs, reply)
		}
		if !assigned && req.FreeSlots > 0 {
			assigned = true
			resp.Jobs = append(resp.Jobs, compactkit.JobReply{
				Job: plan.Name, Outcome: compactkit.OutcomeAssigned, Token: 7, Lease: 15 * time.Second, Plan: plan,
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
		fmt.Printf("output %s: level %d, %d records\n", compactkit.ObjectKey(out.ID), out.Level, out.Records())
	}
	stored, _ := store.Exists(context.Background(), compactkit.ObjectKey("old-1"))
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
