package raftfsm_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
)

// TestPrepareWhileApplying runs Prepare, snapshots of captures and queries
// on other goroutines while entries are applied: run with -race.
func TestPrepareWhileApplying(t *testing.T) {
	n := newNode(t, testConfig())
	n.mustApply(addBlocks(blocks("a", "t1", 1, 40, t0)))
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := range 3 {
		wg.Go(func() {
			seq := uint64(0)
			for {
				select {
				case <-stop:
					return
				default:
				}
				seq++
				_, err := n.f.Prepare(&ck.PollRequest{WorkerID: "reader", Seq: seq, FreeSlots: 4}, t0)
				require.NoError(t, err)
				if g == 0 {
					c, err := n.f.Capture()
					require.NoError(t, err)
					require.NoError(t, c.Snapshot(discard{}))
				}
				_ = n.f.Stats()
				_ = n.f.Index().Len()
			}
		})
	}
	for i := range 200 {
		bs := blocks("b"+string(rune('a'+i%26))+string(rune('a'+i/26)), "t2", uint32(i%4), 3, t0)
		n.mustApply(addBlocks(bs))
		n.advance(100 * time.Millisecond)
		n.poll(&ck.PollRequest{WorkerID: "w", Seq: uint64(i + 1), FreeSlots: 1})
	}
	close(stop)
	wg.Wait()
	require.Positive(t, n.f.Stats().Scheduler.Jobs)
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
