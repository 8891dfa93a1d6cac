package bucketlog

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"sync"
	"testing"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/raftfsm"
)

// memStore is blockmerge's memory store with its conditional put.
type memStore interface {
	blockmerge.Store
	blockmerge.ConditionalPutter
}

func newMemStore() memStore { return blockmerge.NewMemStore().(memStore) }

// gatedStore holds the first conditional put until released, so that the
// test can queue proposals behind it.
type gatedStore struct {
	memStore
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func (g *gatedStore) PutIfAbsent(ctx context.Context, key string, r io.Reader) error {
	g.once.Do(func() {
		close(g.entered)
		<-g.release
	})
	return g.memStore.PutIfAbsent(ctx, key, r)
}

// Proposals that arrive while an append is in flight go out together in
// the next entry, each with its own log index and result.
func TestConcurrentProposalsBatch(t *testing.T) {
	ctx := context.Background()
	store := &gatedStore{memStore: newMemStore(), entered: make(chan struct{}), release: make(chan struct{})}
	fsm, err := raftfsm.New(raftfsm.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	l, err := Open(ctx, store, "log", fsm, "c1")
	if err != nil {
		t.Fatal(err)
	}
	add := func(i int) ([]byte, error) {
		b := leadertest.Block(fmt.Sprintf("b%02d", i), "acme", 0, int64(i)*1e9)
		return fsm.Encode(&raftfsm.Command{AddBlocks: &raftfsm.AddBlocks{Blocks: []ck.BlockMeta{b}}}, 1e18)
	}
	const n = 12
	type out struct {
		index uint64
		err   error
	}
	outs := make(chan out, n)
	propose := func(i int) {
		cmd, err := add(i)
		if err != nil {
			outs <- out{err: err}
			return
		}
		a, err := l.Propose(ctx, cmd, 0)
		if err == nil && (a.Err != nil || len(a.Result.Blocks) != 1 || !a.Result.Blocks[0].Queued) {
			err = fmt.Errorf("block %d: applied %+v", i, a)
		}
		outs <- out{a.Index, err}
	}
	go propose(0)
	<-store.entered
	for i := 1; i < n; i++ {
		go propose(i)
	}
	for { // wait until the others are queued behind the held append
		l.qmu.Lock()
		queued := len(l.queue)
		l.qmu.Unlock()
		if queued == n-1 {
			break
		}
		runtime.Gosched()
	}
	close(store.release)
	seen := map[uint64]bool{}
	for range n {
		o := <-outs
		if o.err != nil {
			t.Fatal(o.err)
		}
		if seen[o.index] {
			t.Fatalf("index %d given twice", o.index)
		}
		seen[o.index] = true
	}
	st := l.Stats()
	if st.Appended != 2 || st.Commands != n {
		t.Fatalf("stats %+v: want the first command alone, then the other %d in one entry", st, n-1)
	}
	if last, _, _ := fsm.LastApplied(); last != n || l.Applied() != 2 {
		t.Fatalf("log index %d after entry %d, want %d after 2", last, l.Applied(), n)
	}
	// A replica reading the log from the start reaches the same state.
	other, _ := raftfsm.New(raftfsm.DefaultConfig())
	r, err := Open(ctx, store.memStore, "log", other, "c2")
	if err != nil {
		t.Fatal(err)
	}
	if r.Applied() != 2 || other.Stats().Planner.Queued != n {
		t.Fatalf("replica at entry %d with %d blocks queued", r.Applied(), other.Stats().Planner.Queued)
	}
}
