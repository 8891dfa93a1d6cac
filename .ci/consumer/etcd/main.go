// Command etcd drives a single etcd-io/raft node through compactkit's
// adapter: the host's Ready loop feeds it, and a leader service serves a
// poll over it.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/raftfsm/etcdraft"
)

func main() {
	cfg := raftfsm.DefaultConfig()
	cfg.Planner.Levels[0].MaxBlocks = 2
	fsm, err := raftfsm.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	storage := raft.NewMemoryStorage()
	node := raft.StartNode(&raft.Config{
		ID: 1, ElectionTick: 10, HeartbeatTick: 1, Storage: storage,
		MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 256, CheckQuorum: true, PreVote: true,
		DisableProposalForwarding: true, Logger: &raft.DefaultLogger{Logger: log.New(io.Discard, "", 0)},
	}, []raft.Peer{{ID: 1}})
	ad := etcdraft.New(fsm, node, 1, 0)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		ticker := time.NewTicker(10 * time.Millisecond)
		defer ticker.Stop()
		for {
			select {
			case <-stop:
				node.Stop()
				return
			case <-ticker.C:
				node.Tick()
			case rd := <-node.Ready():
				ad.Observe(rd)
				if rd.HardState != nil {
					_ = storage.SetHardState(rd.HardState)
				}
				_ = storage.Append(rd.Entries)
				for _, e := range rd.CommittedEntries {
					if e.GetType() == raftpb.EntryType_EntryConfChange {
						var cc raftpb.ConfChange
						_ = proto.Unmarshal(e.GetData(), &cc)
						node.ApplyConfChange(&cc)
					}
					_, _ = ad.Apply(e)
				}
				node.Advance()
			}
		}
	}()
	defer func() { close(stop); <-done }()

	svc := leader.New(ad, fsm)
	defer svc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	blocks := []ck.BlockMeta{leadertest.Block("seg-1", "acme", 0, 0), leadertest.Block("seg-2", "acme", 0, 1e9)}
	for {
		_, err = svc.AddBlocks(ctx, blocks)
		if err == nil {
			break
		}
		if !errors.Is(err, leader.ErrNotLeader) || ctx.Err() != nil {
			log.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond) // the election of a single node
	}
	resp, err := svc.Poll(ctx, &ck.PollRequest{WorkerID: "worker-1", Seq: 1, FreeSlots: 1})
	if err != nil {
		log.Fatal(err)
	}
	var snap bytes.Buffer
	index, err := ad.Snapshot(&snap)
	if err != nil || len(resp.Jobs) != 1 || resp.Jobs[0].Outcome != ck.OutcomeAssigned || index != ad.Applied() {
		log.Fatalf("jobs %+v, snapshot at %d (applied %d): %v", resp.Jobs, index, ad.Applied(), err)
	}
	fmt.Println("etcd: job assigned over etcd-io/raft:", resp.Jobs[0].Plan.Sources)
}
