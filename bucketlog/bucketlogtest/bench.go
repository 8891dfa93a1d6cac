// Package bucketlogtest measures a bucket log on a store: a benchmark a
// store's own tests call, as blockmerge/storetest's conformance suite is.
package bucketlogtest

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/bucketlog"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/raftfsm"
)

// counting counts a store's operations.
type counting struct {
	blockmerge.Store
	cond                        blockmerge.ConditionalPutter
	creates, gets, lists, heads atomic.Int64
}

func (c *counting) Exists(ctx context.Context, key string) (bool, error) {
	c.heads.Add(1)
	return c.Store.Exists(ctx, key)
}

func (c *counting) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	c.gets.Add(1)
	return c.Store.Get(ctx, key)
}

func (c *counting) List(ctx context.Context, prefix string, fn func(string) error) error {
	c.lists.Add(1)
	return c.Store.List(ctx, prefix, fn)
}

func (c *counting) PutIfAbsent(ctx context.Context, key string, r io.Reader) error {
	c.creates.Add(1)
	return c.cond.PutIfAbsent(ctx, key, r)
}

// CoordinatorsBenchmark runs b.N polls spread over n coordinators of one
// bucket log on store (a new, empty store with conditional puts), each
// with its own worker taking a job and releasing it in every poll, all at
// once. It reports polls/s, the object operations per poll (creates,
// GETs, HEADs, LISTs) and the conflicts per append.
func CoordinatorsBenchmark(b *testing.B, store blockmerge.Store, n int) {
	cond, ok := store.(blockmerge.ConditionalPutter)
	if !ok {
		b.Fatal("the store has no conditional put")
	}
	cs := &counting{Store: store, cond: cond}
	ctx := context.Background()
	cfg := raftfsm.DefaultConfig()
	var (
		logs []*bucketlog.Log
		svcs []*leader.Service
	)
	for i := range n {
		fsm, err := raftfsm.New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		l, err := bucketlog.Open(ctx, cs, "bench", fsm, fmt.Sprintf("c%d", i))
		if err != nil {
			b.Fatal(err)
		}
		logs = append(logs, l)
		svcs = append(svcs, leader.New(l, fsm, leader.WithRetries(1000, func(a int) time.Duration {
			return time.Duration(a%16+1) * 200 * time.Microsecond
		})))
	}
	var blocks []ck.BlockMeta
	for i := range 4*b.N + 64 {
		blocks = append(blocks, leadertest.Block(fmt.Sprintf("seg-%07d", i), "acme", uint32(i%16), int64(i)*1e9))
	}
	if _, err := svcs[0].AddBlocks(ctx, blocks); err != nil {
		b.Fatal(err)
	}
	for _, l := range logs {
		if err := l.Barrier(ctx); err != nil {
			b.Fatal(err)
		}
	}
	cs.creates.Store(0)
	cs.gets.Store(0)
	cs.lists.Store(0)
	cs.heads.Store(0)
	var conflicts0, appends0 uint64
	for _, l := range logs {
		conflicts0 += l.Stats().Conflicts
		appends0 += l.Stats().Appended
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for i, svc := range svcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var held *ck.JobReply
			seq := uint64(0)
			for next.Add(1) <= int64(b.N) {
				seq++
				req := &ck.PollRequest{WorkerID: fmt.Sprintf("w%d-XXXXXXXXXXXXXXXX", i), Seq: seq, FreeSlots: 1}
				if held != nil {
					req.Updates = []ck.StatusUpdate{{Job: held.Job, Token: held.Token, Status: ck.ReportReleased}}
				}
				resp, err := svc.Poll(ctx, req)
				if err != nil {
					b.Error(err)
					return
				}
				held = nil
				for j := range resp.Jobs {
					if resp.Jobs[j].Outcome == ck.OutcomeAssigned {
						held = &resp.Jobs[j]
					}
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	var conflicts, appends uint64
	for _, l := range logs {
		conflicts += l.Stats().Conflicts
		appends += l.Stats().Appended
	}
	conflicts -= conflicts0
	appends -= appends0
	polls := float64(b.N)
	b.ReportMetric(polls/elapsed.Seconds(), "polls/s")
	b.ReportMetric(float64(cs.creates.Load())/polls, "creates/poll")
	b.ReportMetric(float64(cs.gets.Load())/polls, "GETs/poll")
	b.ReportMetric(float64(cs.lists.Load())/polls, "LISTs/poll")
	b.ReportMetric(float64(cs.heads.Load())/polls, "HEADs/poll")
	if appends > 0 {
		b.ReportMetric(float64(conflicts)/float64(appends), "conflicts/append")
	}
}
