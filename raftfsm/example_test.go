package raftfsm_test

import (
	"bufio"
	"bytes"
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
		// The leader stamps its clock and encodes: the bytes the host
		// appends to its log.
		data, err := fsm.Encode(cmd, now)
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
	apply(&raftfsm.Command{AddBlocks: &raftfsm.AddBlocks{Blocks: []ck.BlockMeta{seg("s1"), seg("s2")}}})

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
	view := fsm.Index()
	defer view.Close()
	fmt.Println("live blocks:", view.Len(), "queued at level 1:", fsm.Stats().Planner.Levels[1].Queued)
	// Output:
	// assigned [s1 s2] token 2
	// completed
	// live blocks: 1 queued at level 1: 1
}

// ExampleRestore shows compactkit's snapshot as one section of a host's
// snapshot: the host writes its own state around it, and Restore reads
// exactly compactkit's bytes.
func ExampleRestore() {
	fsm, err := raftfsm.New(raftfsm.DefaultConfig())
	if err != nil {
		panic(err)
	}
	var file bytes.Buffer
	file.WriteString("kv:3\n") // the host's own section
	if err := fsm.Snapshot(&file); err != nil {
		panic(err)
	}
	file.WriteString("end\n") // and another after compactkit's

	r := bufio.NewReader(&file)
	head, _ := r.ReadString('\n')
	restored, err := raftfsm.Restore(r)
	if err != nil {
		panic(err)
	}
	tail, _ := r.ReadString('\n')
	fmt.Printf("%q %q cluster version %d\n", head, tail, restored.ClusterVersion())
	// Output:
	// "kv:3\n" "end\n" cluster version 6
}

// ExampleOperator_mark takes a block out of compaction ("do not compact")
// with the operator's reason, then puts it back with a requeue.
func ExampleOperator_mark() {
	fsm, err := raftfsm.New(raftfsm.DefaultConfig())
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	index := uint64(0)
	apply := func(cmd *raftfsm.Command) (*raftfsm.Result, error) {
		data, err := fsm.Encode(cmd, now)
		if err != nil {
			return nil, err
		}
		index++
		return fsm.Apply(ck.Entry{Index: index, Term: 1, Time: now}, data)
	}
	seg := ck.BlockMeta{ID: "s1", Tenant: "acme", MinTime: now, MaxTime: now, Size: 10,
		Datasets: []ck.DatasetMeta{{Name: "cpu", Size: 10, Records: 1, MinTime: now, MaxTime: now}}}
	if _, err := apply(&raftfsm.Command{AddBlocks: &raftfsm.AddBlocks{Blocks: []ck.BlockMeta{seg}}}); err != nil {
		panic(err)
	}

	res, err := apply(&raftfsm.Command{Operator: &raftfsm.Operator{Action: raftfsm.OpMark, Blocks: []string{"s1"},
		Reason: "legal hold", By: "alice"}})
	if err != nil {
		panic(err)
	}
	q, _ := fsm.Quarantined("", 0)
	fmt.Println("marked", res.Count, q[0].ID, q[0].Job == "", q[0].Reason)

	res, err = apply(&raftfsm.Command{Operator: &raftfsm.Operator{Action: raftfsm.OpRequeue, Blocks: []string{"s1"}}})
	if err != nil {
		panic(err)
	}
	fmt.Println("requeued", res.Count, fsm.Stats().Planner.Queued)
	// Output:
	// marked 1 s1 true marked by alice: legal hold
	// requeued 1 1
}
