// Command embed is the README's embedding, built from outside the
// repository: a host's own hashicorp/raft FSM holds a key/value map and
// compactkit's state, routes entries by a tag byte, and serves workers with
// hraft's leader service, which wraps compactkit's commands in that tag.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/raftfsm/hraft"
)

const (
	tagCompaction = 'c'
	tagKV         = 'k'
)

// myFSM is the host's FSM.
type myFSM struct {
	compaction *raftfsm.FSM
	mu         sync.Mutex
	kv         map[string]string
}

func (f *myFSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand || len(l.Data) == 0 {
		return nil
	}
	switch l.Data[0] {
	case tagCompaction:
		res, err := f.compaction.Apply(ck.Entry{Index: l.Index, Term: l.Term, Time: l.AppendedAt.UnixNano()}, l.Data[1:])
		if err != nil {
			return err
		}
		return res
	case tagKV:
		k, v, _ := strings.Cut(string(l.Data[1:]), "=")
		f.mu.Lock()
		f.kv[k] = v
		f.mu.Unlock()
	}
	return nil
}

func (f *myFSM) Snapshot() (raft.FSMSnapshot, error) { return nil, fmt.Errorf("not in this program") }
func (f *myFSM) Restore(io.ReadCloser) error         { return fmt.Errorf("not in this program") }

func main() {
	cfg := raftfsm.DefaultConfig()
	cfg.Planner.Levels[0].MaxBlocks = 2
	compaction, err := raftfsm.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	fsm := &myFSM{compaction: compaction, kv: map[string]string{}}

	rc := hraft.FastConfig("n1")
	rc.SnapshotThreshold = 1 << 20
	store := raft.NewInmemStore()
	addr, trans := raft.NewInmemTransport("")
	r, err := raft.NewRaft(rc, fsm, store, store, raft.NewInmemSnapshotStore(), trans)
	if err != nil {
		log.Fatal(err)
	}
	defer r.Shutdown()
	if err := r.BootstrapCluster(raft.Configuration{Servers: []raft.Server{{ID: "n1", Address: addr}}}).Error(); err != nil {
		log.Fatal(err)
	}
	svc := hraft.NewService(r, compaction, hraft.WithEnvelope(func(cmd []byte) []byte {
		return append([]byte{tagCompaction}, cmd...)
	}))
	defer svc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for !svc.IsLeader() {
		if ctx.Err() != nil {
			log.Fatal("no leader")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := r.Apply([]byte("kuser:42=ada"), time.Second).Error(); err != nil {
		log.Fatal(err)
	}
	if _, err := svc.AddBlocks(ctx, []ck.BlockMeta{leadertest.Block("seg-1", "acme", 0, 0), leadertest.Block("seg-2", "acme", 0, 1e9)}); err != nil {
		log.Fatal(err)
	}
	resp, err := svc.Poll(ctx, &ck.PollRequest{WorkerID: "worker-1", Seq: 1, FreeSlots: 1})
	if err != nil {
		log.Fatal(err)
	}
	fsm.mu.Lock()
	user := fsm.kv["user:42"]
	fsm.mu.Unlock()
	if len(resp.Jobs) != 1 || resp.Jobs[0].Outcome != ck.OutcomeAssigned || len(resp.Jobs[0].Plan.Sources) != 2 || user != "ada" {
		log.Fatalf("jobs %+v, user:42 = %q; want one job of 2 sources assigned and ada", resp.Jobs, user)
	}
	fmt.Println("embed: job assigned through the tagged entries; user:42 =", user)
}
