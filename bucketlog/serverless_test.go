package bucketlog_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/bucketlog"
	"github.com/compactkit/compactkit/bucketlog/bucketlogtest"
	"github.com/compactkit/compactkit/leader/leadertest"
)

// Sixteen serverless workers — each its own node on one bucket, no
// coordinator — polling at once while an ingest node adds blocks: lost
// races are prepared again with jittered backoff, every worker gets work
// (none starves), every block is compacted, and the replicas end
// byte-identical.
func TestServerlessWorkersContend(t *testing.T) {
	ctx := context.Background()
	store, err := blockmerge.NewFileStore(t.TempDir(), blockmerge.WithoutSync())
	require.NoError(t, err)
	cfg := bucketlog.NodeConfig{State: bucketlogtest.Config(), LogOptions: []bucketlog.Option{bucketlog.WithCheckpointEvery(32)}}
	const workers, minBlocks = 16, 192
	ingest, err := bucketlog.OpenNode(ctx, store, "compaction", "ingest", cfg)
	require.NoError(t, err)
	nodes := make([]*bucketlog.Node, workers)
	for i := range nodes {
		nodes[i], err = bucketlog.OpenNode(ctx, store, "compaction", fmt.Sprintf("w%d", i), cfg)
		require.NoError(t, err)
	}

	var (
		mu       sync.Mutex
		assigned = make([]int, workers)
		done     = make(chan struct{})
	)
	allServed := func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, n := range assigned {
			if n == 0 {
				return false
			}
		}
		return true
	}
	var wg sync.WaitGroup
	for i, node := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var held *ck.JobReply
			for seq := uint64(1); ; seq++ {
				req := &ck.PollRequest{WorkerID: fmt.Sprintf("w%d-XXXXXXXXXXXXXXXX", i), Seq: seq, FreeSlots: 1}
				if held != nil {
					u := ck.StatusUpdate{Job: held.Job, Token: held.Token, Status: ck.ReportFailure, Reason: "sources gone"}
					if outs, ok := leadertest.Outputs(node.FSM(), held); ok {
						u = ck.StatusUpdate{Job: held.Job, Token: held.Token, Status: ck.ReportSuccess, Outputs: outs}
					}
					req.Updates = []ck.StatusUpdate{u}
				}
				resp, err := node.Poll(ctx, req)
				if err != nil {
					t.Errorf("worker %d: %v", i, err)
					return
				}
				held = nil
				for j := range resp.Jobs {
					if resp.Jobs[j].Outcome == ck.OutcomeAssigned && len(resp.Jobs[j].Plan.Sources) > 0 {
						held = &resp.Jobs[j]
						mu.Lock()
						assigned[i]++
						mu.Unlock()
					}
				}
				select {
				case <-done:
					if held == nil {
						return
					}
				case <-time.After(20 * time.Millisecond):
				}
			}
		}()
	}
	// Ingest runs until every worker was served (at least minBlocks, in
	// full batches of 4 per shard),
	// then the queue drains: every level-0 block compacted, nothing in
	// progress (the deadline is the guard).
	deadline := time.Now().Add(2 * time.Minute)
	for b := 0; b < minBlocks || !allServed() || b%16 != 0; b++ { // full level-0 batches: none waits for its age
		_, err := ingest.AddBlocks(ctx, []ck.BlockMeta{leadertest.Block(fmt.Sprintf("seg-%05d", b), "acme", uint32(b%4), int64(b)*1e9)})
		require.NoError(t, err)
		if time.Now().After(deadline) {
			mu.Lock()
			t.Fatalf("after %d blocks some worker never got a job: assignments %v", b, assigned)
		}
	}
	for {
		require.NoError(t, ingest.Log.Barrier(ctx))
		st := ingest.FSM().Stats()
		if st.Planner.Levels[0].Queued == 0 && st.Planner.Claimed == 0 && st.Scheduler.Jobs == 0 {
			break
		}
		if time.Now().After(deadline) {
			mu.Lock()
			t.Fatalf("no fixed point: assignments %v, stats %+v", assigned, st)
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(done)
	wg.Wait()

	var first []byte
	for i, n := range append(nodes, ingest) {
		require.NoError(t, n.Log.Barrier(ctx))
		var b bytes.Buffer
		require.NoError(t, n.FSM().Snapshot(&b))
		if i == 0 {
			first = b.Bytes()
		} else {
			require.Equal(t, first, b.Bytes(), "node %d", i)
		}
	}
	var conflicts, appended uint64
	for _, n := range nodes {
		st := n.Log.Stats()
		conflicts += st.Conflicts
		appended += st.Appended
	}
	t.Logf("assignments per worker %v; %d entries, %d appended by workers, %d conflicts", assigned, ingest.Log.Applied(), appended, conflicts)
}
