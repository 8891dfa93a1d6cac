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
// feeds the adapter, a leader service proposes through it and reads
// linearizably (the adapter's barrier is a read index that the loop's
// Observe answers), and the adapter's snapshot restores a state machine.
// A real host persists Entries and HardState before sending Messages, and
// sends the snapshot as raftpb.Snapshot.Data to a follower that fell
// behind, which installs it with Adapter.Restore.
func Example() {
	fsm, err := raftfsm.New(raftfsm.DefaultConfig())
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
		_, err = svc.AddBlocks(ctx, []ck.BlockMeta{leadertest.Block("seg-1", "acme", 0, 0)})
		if err == nil {
			break
		}
		if !errors.Is(err, leader.ErrNotLeader) {
			panic(err)
		}
		time.Sleep(10 * time.Millisecond) // not leading yet
	}
	state, err := svc.Read(ctx) // after a read index: every committed entry is applied
	if err != nil {
		panic(err)
	}
	applied, _, _ := state.LastApplied()

	var snap bytes.Buffer
	index, err := ad.Snapshot(&snap) // raftpb.Snapshot.Data, up to index
	if err != nil {
		panic(err)
	}
	restored, err := raftfsm.Restore(&snap)
	if err != nil {
		panic(err)
	}
	last, _, _ := restored.LastApplied()
	fmt.Println("the snapshot covers every entry applied:", index == ad.Applied())
	fmt.Println("the restored state machine is at the entry read:", last == applied)

	close(stop)
	<-done
	// Output:
	// the snapshot covers every entry applied: true
	// the restored state machine is at the entry read: true
}
