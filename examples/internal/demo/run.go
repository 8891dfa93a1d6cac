package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/schollz/progressbar/v3"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/index"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/metrics/prom"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/rpc"
	"github.com/compactkit/compactkit/worker"
)

// Config configures a run.
type Config struct {
	// Data shapes the synthetic ingest.
	Data DataConfig
	// Workers is the number of workers, each running Concurrency jobs at
	// once.
	Workers, Concurrency int
	// PartitionWorkers is the number of workers cut off from the leader
	// in the second half of the ingest, while they run a job, as if they
	// had crashed: their jobs are reassigned once their leases expire.
	PartitionWorkers int
	// FlushInterval is the pause between ingest ticks (one segment per
	// shard per tick).
	FlushInterval time.Duration
	// SampleInterval is how often queue depths and read amplification
	// are sampled for the chart.
	SampleInterval time.Duration
	// DrainTimeout bounds the wait, after the ingest, for compaction and
	// cleanup to finish.
	DrainTimeout time.Duration
	// Progress shows progress bars on the output.
	Progress bool
	// Logger receives the workers' logs (nil: discard).
	Logger *slog.Logger
	// Dir is the parent of the example's temporary directory ("" for the
	// system's); Keep keeps that directory and prints its path.
	Dir  string
	Keep bool
}

// DefaultConfig returns the demo command's defaults.
func DefaultConfig() Config {
	return Config{
		Data: DataConfig{
			Segments: 480, Tenants: 6, Shards: 4, Records: 24,
			Start: time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC), Span: time.Hour, Seed: 1,
		},
		Workers: 4, Concurrency: 2, PartitionWorkers: 1,
		FlushInterval: 20 * time.Millisecond, SampleInterval: 200 * time.Millisecond,
		DrainTimeout: 90 * time.Second, Progress: true,
	}
}

// Validate reports whether c is usable.
func (c Config) Validate() error {
	d := c.Data
	switch {
	case d.Segments < 1, d.Tenants < 1, d.Shards < 1, d.Records < 1:
		return fmt.Errorf("segments, tenants, shards and records must be positive")
	case d.Span < time.Minute || d.Span/time.Duration(d.Segments) < time.Microsecond:
		return fmt.Errorf("span %s too short for %d segments", d.Span, d.Segments)
	case c.Workers < 1 || c.Concurrency < 1:
		return fmt.Errorf("workers and concurrency must be positive")
	case c.PartitionWorkers < 0 || c.PartitionWorkers >= c.Workers:
		return fmt.Errorf("partitioned workers %d: want 0 to workers-1 (%d)", c.PartitionWorkers, c.Workers-1)
	case c.SampleInterval <= 0 || c.DrainTimeout <= 0 || c.FlushInterval < 0:
		return fmt.Errorf("intervals must be positive")
	}
	return nil
}

// Env is what a run needs from its host: the leader's endpoints and the
// object store, plus optional disruptions.
type Env struct {
	// Peers are the base URLs of the nodes' endpoints of the worker
	// protocol (package rpc): the workers poll and the ingest adds
	// blocks through them.
	Peers []string
	// Nodes returns the nodes' services, in process: the run reads the
	// leader's statistics and index through whichever of them leads, to
	// follow the compaction and verify its result.
	Nodes func() []*leader.Service
	// Store is the object store the segments are written to and the
	// workers merge in.
	Store blockmerge.Store
	// Disruptions run one after another, in the background, starting at
	// evenly spaced points of the ingest (the cluster example shuts the
	// leader down). The run waits for them before it declares the work
	// drained.
	Disruptions []func(ctx context.Context) error
	// Metrics, if set, gets a collector per worker.
	Metrics *prometheus.Registry
	// WorkerClient, if set, gives worker i its own client instead of one
	// over the peers' endpoints: in a serverless deployment each worker
	// schedules itself through its own replica of the log.
	WorkerClient func(i int) (worker.Client, error)
}

// Sample is the state at one moment of a run.
type Sample struct {
	// At is the time since the run started.
	At time.Duration
	// Queued is the number of blocks queued per level below the final one,
	// Claimed the blocks claimed by jobs.
	Queued  []int
	Claimed int
	// Jobs is the number of jobs in the scheduler.
	Jobs int
	// ReadAmp is the mean read amplification over tenants of the one-hour
	// query.
	ReadAmp float64
	// Tombstones is the number of tombstones not yet confirmed.
	Tombstones int
}

// LevelCount counts, per level, the live blocks, the objects holding
// them and their bytes.
type LevelCount struct {
	Level   uint32
	Blocks  int
	Objects int
	Bytes   int64
}

// Report is what a run did and found.
type Report struct {
	Config Config
	// Records and Checksum describe the ingested records; Segments and
	// SegmentBytes the level-0 segments written.
	Records      int
	Checksum     uint64
	Segments     int
	SegmentBytes int64
	// Before is the state after ingest as it would stay without
	// compaction (every segment live at level 0); After the final state.
	Before, After []LevelCount
	// QueryFrom and QueryTo are the one-hour query window; ReadAmp* the
	// mean and the largest number of objects it reads per tenant.
	QueryFrom, QueryTo                int64
	ReadAmpBefore, ReadAmpAfter       float64
	MaxReadAmpBefore, MaxReadAmpAfter int
	// Wall is the run's duration; Ingest the ingest phase's.
	Wall, Ingest time.Duration
	// Scheduler is the leader's view of the jobs at the end.
	Scheduler SchedulerCounts
	// Workers sums the workers' statistics.
	Workers worker.Stats
	// Redirects counts leader redirects the clients followed.
	Redirects uint64
	// Samples are the states sampled during the run.
	Samples []Sample
	// Verification is the final check.
	Verification Verification
}

// SchedulerCounts are the leader's job counters.
type SchedulerCounts struct {
	Added, Completed, Reassigned, Failed, Released, Excluded, Cancelled uint64
}

// Run runs the example's workload against env: workers, ingest, drain,
// verification. It writes progress to out and returns the report; a
// failed verification is an error wrapping ErrVerification (the report
// is returned with it).
func Run(ctx context.Context, env Env, cfg Config, out io.Writer) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	r := &runner{env: env, cfg: cfg, out: out, ledger: NewLedger(), start: time.Now()}
	rep, err := r.run(ctx)
	if rep != nil {
		rep.Wall = time.Since(r.start)
	}
	return rep, err
}

type runner struct {
	env    Env
	cfg    Config
	out    io.Writer
	ledger *Ledger
	start  time.Time
	client *rpc.Client

	mu      sync.Mutex
	samples []Sample
}

func (r *runner) newClient() (*rpc.Client, error) {
	return rpc.NewClient(r.env.Peers, rpc.WithRetryFor(5*time.Second), rpc.WithBackoff(20*time.Millisecond))
}

// readTimeout bounds one read of the leader's state.
const readTimeout = 5 * time.Second

// onLeader runs read on the service of the node that leads: it tries each
// node until one serves, for at most readTimeout.
func (r *runner) onLeader(ctx context.Context, read func(context.Context, *leader.Service) error) error {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	for {
		err := errors.New("no node")
		for _, svc := range r.env.Nodes() {
			if err = read(ctx, svc); err == nil {
				return nil
			}
		}
		t := time.NewTimer(20 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("reading the leader's state: %w", err)
		case <-t.C:
		}
	}
}

// stats returns the leader's statistics.
func (r *runner) stats(ctx context.Context) (st raftfsm.Stats, err error) {
	err = r.onLeader(ctx, func(ctx context.Context, svc *leader.Service) error {
		f, err := svc.Read(ctx)
		if err != nil {
			return err
		}
		st = f.Stats()
		return nil
	})
	return st, err
}

// view runs f on the leader's index.
func (r *runner) view(ctx context.Context, f func(*index.View)) error {
	return r.onLeader(ctx, func(ctx context.Context, svc *leader.Service) error {
		fsm, err := svc.Read(ctx)
		if err != nil {
			return err
		}
		v := fsm.Index()
		defer v.Close()
		f(v)
		return nil
	})
}

// readAmplification returns the number of objects the query of each
// tenant over [from, to] reads, in the order of tenants.
func (r *runner) readAmplification(ctx context.Context, tenants []string, from, to int64) ([]int, error) {
	out := make([]int, len(tenants))
	err := r.view(ctx, func(v *index.View) {
		for i, t := range tenants {
			out[i] = v.ReadAmplification(t, from, to)
		}
	})
	return out, err
}

// allBlocks returns the leader's live blocks in ID order.
func (r *runner) allBlocks(ctx context.Context) (blocks []ck.BlockMeta, err error) {
	err = r.view(ctx, func(v *index.View) { blocks = v.Blocks("", 0) })
	return blocks, err
}

// partitionable cuts a worker off from the leader when cut is set.
type partitionable struct {
	c   worker.Client
	cut atomic.Bool
}

var errPartitioned = errors.New("demo: worker cut off from the leader")

func (p *partitionable) Poll(ctx context.Context, req *ck.PollRequest) (*ck.PollResponse, error) {
	if p.cut.Load() {
		t := time.NewTimer(50 * time.Millisecond)
		defer t.Stop()
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		return nil, errPartitioned
	}
	return p.c.Poll(ctx, req)
}

type runningWorker struct {
	w      *worker.Worker
	link   *partitionable
	client *rpc.Client // nil with Env.WorkerClient
	done   chan error
}

func (r *runner) run(ctx context.Context) (*Report, error) {
	cfg := r.cfg
	var err error
	if r.client, err = r.newClient(); err != nil {
		return nil, err
	}
	rep := &Report{Config: cfg}
	end := cfg.Data.End().UnixNano()
	rep.QueryTo = end
	rep.QueryFrom = max(cfg.Data.Start.UnixNano(), end-int64(time.Hour))

	// Workers.
	wctx, stopWorkers := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWorkers()
	workers := make([]*runningWorker, cfg.Workers)
	for i := range workers {
		var c worker.Client
		var tc *rpc.Client
		if r.env.WorkerClient != nil {
			c, err = r.env.WorkerClient(i)
		} else {
			tc, err = r.newClient()
			c = tc
		}
		if err != nil {
			return nil, err
		}
		link := &partitionable{c: c}
		shutdown := 3 * time.Second
		if i >= cfg.Workers-cfg.PartitionWorkers {
			shutdown = 300 * time.Millisecond // its final poll cannot be answered
		}
		w, err := worker.New(link, r.env.Store, worker.Config{
			ID:              worker.NewID(fmt.Sprintf("worker-%d", i+1)),
			Concurrency:     cfg.Concurrency,
			PollInterval:    100 * time.Millisecond,
			RetryBackoff:    50 * time.Millisecond,
			ShutdownTimeout: shutdown,
			Logger:          cfg.Logger.With("worker", i+1),
		})
		if err != nil {
			return nil, err
		}
		if r.env.Metrics != nil {
			_ = r.env.Metrics.Register(prom.NewWorkerCollector(w.Stats, prom.WithConstLabels(prometheus.Labels{"worker": fmt.Sprint(i + 1)})))
		}
		rw := &runningWorker{w: w, link: link, client: tc, done: make(chan error, 1)}
		workers[i] = rw
		go func() { rw.done <- w.Run(wctx) }()
	}
	stopAll := func() []error {
		stopWorkers()
		var errs []error
		for i, rw := range workers {
			if err := <-rw.done; err != nil && !rw.link.cut.Load() {
				errs = append(errs, fmt.Errorf("worker %d: %w", i+1, err))
			}
		}
		return errs
	}
	stopped := false
	defer func() {
		if !stopped {
			stopAll()
		}
	}()

	// Sampler.
	sctx, stopSampler := context.WithCancel(ctx)
	samplerDone := make(chan struct{})
	go func() {
		defer close(samplerDone)
		r.sample(sctx, rep.QueryFrom, rep.QueryTo)
	}()
	defer func() { stopSampler(); <-samplerDone }()

	// Disruptions, in the background.
	triggers := make(chan func(context.Context) error, len(r.env.Disruptions))
	var disruptErr atomic.Value
	disruptDone := make(chan struct{})
	go func() {
		defer close(disruptDone)
		for d := range triggers {
			if err := d(ctx); err != nil {
				disruptErr.CompareAndSwap(nil, err)
			}
		}
	}()

	// Ingest.
	if err := r.ingest(ctx, workers, triggers); err != nil {
		close(triggers)
		<-disruptDone
		return rep, err
	}
	close(triggers)
	rep.Ingest = time.Since(r.start)

	// Drain.
	if err := r.drain(ctx, disruptDone); err != nil {
		return rep, err
	}
	if e, _ := disruptErr.Load().(error); e != nil {
		return rep, fmt.Errorf("disruption: %w", e)
	}
	stopSampler()
	<-samplerDone
	stopped = true
	if errs := stopAll(); len(errs) > 0 {
		return rep, errors.Join(errs...)
	}

	// Final state.
	st, err := r.stats(ctx)
	if err != nil {
		return rep, err
	}
	c := st.Scheduler.Counters
	rep.Scheduler = SchedulerCounts{Added: c.Added, Completed: c.Completed, Reassigned: c.Reassigned, Failed: c.Failed,
		Released: c.Released, Excluded: c.Excluded, Cancelled: c.Cancelled}
	for _, rw := range workers {
		rep.Workers = addStats(rep.Workers, rw.w.Stats())
		if rw.client != nil {
			rep.Redirects += rw.client.Redirects()
		}
	}
	rep.Redirects += r.client.Redirects()
	rep.Records, rep.Checksum = r.ledger.Records()
	segs, bytes := r.ledger.Segments()
	rep.Segments, rep.SegmentBytes = len(segs), bytes
	rep.Before = []LevelCount{{Level: 0, Blocks: len(segs), Objects: len(segs), Bytes: bytes}}
	tenants := cfg.Data.TenantList()
	var sum int
	for _, t := range tenants {
		n := r.ledger.ReadAmplification(t, rep.QueryFrom, rep.QueryTo)
		sum += n
		rep.MaxReadAmpBefore = max(rep.MaxReadAmpBefore, n)
	}
	rep.ReadAmpBefore = float64(sum) / float64(len(tenants))
	sum = 0
	after, err := r.readAmplification(ctx, tenants, rep.QueryFrom, rep.QueryTo)
	if err != nil {
		return rep, err
	}
	for _, n := range after {
		sum += n
		rep.MaxReadAmpAfter = max(rep.MaxReadAmpAfter, n)
	}
	rep.ReadAmpAfter = float64(sum) / float64(len(tenants))
	r.mu.Lock()
	rep.Samples = append([]Sample(nil), r.samples...)
	r.mu.Unlock()

	blocks, err := r.allBlocks(ctx)
	if err != nil {
		return rep, err
	}
	st, err = r.stats(ctx)
	if err != nil {
		return rep, err
	}
	rep.Verification, rep.After, err = Verify(ctx, r.env.Store, blocks, r.ledger, st)
	if err != nil {
		return rep, err
	}
	if !rep.Verification.OK() {
		return rep, fmt.Errorf("%w: %s", ErrVerification, rep.Verification.Failed())
	}
	return rep, nil
}

func addStats(a, b worker.Stats) worker.Stats {
	a.Polls += b.Polls
	a.PollRetries += b.PollRetries
	a.BadResponses += b.BadResponses
	a.Rejections += b.Rejections
	a.Renewals += b.Renewals
	a.JobsAssigned += b.JobsAssigned
	a.JobsStarted += b.JobsStarted
	a.JobsCompleted += b.JobsCompleted
	a.JobsFailed += b.JobsFailed
	a.JobsReleased += b.JobsReleased
	a.JobsLost += b.JobsLost
	a.TombstonesDeleted += b.TombstonesDeleted
	a.BlocksWritten += b.BlocksWritten
	a.BytesWritten += b.BytesWritten
	return a
}

func (r *runner) bar(max int, desc string, count bool) *progressbar.ProgressBar {
	if !r.cfg.Progress {
		return progressbar.DefaultSilent(int64(max))
	}
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(r.out),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionSetWidth(20),
		progressbar.OptionThrottle(80 * time.Millisecond),
		progressbar.OptionSetPredictTime(false),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(r.out) }),
		progressbar.OptionSetTheme(progressbar.Theme{Saucer: "=", SaucerHead: ">", SaucerPadding: " ", BarStart: "[", BarEnd: "]"}),
	}
	if count {
		opts = append(opts, progressbar.OptionShowCount())
	}
	return progressbar.NewOptions(max, opts...)
}

// ingest writes and adds the segments, one per shard per tick, cutting
// off the partitioned workers halfway and firing the disruptions at evenly
// spaced ticks.
func (r *runner) ingest(ctx context.Context, workers []*runningWorker, triggers chan<- func(context.Context) error) error {
	d := r.cfg.Data
	ticks := (d.Segments + d.Shards - 1) / d.Shards
	bar := r.bar(d.Segments, fmt.Sprintf("%-40s", "ingest: level-0 segments"), true)
	nd := len(r.env.Disruptions)
	fired := 0
	for tick := range ticks {
		if tick >= ticks/2 {
			// Cut the workers off while they hold a job (at the latest
			// on the last tick), so that a job is stranded.
			for i := range r.cfg.PartitionWorkers {
				rw := workers[len(workers)-1-i]
				if rw.w.Stats().JobsRunning > 0 || tick == ticks-1 {
					rw.link.cut.Store(true)
				}
			}
		}
		for fired < nd && tick >= (fired+1)*ticks/(nd+1) {
			triggers <- r.env.Disruptions[fired]
			fired++
		}
		var metas []ck.BlockMeta
		for s := range d.Shards {
			i := tick*d.Shards + s
			if i >= d.Segments {
				break
			}
			info, sets := d.Segment(i)
			r.ledger.Claim(sets)
			m, err := blockmerge.WriteBlock(ctx, r.env.Store, info, sets)
			if err != nil {
				return fmt.Errorf("writing segment %s: %w", info.ID, err)
			}
			metas = append(metas, m)
		}
		if err := r.addBlocks(ctx, metas); err != nil {
			return err
		}
		for _, m := range metas {
			r.ledger.AddSegment(m)
		}
		_ = bar.Add(len(metas))
		if r.cfg.FlushInterval > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(r.cfg.FlushInterval):
			}
		}
	}
	_ = bar.Finish()
	return nil
}

// addBlocks adds blocks until the leader has them: a retry after a lost
// answer finds them as duplicates, which is success.
func (r *runner) addBlocks(ctx context.Context, metas []ck.BlockMeta) error {
	for {
		res, err := r.client.AddBlocks(ctx, metas)
		if err == nil {
			for _, b := range res {
				if b.Err != nil && !errors.Is(b.Err, index.ErrDuplicate) {
					return fmt.Errorf("adding block %s: %w", b.ID, b.Err)
				}
			}
			return nil
		}
		if ctx.Err() != nil || errors.Is(err, ck.ErrRejected) {
			return fmt.Errorf("adding blocks: %w", err)
		}
		// No leader for now (an election): try again.
	}
}

// drain waits until nothing is left to do: no queued or claimed block,
// no job, no tombstone, and every disruption finished.
func (r *runner) drain(ctx context.Context, disruptions <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.DrainTimeout)
	defer cancel()
	bar := r.bar(100, fmt.Sprintf("%-40s", "compaction"), false)
	var last raftfsm.Stats
	for {
		st, err := r.stats(ctx)
		if err == nil {
			last = st
			pct := finalShare(st)
			if pct > bar.State().CurrentNum {
				_ = bar.Set64(pct)
			}
			bar.Describe(fmt.Sprintf("%-40s", queueLine(st)))
			select {
			case <-disruptions:
				if st.Drained() {
					_ = bar.Finish()
					return nil
				}
			default:
			}
		}
		select {
		case <-ctx.Done():
			if r.cfg.Progress {
				fmt.Fprintln(r.out)
			}
			return fmt.Errorf("compaction did not finish within %s (last state: %s, quarantined %d): %w",
				r.cfg.DrainTimeout, queueLine(last), last.Planner.Quarantined, ErrVerification)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// finalShare is the percentage of live bytes at the final level, with a
// last percent kept for the cleanup.
func finalShare(st raftfsm.Stats) int64 {
	var final, all int64
	for _, l := range st.Index.Levels {
		all += l.Bytes
		if int(l.Level) >= len(st.Planner.Levels) {
			final += l.Bytes
		}
	}
	if all == 0 {
		return 0
	}
	pct := int64(math.Floor(99 * float64(final) / float64(all)))
	if st.Drained() {
		pct = 100
	}
	return pct
}

func queueLine(st raftfsm.Stats) string {
	s := ""
	for _, l := range st.Planner.Levels {
		s += fmt.Sprintf("L%d:%d ", l.Level, l.Queued+l.Claimed)
	}
	return s + fmt.Sprintf("jobs:%d tombstones:%d", st.Scheduler.Jobs, st.Tombstones)
}

// sample records the queues and read amplification until ctx ends, and
// once more after it ended, so that the chart shows the final state.
func (r *runner) sample(ctx context.Context, from, to int64) {
	tick := time.NewTicker(r.cfg.SampleInterval)
	defer tick.Stop()
	for {
		r.sampleOnce(ctx, from, to)
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			r.sampleOnce(fctx, from, to)
			cancel()
			return
		case <-tick.C:
		}
	}
}

// sampleOnce records one sample, unless the leader cannot be read within
// a second (an election).
func (r *runner) sampleOnce(ctx context.Context, from, to int64) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	st, err := r.stats(ctx)
	if err != nil {
		return
	}
	s := Sample{At: time.Since(r.start), Claimed: st.Planner.Claimed, Jobs: st.Scheduler.Jobs, Tombstones: st.Tombstones}
	for _, l := range st.Planner.Levels {
		s.Queued = append(s.Queued, l.Queued)
	}
	tenants := r.cfg.Data.TenantList()
	amp, err := r.readAmplification(ctx, tenants, from, to)
	if err != nil {
		return
	}
	sum := 0
	for _, n := range amp {
		sum += n
	}
	s.ReadAmp = float64(sum) / float64(len(tenants))
	r.mu.Lock()
	r.samples = append(r.samples, s)
	r.mu.Unlock()
}
