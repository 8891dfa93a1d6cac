//go:build unix

package bucketlogtest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/bucketlog"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/worker"
)

// recordsPerBlock is how many records a data run's processes write into
// each block they ingest.
const recordsPerBlock = 8

// dataConfig is the replicated configuration of data runs: Config with
// the short ages, lease and cleanup delay of a run that lasts seconds, so
// that partial batches are planned, the jobs of killed workers expire and
// tombstones are released while the test drains.
func dataConfig() raftfsm.Config {
	cfg := Config()
	for i := range cfg.Planner.Levels {
		l := &cfg.Planner.Levels[i]
		l.MaxAge = time.Duration(i+2) * 500 * time.Millisecond
		l.AgingThreshold = 4 * l.MaxAge
	}
	cfg.Scheduler.LeaseDuration = 3 * time.Second
	cfg.Index.CleanupDelay = 500 * time.Millisecond
	return cfg
}

// dataOptions tune the Prepare of data runs: tombstones no compaction
// job carries go to cleanup-only jobs soon, not after the default minute.
func dataOptions() []raftfsm.Option {
	return []raftfsm.Option{raftfsm.WithCleanupAfter(200 * time.Millisecond)}
}

// blockRecords are the records of the block with the given ID: their
// keys name the block and the record, so that the test can tell where
// every record in the final blocks came from.
func blockRecords(id string, ts int64) []blockmerge.Record {
	recs := make([]blockmerge.Record, recordsPerBlock)
	for k := range recs {
		recs[k] = blockmerge.Record{Key: fmt.Appendf(nil, "%s/%d", id, k), Timestamp: ts + int64(k), Value: []byte(id)}
	}
	return recs
}

// dataProcess is a data run's process: ingest of real blocks, and a
// worker.Worker merging them, both through svc.
type dataProcess struct {
	store blockmerge.Store
	svc   *leader.Service
	// writing and ingested record the IDs of the blocks about to be
	// written and of those added.
	writing, ingested *os.File
	// gate is held for reading by every call into the log (the worker's
	// polls, ingest) and for writing by a pause or the stop, so that
	// neither lands inside an append.
	gate sync.RWMutex
}

// poll is the worker's client: svc.Poll inside the gate.
func (d *dataProcess) poll(ctx context.Context, req *ck.PollRequest) (*ck.PollResponse, error) {
	d.gate.RLock()
	defer d.gate.RUnlock()
	return d.svc.Poll(ctx, req)
}

// startWorker runs a worker.Worker with ID id until the process ends.
func (d *dataProcess) startWorker(t *testing.T, id string) {
	w, err := worker.New(worker.ClientFunc(d.poll), d.store, worker.Config{ID: id, Concurrency: 2, PollInterval: 20 * time.Millisecond})
	check(t, err)
	go func() { _ = w.Run(context.Background()) }()
}

// ingest writes block n of process id, adds it, and records it: in
// d.writing before it writes it, in d.ingested once it is added. A kill
// between the two leaves a block written and perhaps added, but not
// recorded as added: the test finds it by its records.
func (d *dataProcess) ingest(t *testing.T, id string, n int) {
	ctx := context.Background()
	bid := fmt.Sprintf("%s-%05d", id, n)
	_, err := fmt.Fprintln(d.writing, bid)
	check(t, err)
	meta, err := blockmerge.WriteBlock(ctx, d.store, blockmerge.BlockInfo{ID: bid, Tenant: "acme", Shard: uint32(n % 3)},
		[]blockmerge.Dataset{{Name: "events", Records: blockRecords(bid, int64(n)*1e9)}})
	check(t, err)
	d.gate.RLock()
	_, err = d.svc.AddBlocks(ctx, []ck.BlockMeta{meta})
	d.gate.RUnlock()
	check(t, err)
	_, err = fmt.Fprintln(d.ingested, bid)
	check(t, err)
	// Ingest paces itself: the workers, not the ingest, should fill the
	// log.
	time.Sleep(10 * time.Millisecond)
}

// drainAndVerify runs a worker of the test's own on the log until nothing
// is left to do, then checks the data: every record of every block a
// process recorded as added is in exactly one live block, and so is every
// record of the blocks added by a process killed before it recorded
// them (at most one per kill); no record is anywhere twice; the store
// holds the live blocks' objects and nothing else but the blocks a killed
// process wrote and never added (at most one per kill: the ingest's own,
// which the log never knew).
func (r *run) drainAndVerify() {
	t, ctx := r.t, context.Background()
	node, err := bucketlog.OpenNode(ctx, r.c.Store, logPrefix, "drain", bucketlog.NodeConfig{State: dataConfig(), FSMOptions: dataOptions(),
		LogOptions: []bucketlog.Option{bucketlog.WithCheckpointEvery(0)}})
	check(t, err)
	w, err := worker.New(node.Service, r.c.Store, worker.Config{ID: "w-drain", Concurrency: 4, PollInterval: 10 * time.Millisecond})
	check(t, err)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	var st raftfsm.Stats
	r.waitProgress("the log to drain", func() bool {
		check(t, node.Log.Barrier(ctx))
		st = node.FSM().Stats()
		return st.Drained() && st.Index.Orphans == 0
	}, node.Log.Applied)
	stop()
	check(t, <-done)
	require(t, st.Planner.Quarantined == 0, "%d blocks quarantined", st.Planner.Quarantined)
	// The audit reads the drain's entries too.
	check(t, r.log.Barrier(ctx))
	for _, v := range r.audit.violations {
		t.Error(v)
	}
	for id, n := range r.audit.compacted {
		require(t, n == 1, "block %s compacted %d times", id, n)
	}

	// What the processes recorded.
	added, written := r.recorded("ingested"), r.recorded("writing")

	// The live blocks' records.
	view := node.FSM().Index()
	defer view.Close()
	seen := map[string][]int{} // block: how often each of its records was found
	live := map[string]bool{}
	records, liveBlocks := 0, 0
	for after := ""; ; {
		blocks := view.Blocks(after, 256)
		if len(blocks) == 0 {
			break
		}
		for _, m := range blocks {
			live[ck.ObjectKey(m.ID)] = true
			liveBlocks++
			rd, err := blockmerge.Open(ctx, r.c.Store, m.ID)
			check(t, err)
			for _, d := range rd.Meta().Datasets {
				it, err := rd.Dataset(ctx, d.Tenant, d.Name)
				check(t, err)
				for it.Next() {
					rec := it.Record()
					bid, k, ok := strings.Cut(string(rec.Key), "/")
					n, err := strconv.Atoi(k)
					require(t, ok && err == nil && n >= 0 && n < recordsPerBlock && string(rec.Value) == bid,
						"block %s holds a record no process wrote: %q = %q", m.ID, rec.Key, rec.Value)
					if seen[bid] == nil {
						seen[bid] = make([]int, recordsPerBlock)
					}
					seen[bid][n]++
					records++
				}
				check(t, it.Err())
			}
		}
		after = blocks[len(blocks)-1].ID
	}
	unrecorded := 0
	for bid, counts := range seen {
		require(t, slices.Equal(counts, slices.Repeat([]int{1}, recordsPerBlock)), "block %s: its records were found %v times", bid, counts)
		if !added[bid] {
			require(t, written[bid], "records of block %s, which no process wrote, in the live blocks", bid)
			unrecorded++
		}
	}
	for bid := range added {
		require(t, seen[bid] != nil, "block %s was added, and none of its records is in a live block", bid)
	}
	require(t, unrecorded <= kills, "%d blocks added by a process killed before it recorded them; %d kills", unrecorded, kills)

	// The objects: the live blocks' and the blocks written but never
	// added.
	stray := 0
	check(t, r.c.Store.List(ctx, ck.BlockPrefix, func(key string) error {
		if live[key] {
			delete(live, key)
			return nil
		}
		bid, ok := strings.CutPrefix(key, ck.ObjectKey(""))
		require(t, ok && written[bid] && !added[bid] && seen[bid] == nil, "object %s left behind: it is no live block's", key)
		stray++
		return nil
	}))
	require(t, len(live) == 0, "%d live blocks have no object", len(live))
	require(t, stray <= kills, "%d blocks written by a process killed before it added them; %d kills", stray, kills)
	t.Logf("drained: %d records of %d blocks (%d added but not recorded by a killed process) in %d live blocks; %d blocks written but never added (their process was killed), no other object left",
		records, len(seen), unrecorded, liveBlocks, stray)
}
