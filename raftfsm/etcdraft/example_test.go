package etcdraft_test

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

// A single etcd-io/raft node hosting compactkit: the host's Ready loop
// feeds the adapter, and a leader service serves polls over it. A real
// host persists Entries and HardState before sending Messages, and takes
// snapshots with Adapter.Snapshot.
func Example() {
	cfg := raftfsm.DefaultConfig()
	cfg.Planner.Levels[0].MaxBlocks = 2
	fsm, err := raftfsm.New(cfg)
	if err != nil {
		panic(err)
	}
	storage := raft.NewMemoryStorage()
	node := raft.StartNode(&raft.Config{
		ID: 1, ElectionTick: 10, HeartbeatTick: 1, Storage: storage,
		MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 256,
		CheckQuorum: true, PreVote: true, DisableProposalForwarding: true, Logger: &raft.DefaultLogger{Logger: log.New(io.Discard, "", 0)},
	}, []raft.Peer{{ID: 1}})
	ad := etcdraft.New(fsm, node, 1, 0)

	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // the host's Ready loop
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
				ad.Observe(rd) // leadership, term, read indexes
				if rd.HardState != nil {
					_ = storage.SetHardState(rd.HardState)
				}
				_ = storage.Append(rd.Entries)
				// (send rd.Messages to the peers here)
				for _, e := range rd.CommittedEntries {
					if e.GetType() == raftpb.EntryType_EntryConfChange {
						var cc raftpb.ConfChange
						_ = proto.Unmarshal(e.GetData(), &cc)
						node.ApplyConfChange(&cc)
					}
					_, _ = ad.Apply(e) // compactkit's entries; every entry's index
				}
				node.Advance()
			}
		}
	}()
	_ = node.Campaign(context.Background())

	svc := leader.New(ad, fsm)
	ctx := context.Background()
	for {
		_, err = svc.AddBlocks(ctx, []ck.BlockMeta{
			leadertest.Block("seg-1", "acme", 0, 0), leadertest.Block("seg-2", "acme", 0, 1e9),
		})
		if err == nil {
			break
		}
		if !errors.Is(err, leader.ErrNotLeader) {
			panic(err)
		}
		time.Sleep(10 * time.Millisecond) // not leading yet
	}
	resp, err := svc.Poll(ctx, &ck.PollRequest{WorkerID: "worker-1", Seq: 1, FreeSlots: 1})
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Jobs[0].Outcome, resp.Jobs[0].Plan.Sources)
	var snap bytes.Buffer
	index, err := ad.Snapshot(&snap) // raftpb.Snapshot.Data, up to index
	fmt.Println(err == nil, index == ad.Applied())

	close(stop)
	<-done
	// Output:
	// assigned [seg-1 seg-2]
	// true true
}
