package raftfsm_test

import (
	"fmt"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/raftfsm"
)

// Example shows the life of a compaction job through the state machine: a
// host appends commands to its log and applies each committed entry; the
// leader prepares worker polls.
func Example() {
	cfg := raftfsm.DefaultConfig()
	cfg.Planner.Levels[0].MaxBlocks = 2 // tiny batches for the example
	fsm, err := raftfsm.New(cfg)
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	index := uint64(0)
	apply := func(cmd *raftfsm.Command) *raftfsm.Result {
		data, err := cmd.MarshalBinary() // what the host appends to its log
		if err != nil {
			panic(err)
		}
		index++
		res, err := fsm.Apply(ck.Entry{Index: index, Term: 1, Time: now}, data)
		if err != nil {
			panic(err)
		}
		return res
	}
	seg := func(id string) ck.BlockMeta {
		return ck.BlockMeta{ID: id, Tenant: "acme", MinTime: now, MaxTime: now, Size: 10,
			Datasets: []ck.DatasetMeta{{Name: "cpu", Size: 10, Records: 1, MinTime: now, MaxTime: now}}}
	}

	// Ingest flushes two small segments.
	apply(&raftfsm.Command{Time: now, AddBlocks: &raftfsm.AddBlocks{Blocks: []ck.BlockMeta{seg("s1"), seg("s2")}}})

	// A worker polls; the leader prepares the poll and proposes it.
	cmd, err := fsm.Prepare(&ck.PollRequest{WorkerID: "worker-1", Seq: 1, FreeSlots: 1}, now)
	if err != nil {
		panic(err)
	}
	job := apply(cmd).Poll.Jobs[0]
	fmt.Println(job.Outcome, job.Plan.Sources, "token", job.Token)

	// The worker merges the sources and reports success with its output.
	out := seg(ck.OutputID(job.Job, job.Token, 0))
	out.Level = 1
	cmd, err = fsm.Prepare(&ck.PollRequest{WorkerID: "worker-1", Seq: 2, Updates: []ck.StatusUpdate{
		{Job: job.Job, Token: job.Token, Status: ck.ReportSuccess, Outputs: []ck.BlockMeta{out}},
	}}, now)
	if err != nil {
		panic(err)
	}
	fmt.Println(apply(cmd).Poll.Jobs[0].Outcome)
	fmt.Println("live blocks:", fsm.Index().Len(), "queued at level 1:", fsm.Stats().Planner.Levels[1].Queued)
	// Output:
	// assigned [s1 s2] token 2
	// completed
	// live blocks: 1 queued at level 1: 1
}
