//go:build unix

package bucketlogtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/bucketlog"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/worker"
)

// The coordinator processes: the test binary, run with processEnv set to
// "dir,id". They and the test talk through files in dir (see
// CoordinatorProcess).
const (
	processEnv = "BUCKETLOGTEST_COORDINATOR"
	logPrefix  = "compaction"
	// processes coordinators run at once by default, kills of them in a
	// run.
	processes, kills = 4, 10
	// checkpointEvery is the coordinators' checkpoint interval, small so
	// that a run passes many checkpoints.
	checkpointEvery = 32
	// grace is how far, in entries, the low-water mark stays behind what
	// the test's own replica has read when it truncates: a coordinator
	// still reading entries there finds them (see Log.Truncate).
	grace = 64
	// truncGrace is the log's truncation grace in a run (every process's
	// and the test's), short so that a run passes it.
	truncGrace = time.Second
	// patience bounds every wait for the processes' progress: a run that
	// waits longer is stuck.
	patience = 60 * time.Second
)

// check fails the test on an error; the package's tests do not use
// testify, so that a store's module imports nothing more for them.
func check(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// writeFile writes a file whole or not at all: the other side polls for
// it.
func writeFile(t testing.TB, path, content string) {
	t.Helper()
	check(t, os.WriteFile(path+".tmp", []byte(content), 0o644))
	check(t, os.Rename(path+".tmp", path))
}

// CoordinatorProcess is the body of a process of [RunProcesses]: the test
// RunProcesses names calls it, with open opening the store from what
// [Bucket.Env] put in the environment. It returns at once outside a coordinator process.
//
// The process ingests blocks and runs a worker that completes the jobs it
// is given, through its own coordinator of the log, until it is killed or
// told to stop. Every block it added is recorded in <dir>/ingested-<id>
// once AddBlocks returned. Between two rounds — never inside an append —
// it looks for two files of the test's: the first process to find pause
// renames it pausing-<id>, writes the last entry it applied to
// paused-<id> and waits until pausing-<id> is gone (meanwhile the test
// stops it with SIGSTOP, truncates the log, removes the file and
// continues it); stop makes it append nothing more, write
// stopped-<id>, wait for final, catch up and write report-<id>: the last
// entry applied, the SHA-256 of its state machine's snapshot, and the job
// its worker holds, with its token ("- 0" for none). Its log lines go to
// stderr.
func CoordinatorProcess(t *testing.T, open func(t *testing.T) blockmerge.Store) {
	spec := os.Getenv(processEnv)
	if spec == "" {
		return // not a coordinator process
	}
	dir, rest, _ := strings.Cut(spec, ",")
	id, mode, _ := strings.Cut(rest, ",")
	mode, data := strings.CutSuffix(mode, "+data")
	file := func(name string) string { return filepath.Join(dir, name+"-"+id) }
	ctx := context.Background()
	logOpts := []bucketlog.Option{bucketlog.WithCheckpointEvery(checkpointEvery), bucketlog.WithTruncateGrace(truncGrace),
		bucketlog.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, nil)))}
	cfg, fsmOpts := Config(), []raftfsm.Option(nil)
	if data {
		cfg, fsmOpts = dataConfig(), dataOptions()
	}
	store := open(t)
	var (
		l   *bucketlog.Log
		svc *leader.Service
	)
	if mode == "serverless" {
		// A serverless worker: its own node, as bucketlog.OpenNode makes
		// it (idle polls skipped, stale polls after lost races, the
		// catch-up limit).
		node, err := bucketlog.OpenNode(ctx, store, logPrefix, id, bucketlog.NodeConfig{State: cfg, FSMOptions: fsmOpts, LogOptions: logOpts})
		check(t, err)
		l, svc = node.Log, node.Service
	} else {
		fsm, err := raftfsm.New(cfg, fsmOpts...)
		check(t, err)
		l, err = bucketlog.Open(ctx, store, logPrefix, fsm, id, logOpts...)
		check(t, err)
		svc = leader.New(l, fsm, leader.WithClock(l.Now), leader.WithRetries(1000, func(a int) time.Duration { return time.Duration(a%8+1) * time.Millisecond }))
	}
	fsm := svc.FSM()
	rec, err := os.OpenFile(file("ingested"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	check(t, err)
	defer rec.Close()
	// pause waits while the test pauses this process, if it asks to.
	pause := func() {
		if os.Rename(filepath.Join(dir, "pause"), file("pausing")) == nil {
			// The test stops this process (SIGSTOP) while it waits here,
			// then removes the file and continues it.
			writeFile(t, file("paused"), strconv.FormatUint(l.Applied(), 10))
			for exists(file("pausing")) {
				time.Sleep(time.Millisecond)
			}
		}
	}
	// stop, once the test asks for it, waits for the final word, catches up
	// and reports.
	stop := func(held *ck.JobReply) bool {
		if !exists(filepath.Join(dir, "stop")) {
			return false
		}
		writeFile(t, file("stopped"), "")
		for !exists(filepath.Join(dir, "final")) {
			time.Sleep(5 * time.Millisecond)
		}
		check(t, l.Barrier(ctx))
		var snap bytes.Buffer
		check(t, fsm.Snapshot(&snap))
		job, token := "-", fencing.Token(0)
		if held != nil {
			job, token = held.Job, held.Token
		}
		writeFile(t, file("report"), fmt.Sprintf("%d %x %s %d", l.Applied(), sha256.Sum256(snap.Bytes()), job, token))
		return true
	}
	if data {
		// Real blocks, merged by a worker.Worker; the gate keeps the
		// pause and the stop outside every append. The worker's jobs are
		// not reported: the audit of the log checks their holders.
		d := &dataProcess{store: store, svc: svc, ingested: rec}
		d.writing, err = os.OpenFile(file("writing"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		check(t, err)
		defer d.writing.Close()
		d.startWorker(t, "w-"+id)
		for n := 0; ; n++ {
			if exists(filepath.Join(dir, "pause")) || exists(filepath.Join(dir, "stop")) {
				d.gate.Lock()
				pause()
				if stop(nil) {
					return
				}
				d.gate.Unlock()
			}
			d.ingest(t, id, n)
		}
	}
	var held *ck.JobReply
	for n, seq := 0, uint64(1); ; n, seq = n+1, seq+1 {
		pause()
		if stop(held) {
			return
		}
		b := leadertest.Block(fmt.Sprintf("%s-%05d", id, n), "acme", uint32(n%3), int64(n)*1e9)
		_, err := svc.AddBlocks(ctx, []ck.BlockMeta{b})
		check(t, err)
		_, err = fmt.Fprintln(rec, b.ID)
		check(t, err)
		req := &ck.PollRequest{WorkerID: "w-" + id, Seq: seq, FreeSlots: 1}
		if held != nil {
			u := ck.StatusUpdate{Job: held.Job, Token: held.Token, Status: ck.ReportFailure, Reason: "sources gone"}
			if outs, ok := leadertest.Outputs(svc.FSM(), held); ok {
				u = ck.StatusUpdate{Job: held.Job, Token: held.Token, Status: ck.ReportSuccess, Outputs: outs}
			}
			req.Updates = []ck.StatusUpdate{u}
		}
		resp, err := svc.Poll(ctx, req)
		check(t, err)
		held = nil
		for i := range resp.Jobs {
			if resp.Jobs[i].Outcome == ck.OutcomeAssigned && len(resp.Jobs[i].Plan.Sources) > 0 {
				held = &resp.Jobs[i]
			}
		}
	}
}

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

// Bucket is a new, empty bucket of the store under test, for one run of
// [RunProcesses].
type Bucket struct {
	// Env is added to the processes' environment: what the open function
	// given to [CoordinatorProcess] needs to reach the bucket.
	Env []string
	// Store is the test's own view of the bucket, with conditional puts
	// and modification times.
	Store blockmerge.Store
}

// RunProcesses runs processes of the test binary (see
// [CoordinatorProcess]) on one bucket log, all ingesting and compacting,
// twice, as subtests of t, each on a bucket newBucket returns; test names
// the test, in the calling package, that calls CoordinatorProcess (a
// process is the test binary running only it):
//
//   - "coordinators": four coordinator processes, each built with the
//     default options;
//   - "serverless-workers": eight serverless workers, each a
//     bucketlog.Node of its own (see bucketlog.OpenNode), on real data
//     (see below).
//
// Ten times one of them is killed with SIGKILL at whatever
// point it reached and restarted. Once, half way, one is paused (the
// first to finish a round, so never inside an append: SIGSTOP between a
// proposer's check of the low-water mark and its create would outlast
// the truncation's grace) while the others run on past checkpoints and
// the test truncates the log past the pause — raising the low-water mark
// and, once the truncation grace passed, deleting the entries below it —
// then resumed: it must restore the
// checkpoint at the mark (its log says so) rather than re-create the
// deleted entry it would have appended next. At the end the processes stop
// appending, catch up and report, and the test checks:
//
//   - no gap, no fork: the test's replica, which read every entry from
//     entry 1 as the log grew, a new replica restoring the newest
//     checkpoint, and the processes' replicas are byte-identical; the
//     entries present are exactly those above the low-water mark, up to
//     the tip (none below the mark reappeared);
//   - no job held by two workers with valid tokens: every renewal,
//     completion, failure or release the log applied came from the job's
//     current holder with its current token, and no two processes end
//     holding one job with its current token;
//   - every block a process recorded as added is live or was compacted,
//     and no block was compacted twice.
//
// On real data, the processes write real blocks whose records
// name their block and merge them with a worker.Worker (whose polls, like
// the ingest's appends, never straddle a pause or the stop); after the
// checks above the test drains the log with a worker of its own — every
// job done, every tombstone and orphaned attempt deleted — and checks the
// data: every record of every block added is in exactly one live block
// (a block added by a process killed before it recorded so is found by
// its records, all of them, once), no record is anywhere twice, and the
// store holds the live blocks' objects and nothing else but the blocks a
// killed process wrote and never added, which the log never knew (at most
// one per kill).
func RunProcesses(t *testing.T, test string, newBucket func(t *testing.T) Bucket) {
	if testing.Short() {
		// -short runs skip the process tests; CI and the README's test
		// command run them.
		t.Skip("SKIPPED in -short: starts processes")
	}
	for _, c := range []runConfig{
		{name: "coordinators", processes: processes},
		{name: "serverless-workers", processes: 2 * processes, serverless: true, data: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.test, c.bucket = test, newBucket(t)
			runProcesses(t, c)
		})
	}
}

// runConfig is one run of [RunProcesses].
type runConfig struct {
	name, test string
	bucket     Bucket
	processes  int
	// serverless makes each process a serverless worker rather than a
	// coordinator; data makes the processes ingest real blocks and merge
	// them with a worker.Worker, and the test drain the log at the end
	// and check every record.
	serverless, data bool
}

// runProcesses is one run of RunProcesses.
func runProcesses(t *testing.T, c runConfig) {
	ctx := context.Background()
	r := &run{t: t, c: c, dir: t.TempDir(), procs: make([]*process, c.processes)}
	t.Cleanup(r.killAll)
	rng := rand.New(rand.NewPCG(7, 7))

	// The test's replica reads every entry from entry 1, as the log
	// grows, and audits each; it also truncates. Its store hides the
	// checkpoints above what it read, so that its truncations never pass
	// it.
	r.store = &boundedCheckpoints{Store: c.bucket.Store}
	r.audit = newAudit()
	replay, err := raftfsm.New(r.config())
	check(t, err)
	r.log, err = bucketlog.Open(ctx, r.store, logPrefix, replay, "audit-replay", bucketlog.WithCheckpointEvery(0), bucketlog.WithTruncateGrace(truncGrace),
		bucketlog.WithObserver(r.audit.observe))
	check(t, err)

	for i := range r.procs {
		r.start(i, 0)
	}
	var mark uint64
	for kill := 1; kill <= kills; kill++ {
		r.waitGrowth(15)
		if kill == kills/2 {
			mark = r.pausePastTruncation()
		}
		i := rng.IntN(c.processes)
		r.kill(i)
		r.start(i, kill)
	}
	r.waitGrowth(15)
	tip, reports := r.stop()

	// No gap, no fork.
	require(t, r.log.Stats().Read == tip, "the test's replica read %d entries of %d: it restored a checkpoint", r.log.Stats().Read, tip)
	var want bytes.Buffer
	check(t, replay.Snapshot(&want))
	wantSum := fmt.Sprintf("%x", sha256.Sum256(want.Bytes()))
	fromCheckpoint, err := raftfsm.New(r.config())
	check(t, err)
	cp, err := bucketlog.Open(ctx, c.bucket.Store, logPrefix, fromCheckpoint, "audit-checkpoint")
	check(t, err)
	require(t, cp.Applied() == tip, "the replica restored from a checkpoint reached entry %d, the log %d", cp.Applied(), tip)
	var got bytes.Buffer
	check(t, fromCheckpoint.Snapshot(&got))
	require(t, bytes.Equal(want.Bytes(), got.Bytes()), "a checkpoint-restored replica differs from one that read every entry")
	for _, rep := range reports {
		require(t, rep.applied == tip && rep.sum == wantSum, "coordinator %s ended at entry %d with state %s; the log's tip is %d with state %s",
			rep.id, rep.applied, rep.sum, tip, wantSum)
	}
	var present []uint64
	check(t, c.bucket.Store.List(ctx, logPrefix+"/log/", func(k string) error {
		n, err := strconv.ParseUint(strings.TrimPrefix(k, logPrefix+"/log/"), 10, 64)
		present = append(present, n)
		return err
	}))
	require(t, len(present) > 0, "no entry left")
	require(t, uint64(len(present)) == tip-mark && present[0] == mark+1 && present[len(present)-1] == tip,
		"entries present: %d, from %d to %d; want %d to %d (the low-water mark is %d)", len(present), present[0], present[len(present)-1], mark+1, tip, mark)

	// Tokens.
	for _, v := range r.audit.violations {
		t.Error(v)
	}
	holders := map[string]string{}
	for _, rep := range reports {
		js, _, ok := replay.Job(rep.job)
		if !ok || js.Status != ck.StatusInProgress || js.Token != rep.token {
			continue
		}
		require(t, holders[rep.job] == "", "coordinators %s and %s both hold %s with its current token %d", holders[rep.job], rep.id, rep.job, rep.token)
		holders[rep.job] = rep.id
	}

	// Blocks.
	view := replay.Index()
	defer view.Close()
	recorded := r.recorded("ingested")
	for id := range recorded {
		require(t, view.Live(id) != (r.audit.compacted[id] == 1), "block %s: live %t, compacted %d times", id, view.Live(id), r.audit.compacted[id])
	}
	for id, n := range r.audit.compacted {
		require(t, n == 1, "block %s compacted %d times", id, n)
	}
	require(t, len(r.audit.compacted) > 0, "nothing was compacted")
	t.Logf("%d entries (low-water mark %d), %d blocks recorded, %d compacted, %d worker reports checked against their jobs' holders, %d SIGKILLs, one pause past a truncation",
		tip, mark, len(recorded), len(r.audit.compacted), r.audit.reports, kills)
	if c.data {
		r.drainAndVerify()
	}
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
	node, err := bucketlog.OpenNode(ctx, r.c.bucket.Store, logPrefix, "drain", bucketlog.NodeConfig{State: dataConfig(), FSMOptions: dataOptions(),
		LogOptions: []bucketlog.Option{bucketlog.WithCheckpointEvery(0)}})
	check(t, err)
	w, err := worker.New(node.Service, r.c.bucket.Store, worker.Config{ID: "w-drain", Concurrency: 4, PollInterval: 10 * time.Millisecond})
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
			rd, err := blockmerge.Open(ctx, r.c.bucket.Store, m.ID)
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
	check(t, r.c.bucket.Store.List(ctx, ck.BlockPrefix, func(key string) error {
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

// recorded returns the lines of the processes' files named name: the IDs
// of the blocks they recorded.
func (r *run) recorded(name string) map[string]bool {
	files, err := filepath.Glob(filepath.Join(r.dir, name+"-*"))
	check(r.t, err)
	set := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		check(r.t, err)
		for line := range strings.Lines(string(data)) {
			set[strings.TrimSuffix(line, "\n")] = true
		}
	}
	return set
}

// config is the run's replicated configuration.
func (r *run) config() raftfsm.Config {
	if r.c.data {
		return dataConfig()
	}
	return Config()
}

func require(t testing.TB, ok bool, format string, args ...any) {
	t.Helper()
	if !ok {
		t.Fatalf(format, args...)
	}
}

// run is the test's side of RunProcesses.
type run struct {
	t     *testing.T
	c     runConfig
	dir   string
	procs []*process
	store *boundedCheckpoints
	log   *bucketlog.Log
	audit *audit
}

// process is one coordinator process.
type process struct {
	id, out string
	cmd     *exec.Cmd
	done    chan error // its exit
	exited  bool
}

func (r *run) file(name, id string) string { return filepath.Join(r.dir, name+"-"+id) }

// start starts process i of its generation gen.
func (r *run) start(i, gen int) {
	p := &process{id: fmt.Sprintf("c%d.%d", i, gen), done: make(chan error, 1)}
	p.out = r.file("out", p.id)
	p.cmd = exec.Command(os.Args[0], "-test.run=^"+r.c.test+"$")
	mode := "coordinator"
	if r.c.serverless {
		mode = "serverless"
	}
	if r.c.data {
		mode += "+data"
	}
	p.cmd.Env = append(append(os.Environ(), r.c.bucket.Env...), fmt.Sprintf("%s=%s,%s,%s", processEnv, r.dir, p.id, mode))
	out, err := os.Create(p.out)
	check(r.t, err)
	defer out.Close()
	p.cmd.Stdout, p.cmd.Stderr = out, out
	check(r.t, p.cmd.Start())
	go func() { p.done <- p.cmd.Wait() }()
	r.procs[i] = p
}

// output is the end of a process's output, for a failure.
func (p *process) output() string {
	data, _ := os.ReadFile(p.out)
	if len(data) > 4096 {
		data = data[len(data)-4096:]
	}
	return string(data)
}

// kill kills process i with SIGKILL; it must not have exited before.
func (r *run) kill(i int) {
	p := r.procs[i]
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	err := <-p.done
	p.exited = true
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		r.t.Fatalf("coordinator %s exited before it was killed: %v\n%s", p.id, err, p.output())
	}
}

func (r *run) killAll() {
	for _, p := range r.procs {
		if p != nil && !p.exited {
			_ = p.cmd.Process.Signal(syscall.SIGKILL)
			<-p.done
			p.exited = true
		}
	}
}

// waitFor waits until cond holds; it fails the test if a process exits
// meanwhile or the wait lasts longer than patience.
func (r *run) waitFor(what string, cond func() bool) {
	r.t.Helper()
	r.waitProgress(what, cond, nil)
}

// waitProgress is waitFor for a wait that makes visible progress: it
// fails only after patience passes without the value progress returns
// changing (a slow machine takes longer, a stuck run still fails). A nil
// progress never changes.
func (r *run) waitProgress(what string, cond func() bool, progress func() uint64) {
	r.t.Helper()
	var last uint64
	if progress != nil {
		last = progress()
	}
	for deadline := time.Now().Add(patience); !cond(); {
		if progress != nil {
			if p := progress(); p != last {
				last, deadline = p, time.Now().Add(patience)
			}
		}
		for _, p := range r.procs {
			select {
			case err := <-p.done:
				p.exited = true
				r.t.Fatalf("waiting for %s: coordinator %s exited: %v\n%s", what, p.id, err, p.output())
			default:
			}
		}
		if time.Now().After(deadline) {
			var outs strings.Builder
			for _, p := range r.procs {
				fmt.Fprintf(&outs, "\n-- coordinator %s:\n%s", p.id, p.output())
			}
			r.t.Fatalf("waited %s without progress for %s%s", patience, what, outs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// tip is the last entry of the log, as the test's replica read it.
func (r *run) tip() uint64 {
	r.t.Helper()
	check(r.t, r.log.Barrier(context.Background()))
	return r.log.Applied()
}

func (r *run) waitGrowth(by uint64) {
	r.t.Helper()
	from := r.tip()
	r.waitFor(fmt.Sprintf("the log to grow from %d entries by %d", from, by), func() bool { return r.tip() >= from+by })
}

// pausePastTruncation pauses the first process to reach the end of a
// round, truncates the log past the entry it would append next, resumes
// it and waits for it to restore the checkpoint at the low-water mark. It
// returns the mark.
func (r *run) pausePastTruncation() uint64 {
	t, ctx := r.t, context.Background()
	writeFile(t, filepath.Join(r.dir, "pause"), "")
	var (
		p      *process
		paused uint64
	)
	r.waitFor("a coordinator to pause", func() bool {
		for _, q := range r.procs {
			data, err := os.ReadFile(r.file("paused", q.id))
			if err == nil {
				p = q
				paused, err = strconv.ParseUint(string(data), 10, 64)
				check(t, err)
				return true
			}
		}
		return false
	})
	check(t, p.cmd.Process.Signal(syscall.SIGSTOP))
	r.waitFor("coordinator "+p.id+" to stop", func() bool { return stopped(p.cmd.Process.Pid) })
	check(t, os.Remove(r.file("pausing", p.id)))
	// The low-water mark reaches the entry after the pause once a
	// checkpoint at or past the next multiple of 64 is grace entries
	// behind what the test's replica read.
	least := (paused+64)/64*64 + grace
	r.waitFor(fmt.Sprintf("the log to reach entry %d", least), func() bool { return r.tip() >= least })
	var mark uint64
	for mark <= paused {
		if mark > 0 {
			r.waitGrowth(checkpointEvery) // the checkpoint was not written
		}
		applied := r.log.Applied()
		r.store.upTo.Store(applied - min(applied, grace))
		var err error
		mark, err = r.log.Truncate(ctx)
		check(t, err)
	}
	// The entries below the mark go once the grace has passed since it
	// was raised; the paused process stays stopped meanwhile.
	next := fmt.Sprintf("%s/log/%020d", logPrefix, paused+1)
	r.waitFor(fmt.Sprintf("entry %d, below the low-water mark %d, to be deleted after the grace", paused+1, mark), func() bool {
		_, err := r.log.Truncate(ctx)
		check(t, err)
		ok, err := r.c.bucket.Store.Exists(ctx, next)
		check(t, err)
		return !ok
	})
	check(t, p.cmd.Process.Signal(syscall.SIGCONT))
	restored := fmt.Sprintf(" entry=%d mark=", paused+1)
	r.waitFor(fmt.Sprintf("coordinator %s, paused after entry %d, to restore the checkpoint at the low-water mark %d", p.id, paused, mark), func() bool {
		data, err := os.ReadFile(p.out)
		check(t, err)
		for line := range strings.Lines(string(data)) {
			if strings.Contains(line, "behind the low-water mark") && strings.Contains(line, restored) {
				return true
			}
		}
		return false
	})
	r.waitGrowth(15)
	ok, err := r.c.bucket.Store.Exists(ctx, next)
	check(t, err)
	require(t, !ok, "entry %d, below the low-water mark %d, reappeared", paused+1, mark)
	t.Logf("coordinator %s paused after entry %d, resumed past the low-water mark %d and restored its checkpoint", p.id, paused, mark)
	return mark
}

// stopped reports whether process pid is stopped; true where /proc does
// not tell.
func stopped(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	_, rest, ok := strings.Cut(string(data[bytes.LastIndexByte(data, ')')+1:]), " ")
	return !ok || strings.HasPrefix(rest, "T") || strings.HasPrefix(rest, "t")
}

// report is what a process reported at the end.
type report struct {
	id, sum, job string
	applied      uint64
	token        fencing.Token
}

// stop stops every process (see CoordinatorProcess) and returns the
// log's tip and their reports.
func (r *run) stop() (uint64, []report) {
	t := r.t
	writeFile(t, filepath.Join(r.dir, "stop"), "")
	for _, p := range r.procs {
		r.waitFor("coordinator "+p.id+" to stop appending", func() bool { return exists(r.file("stopped", p.id)) })
	}
	tip := r.tip() // nothing appends any more
	writeFile(t, filepath.Join(r.dir, "final"), "")
	var reports []report
	for _, p := range r.procs {
		select {
		case err := <-p.done:
			p.exited = true
			require(t, err == nil, "coordinator %s: %v\n%s", p.id, err, p.output())
		case <-time.After(patience):
			t.Fatalf("coordinator %s did not report and exit in %s", p.id, patience)
		}
		data, err := os.ReadFile(r.file("report", p.id))
		check(t, err)
		rep := report{id: p.id}
		_, err = fmt.Sscanf(string(data), "%d %s %s %d", &rep.applied, &rep.sum, &rep.job, &rep.token)
		check(t, err)
		reports = append(reports, rep)
	}
	return tip, reports
}

// audit checks the log's commands as the test's replica applies them.
type audit struct {
	plans     map[string][]string // job: its sources
	holders   map[string]holder   // job: its current holder
	compacted map[string]int      // block: completions that replaced it
	// reports counts the renewals, completions, failures and releases
	// applied; violations, those not from the current holder.
	reports    int
	violations []string
}

type holder struct {
	worker string
	token  fencing.Token
}

func newAudit() *audit {
	return &audit{plans: map[string][]string{}, holders: map[string]holder{}, compacted: map[string]int{}}
}

func (a *audit) observe(data []byte, ap leader.Applied) {
	cmd, err := raftfsm.DecodeCommand(data)
	if err != nil || cmd.Poll == nil || ap.Result == nil {
		return
	}
	for i, c := range cmd.Poll.Update.Changes {
		r := ap.Result.Changes[i]
		if !r.Applied {
			continue
		}
		switch c.Kind {
		case ck.ChangeAdd:
			a.plans[c.Job] = c.Plan.Sources
		case ck.ChangeAssign:
			a.holders[c.Job] = holder{c.Worker, r.Token}
		case ck.ChangeRenew, ck.ChangeComplete, ck.ChangeFail, ck.ChangeRelease:
			a.reports++
			if h := a.holders[c.Job]; h != (holder{c.Worker, c.Token}) {
				a.violations = append(a.violations, fmt.Sprintf("entry at index %d: %s of job %s by %s with token %d applied; its holder is %s with token %d",
					ap.Index, c.Kind, c.Job, c.Worker, c.Token, h.worker, h.token))
			}
		}
		if c.Kind == ck.ChangeComplete && r.Replace != nil && r.Replace.Applied {
			for _, src := range a.plans[c.Job] {
				a.compacted[src]++
			}
		}
	}
}

// boundedCheckpoints hides from listings the checkpoints above upTo.
type boundedCheckpoints struct {
	blockmerge.Store
	upTo atomic.Uint64
}

func (b *boundedCheckpoints) List(ctx context.Context, prefix string, fn func(string) error) error {
	if prefix != logPrefix+"/checkpoint/" {
		return b.Store.List(ctx, prefix, fn)
	}
	return b.Store.List(ctx, prefix, func(k string) error {
		if n, err := strconv.ParseUint(strings.TrimPrefix(k, prefix), 10, 64); err == nil && n > b.upTo.Load() {
			return nil
		}
		return fn(k)
	})
}

func (b *boundedCheckpoints) ModTime(ctx context.Context, key string) (time.Time, error) {
	return b.Store.(blockmerge.Timestamper).ModTime(ctx, key)
}

func (b *boundedCheckpoints) PutIfAbsent(ctx context.Context, key string, r io.Reader) error {
	return b.Store.(blockmerge.ConditionalPutter).PutIfAbsent(ctx, key, r)
}
