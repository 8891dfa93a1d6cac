// Command node starts a one-node cluster assembled by hraftnode (BoltDB
// stores in a directory, raft's in-memory transport), restarts it on the
// same directory, and finds the blocks it added.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/hashicorp/raft"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/raftfsm/hraft/hraftnode"
)

func start(dir string, bootstrap bool) *hraftnode.Node {
	_, trans := raft.NewInmemTransport("n1")
	nd, err := hraftnode.New(hraftnode.Config{ID: "n1", Dir: dir, Transport: trans})
	if err != nil {
		log.Fatal(err)
	}
	if bootstrap {
		if err := nd.Bootstrap(); err != nil {
			log.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := nd.WaitServing(ctx); err != nil {
		log.Fatal(err)
	}
	return nd
}

func main() {
	dir, err := os.MkdirTemp("", "consumer-node-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	nd := start(dir, true)
	ctx := context.Background()
	if _, err := nd.Service.AddBlocks(ctx, []ck.BlockMeta{leadertest.Block("seg-1", "acme", 0, 0)}); err != nil {
		log.Fatal(err)
	}
	if err := nd.Shutdown(); err != nil {
		log.Fatal(err)
	}
	nd = start(dir, false) // resumes from its BoltDB log
	defer nd.Shutdown()
	fsm, err := nd.Service.Read(ctx)
	if err != nil {
		log.Fatal(err)
	}
	view := fsm.Index()
	if !view.Live("seg-1") {
		log.Fatal("the restarted node lost seg-1")
	}
	fmt.Println("node: restarted from BoltDB with", view.Len(), "block")
}
