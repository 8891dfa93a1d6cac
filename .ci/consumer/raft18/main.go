// Command raft18 is a host already on hashicorp/raft v1.8.0 (its go.mod
// pins it) that builds compactkit's hashicorp/raft adapter with its own
// in-memory stores, and applies a command through the leader service.
package main

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"time"

	"github.com/hashicorp/raft"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/raftfsm/hraft"
)

func main() {
	state, err := raftfsm.New(raftfsm.DefaultConfig())
	if err != nil {
		log.Fatal(err)
	}
	fsm := hraft.NewFSM(state, slog.New(slog.DiscardHandler))
	store := raft.NewInmemStore()
	addr, trans := raft.NewInmemTransport("")
	r, err := raft.NewRaft(hraft.FastConfig("n1"), fsm, store, store, raft.NewInmemSnapshotStore(), trans)
	if err != nil {
		log.Fatal(err)
	}
	defer r.Shutdown()
	if err := r.BootstrapCluster(raft.Configuration{Servers: []raft.Server{{ID: "n1", Address: addr}}}).Error(); err != nil {
		log.Fatal(err)
	}
	svc := hraft.NewService(r, state)
	defer svc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for !svc.IsLeader() {
		if ctx.Err() != nil {
			log.Fatal("no leader")
		}
		time.Sleep(10 * time.Millisecond)
	}
	res, err := svc.AddBlocks(ctx, []ck.BlockMeta{leadertest.Block("seg-1", "acme", 0, 0)})
	if err != nil || len(res) != 1 || fsm.Commands() == 0 {
		log.Fatalf("add blocks: %v, %d results, %d commands", err, len(res), fsm.Commands())
	}
	fmt.Println("raft18: hraft on hashicorp/raft", "v1.8.0 applied", fsm.Commands(), "commands")
}
