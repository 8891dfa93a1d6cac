// Command bucketlog runs two coordinators on one compaction log in a
// directory: what one appends, the other applies and serves.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/bucketlog"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/raftfsm"
)

func main() {
	dir, err := os.MkdirTemp("", "consumer-bucketlog-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	store, err := blockmerge.NewFileStore(dir)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	open := func(id string) *leader.Service {
		cfg := raftfsm.DefaultConfig()
		cfg.Planner.Levels[0].MaxBlocks = 2
		fsm, err := raftfsm.New(cfg)
		if err != nil {
			log.Fatal(err)
		}
		l, err := bucketlog.Open(ctx, store, "compaction", fsm, id)
		if err != nil {
			log.Fatal(err)
		}
		return leader.New(l, fsm, leader.WithClock(l.Now),
			leader.WithRetries(32, func(n int) time.Duration { return time.Duration(n+1) * time.Millisecond }))
	}
	a, b := open("coordinator-a"), open("coordinator-b")
	if _, err := a.AddBlocks(ctx, []ck.BlockMeta{leadertest.Block("seg-1", "acme", 0, 0), leadertest.Block("seg-2", "acme", 0, 1e9)}); err != nil {
		log.Fatal(err)
	}
	resp, err := b.Poll(ctx, &ck.PollRequest{WorkerID: "worker-1", Seq: 1, FreeSlots: 1})
	if err != nil {
		log.Fatal(err)
	}
	if len(resp.Jobs) != 1 || resp.Jobs[0].Outcome != ck.OutcomeAssigned || len(resp.Jobs[0].Plan.Sources) != 2 {
		log.Fatalf("jobs %+v; want one job of the two segments", resp.Jobs)
	}
	fmt.Println("bucketlog: b assigned what a appended:", resp.Jobs[0].Plan.Sources)
}
