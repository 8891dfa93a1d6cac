package hraftnode_test

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/raftfsm/hraft"
	"github.com/compactkit/compactkit/raftfsm/hraft/hraftnode"
)

// A single-node cluster on raft's in-memory transport: blocks go in, a
// worker polls and gets a job, reports it done, and the index holds the
// merged block. A real deployment runs three or five nodes on TCP (the
// Config default) and calls the leader's Service from its RPC layer.
func Example() {
	_, trans := raft.NewInmemTransport("")
	state := raftfsm.DefaultConfig()
	state.Planner.Levels[0].MaxBlocks = 4
	clock := func() time.Time { return time.Unix(1_700_000_000, 0) }
	node, err := hraftnode.New(hraftnode.Config{
		ID: "n1", Transport: trans, State: &state,
		Service: []hraft.Option{hraft.WithLeader(leader.WithClock(clock))},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer node.Shutdown()
	if err := node.Bootstrap(); err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := node.WaitServing(ctx); err != nil {
		fmt.Println(err)
		return
	}
	svc := node.Service

	var blocks []ck.BlockMeta
	for i := range 4 {
		t := int64(1_700_000_000+i) * int64(time.Second)
		blocks = append(blocks, ck.BlockMeta{
			ID: fmt.Sprintf("block-%d", i), Tenant: "acme", MinTime: t, MaxTime: t + int64(time.Second), Size: 100,
			Datasets: []ck.DatasetMeta{{Name: "cpu", Size: 100, Records: 10, MinTime: t, MaxTime: t + int64(time.Second)}},
		})
	}
	if _, err := svc.AddBlocks(ctx, blocks); err != nil {
		fmt.Println(err)
		return
	}

	resp, err := svc.Poll(ctx, &ck.PollRequest{WorkerID: "worker-1", Seq: 1, FreeSlots: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	job := resp.Jobs[0]
	fmt.Println(job.Outcome, len(job.Plan.Sources), "sources, lease", job.Lease)

	out := ck.BlockMeta{
		ID: ck.OutputID(job.Plan.Name, job.Token, 0), Tenant: "acme", Level: 1,
		MinTime: blocks[0].MinTime, MaxTime: blocks[3].MaxTime, Size: 400,
		Datasets: []ck.DatasetMeta{{Name: "cpu", Size: 400, Records: 40, MinTime: blocks[0].MinTime, MaxTime: blocks[3].MaxTime}},
	}
	resp, err = svc.Poll(ctx, &ck.PollRequest{WorkerID: "worker-1", Seq: 2, Updates: []ck.StatusUpdate{
		{Job: job.Job, Token: job.Token, Status: ck.ReportSuccess, Outputs: []ck.BlockMeta{out}},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Jobs[0].Outcome)

	fsm, err := svc.Read(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	view := fsm.Index()
	fmt.Println("live blocks:", view.Len(), "output live:", view.Live(out.ID))
	// Output:
	// assigned 4 sources, lease 15s
	// completed
	// live blocks: 1 output live: true
}
