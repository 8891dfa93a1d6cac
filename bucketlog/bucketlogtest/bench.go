// Package bucketlogtest tests and measures a bucket log on a store, for a
// store's own tests to call, as blockmerge/storetest's conformance suite
// is: processes of the log killed with SIGKILL ([RunProcesses]; on unix),
// benchmarks of polls and appends, and checks of a replica's state.
package bucketlogtest

import (
	"context"
	"fmt"
	"io"
	"strconv"
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

// countingTimed is counting for a store that keeps modification times
// (counted as HEADs: a HEAD request on S3).
type countingTimed struct {
	*counting
	ts blockmerge.Timestamper
}

func (c countingTimed) ModTime(ctx context.Context, key string) (time.Time, error) {
	c.heads.Add(1)
	return c.ts.ModTime(ctx, key)
}

// count wraps store to count its operations.
func count(b *testing.B, store blockmerge.Store) (*counting, blockmerge.Store) {
	cond, ok := store.(blockmerge.ConditionalPutter)
	if !ok {
		b.Fatal("the store has no conditional put")
	}
	cs := &counting{Store: store, cond: cond}
	if ts, ok := store.(blockmerge.Timestamper); ok {
		return cs, countingTimed{cs, ts}
	}
	return cs, cs
}

func (c *counting) reset() {
	c.creates.Store(0)
	c.gets.Store(0)
	c.lists.Store(0)
	c.heads.Store(0)
}

// report reports the operations per unit (poll, block).
func (c *counting) report(b *testing.B, per float64, unit string) {
	b.ReportMetric(float64(c.creates.Load())/per, "creates/"+unit)
	b.ReportMetric(float64(c.gets.Load())/per, "GETs/"+unit)
	b.ReportMetric(float64(c.lists.Load())/per, "LISTs/"+unit)
	b.ReportMetric(float64(c.heads.Load())/per, "HEADs/"+unit)
}

func (c *counting) PutIfAbsent(ctx context.Context, key string, r io.Reader) error {
	c.creates.Add(1)
	return c.cond.PutIfAbsent(ctx, key, r)
}

// CoordinatorsBenchmarks runs the fleet benchmark (see
// [FleetBenchmarks]) with 1, 4 and 16 coordinators, each serving one
// worker, as sub-benchmarks, each on a store newStore returns (a new,
// empty store with conditional puts).
func CoordinatorsBenchmarks(b *testing.B, newStore func(b *testing.B) blockmerge.Store) {
	for _, n := range []int{1, 4, 16} {
		b.Run(strconv.Itoa(n), func(b *testing.B) { fleetBenchmark(b, newStore(b), fleet{nodes: n, workers: n}) })
	}
}

// FleetBenchmarks runs b.N polls of 1, 4 and 16 workers at once on one
// bucket log, as sub-benchmarks, each on a store newStore returns (a new,
// empty store with conditional puts): through one coordinator, and
// serverless (one bucketlog.Node per worker). Each poll releases the job
// the previous one took and takes one. It reports polls/s, the object
// operations per poll across the fleet (creates, GETs, HEADs — existence
// checks and modification times —, LISTs) and the races lost per poll.
func FleetBenchmarks(b *testing.B, newStore func(b *testing.B) blockmerge.Store) {
	for _, w := range []int{1, 4, 16} {
		for _, serverless := range []bool{true, false} {
			mode := "coordinator"
			if serverless {
				mode = "serverless"
			}
			b.Run(fmt.Sprintf("%s/workers=%d", mode, w), func(b *testing.B) {
				fleetBenchmark(b, newStore(b), fleet{nodes: 1, workers: w, serverless: serverless})
			})
		}
	}
}

// fleet is the shape of a fleet benchmark: workers workers polling at
// once through nodes writers of the log — coordinators serving the
// workers round-robin, or, serverless, one bucketlog.Node per worker
// (nodes is then workers).
type fleet struct {
	nodes, workers int
	serverless     bool
}

// fleetBenchmark is one fleet benchmark on store.
func fleetBenchmark(b *testing.B, store blockmerge.Store, f fleet) {
	cs, counted := count(b, store)
	ctx := context.Background()
	cfg := raftfsm.DefaultConfig()
	if f.serverless {
		f.nodes = f.workers
	}
	var (
		logs []*bucketlog.Log
		svcs []*leader.Service
	)
	for i := range f.nodes {
		var (
			l   *bucketlog.Log
			svc *leader.Service
		)
		if f.serverless {
			node, err := bucketlog.OpenNode(ctx, counted, "bench", fmt.Sprintf("w%d", i), bucketlog.NodeConfig{State: cfg})
			if err != nil {
				b.Fatal(err)
			}
			l, svc = node.Log, node.Service
		} else {
			fsm, err := raftfsm.New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			if l, err = bucketlog.Open(ctx, counted, "bench", fsm, fmt.Sprintf("c%d", i)); err != nil {
				b.Fatal(err)
			}
			svc = leader.New(l, fsm, leader.WithClock(l.Now), leader.WithRetries(1000, func(a int) time.Duration {
				return time.Duration(a%16+1) * 200 * time.Microsecond
			}))
		}
		logs, svcs = append(logs, l), append(svcs, svc)
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
	cs.reset()
	var conflicts0 uint64
	for _, l := range logs {
		conflicts0 += l.Stats().Conflicts
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for i := range f.workers {
		svc := svcs[i%len(svcs)]
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
	var conflicts uint64
	for _, l := range logs {
		conflicts += l.Stats().Conflicts
	}
	polls := float64(b.N)
	b.ReportMetric(polls/elapsed.Seconds(), "polls/s")
	cs.report(b, polls, "poll")
	b.ReportMetric(float64(conflicts-conflicts0)/polls, "conflicts/poll")
}

// IngestBenchmarks measures the log's maximum append rate, with 1 and 16
// writers, as sub-benchmarks, each on a store newStore returns (a new,
// empty store with conditional puts): the writers add b.N blocks, one per
// command, through one coordinator, all at once, so that commands wait
// for each other's appends and go out in batches. It reports appends/s,
// blocks/s, commands per entry and the object operations per block.
func IngestBenchmarks(b *testing.B, newStore func(b *testing.B) blockmerge.Store) {
	for _, w := range []int{1, 16} {
		b.Run(fmt.Sprintf("writers=%d", w), func(b *testing.B) { ingestBenchmark(b, newStore(b), w) })
	}
}

// ingestBenchmark is one ingest benchmark on store.
func ingestBenchmark(b *testing.B, store blockmerge.Store, writers int) {
	cs, counted := count(b, store)
	ctx := context.Background()
	fsm, err := raftfsm.New(raftfsm.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	l, err := bucketlog.Open(ctx, counted, "bench", fsm, "c0")
	if err != nil {
		b.Fatal(err)
	}
	svc := leader.New(l, fsm)
	if _, err := svc.Read(ctx); err != nil {
		b.Fatal(err)
	}
	cs.reset()
	before := l.Stats()
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				blk := leadertest.Block(fmt.Sprintf("seg-%02d-%08d", w, i), "acme", uint32(i%16), i*1e9)
				if _, err := svc.AddBlocks(ctx, []ck.BlockMeta{blk}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	st := l.Stats()
	appends := float64(st.Appended - before.Appended)
	b.ReportMetric(appends/elapsed.Seconds(), "appends/s")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "blocks/s")
	b.ReportMetric(float64(st.Commands-before.Commands)/appends, "commands/entry")
	cs.report(b, float64(b.N), "block")
}
