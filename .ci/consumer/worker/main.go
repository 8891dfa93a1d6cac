// Command worker runs a worker on a FileStore against a leader service:
// it takes the job of two level-0 segments, merges them and reports the
// output, which the index then holds.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/worker"
)

func main() {
	dir, err := os.MkdirTemp("", "consumer-worker-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	store, err := blockmerge.NewFileStore(dir)
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var metas []ck.BlockMeta
	for i, key := range []string{"a", "b"} {
		m, err := blockmerge.WriteBlock(ctx, store, blockmerge.BlockInfo{ID: fmt.Sprint("seg-", i), Tenant: "acme"},
			[]blockmerge.Dataset{{Name: "api", Records: []blockmerge.Record{{Key: []byte(key), Timestamp: 1, Value: []byte("v")}}}})
		if err != nil {
			log.Fatal(err)
		}
		metas = append(metas, m)
	}
	cfg := raftfsm.DefaultConfig()
	cfg.Planner.Levels[0].MaxBlocks = 2
	fsm, err := raftfsm.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	svc := leader.New(leadertest.NewMemLog(fsm), fsm)
	defer svc.Close()
	if _, err := svc.AddBlocks(ctx, metas); err != nil {
		log.Fatal(err)
	}
	w, err := worker.New(svc, store, worker.Config{ID: worker.NewID("consumer"), PollInterval: 10 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	for w.Stats().JobsCompleted == 0 && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil {
		log.Fatal(err)
	}
	fsm, err = svc.Read(ctx)
	if err != nil {
		log.Fatal(err)
	}
	view := fsm.Index()
	if w.Stats().JobsCompleted != 1 || view.Len() != 1 {
		log.Fatalf("completed %d jobs, index holds %d blocks; want 1 and 1 (the merged block)", w.Stats().JobsCompleted, view.Len())
	}
	fmt.Println("worker: merged two segments on a FileStore; the index holds", view.Len(), "block")
}
