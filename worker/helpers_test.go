package worker_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/worker"
)

func cloneRequest(r *ck.PollRequest) *ck.PollRequest {
	c := *r
	c.Updates = make([]ck.StatusUpdate, len(r.Updates))
	for i, u := range r.Updates {
		c.Updates[i] = u
		if u.Outputs != nil {
			c.Updates[i].Outputs = make([]ck.BlockMeta, len(u.Outputs))
			for k := range u.Outputs {
				c.Updates[i].Outputs[k] = u.Outputs[k].Clone()
			}
		}
	}
	return &c
}

func cloneResponse(r *ck.PollResponse) *ck.PollResponse {
	c := &ck.PollResponse{Jobs: slices.Clone(r.Jobs)}
	for i := range c.Jobs {
		if p := c.Jobs[i].Plan; p != nil {
			pc := p.Clone()
			c.Jobs[i].Plan = &pc
		}
	}
	return c
}

// --- blocks ---

// writeSource writes a level-0 block of tenant "acme" (see writeBlock).
func writeSource(t *testing.T, store blockmerge.Store, id string, keys ...string) ck.BlockMeta {
	t.Helper()
	return writeBlock(t, store, "acme", id, keys...)
}

// writeBlock writes a level-0 block of the tenant, shard 1, with one
// dataset holding one record per key (timestamp 1, value "v-"+key, so
// that the same key in two sources is one record).
func writeBlock(t *testing.T, store blockmerge.Store, tenant, id string, keys ...string) ck.BlockMeta {
	t.Helper()
	recs := make([]blockmerge.Record, len(keys))
	for i, k := range keys {
		recs[i] = blockmerge.Record{Key: []byte(k), Timestamp: 1, Value: []byte("v-" + k)}
	}
	meta, err := blockmerge.WriteBlock(context.Background(), store, blockmerge.BlockInfo{ID: id, Tenant: tenant, Shard: 1},
		[]blockmerge.Dataset{{Tenant: tenant, Name: "api", Records: recs}})
	require.NoError(t, err)
	return meta
}

// sourceID is the ID of the i-th source of the job labelled job: the
// leader's records find the label from it.
func sourceID(job string, i int) string { return fmt.Sprintf("%s~src%d", job, i) }

// jobOf returns the label of the job a block belongs to: what precedes
// "~" in its ID (the whole ID if none).
func jobOf(blockID string) string {
	name, _, _ := strings.Cut(blockID, "~")
	return name
}

// mergeSources writes n sources for the job labelled job, in a tenant of
// the same name (two records each, one shared with the next source), and
// returns them. Given to the state machine, the planner makes them one
// job (see newLeader).
func mergeSources(t *testing.T, store blockmerge.Store, job string, n int) []ck.BlockMeta {
	t.Helper()
	var out []ck.BlockMeta
	for i := range n {
		out = append(out, writeBlock(t, store, job, sourceID(job, i), fmt.Sprintf("k%02d", i), fmt.Sprintf("k%02d", i+1)))
	}
	return out
}

// missingSource is a source of the job labelled job that the state
// machine knows but the store does not hold: its merge fails.
func missingSource(t *testing.T, job string, i int) ck.BlockMeta {
	t.Helper()
	return writeBlock(t, blockmerge.NewMemStore(), job, sourceID(job, i), "missing")
}

// --- a controllable dataset merger ---

// merges controls the merges of the jobs: a job's merge can be held until
// released, or take some (fake) time; it records the merges started and
// how they were cancelled.
type merges struct {
	mu        sync.Mutex
	hold      map[string]chan struct{}
	take      map[string]time.Duration
	stubborn  map[string]bool // the hold ignores cancellation
	started   map[string]int
	cancelled map[string]error
}

func newMerges() *merges {
	return &merges{
		hold:      make(map[string]chan struct{}),
		take:      make(map[string]time.Duration),
		stubborn:  make(map[string]bool),
		started:   make(map[string]int),
		cancelled: make(map[string]error),
	}
}

// holdJob makes job's merge wait until release(job) or its cancellation.
func (m *merges) holdJob(job string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.hold[job] = make(chan struct{})
}

func (m *merges) release(job string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	close(m.hold[job])
}

func (m *merges) startedCount(job string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.started[job]
}

func (m *merges) cancelCause(job string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cancelled[job]
}

func (m *merges) option() blockmerge.Option {
	return blockmerge.WithDatasetMerger(blockmerge.DatasetMerger(
		func(ctx context.Context, out *blockmerge.DatasetWriter, inputs []*blockmerge.DatasetIterator) error {
			job := inputs[0].Meta().Tenant // mergeSources names the tenant after the job
			m.mu.Lock()
			m.started[job]++
			gate := m.hold[job]
			take := m.take[job]
			stubborn := m.stubborn[job]
			m.mu.Unlock()
			if stubborn {
				<-gate
			}
			var timer <-chan time.Time
			if take > 0 {
				timer = time.After(take)
			}
			if gate != nil || timer != nil {
				select {
				case <-gate:
				case <-timer:
				case <-ctx.Done():
					m.mu.Lock()
					m.cancelled[job] = context.Cause(ctx)
					m.mu.Unlock()
					return context.Cause(ctx)
				}
			}
			return blockmerge.MergeRecords(ctx, out, inputs)
		}))
}

// --- running a worker in a bubble ---

type running struct {
	w    *worker.Worker
	stop func() error
}

// run starts a worker with cfg against l (see start), with a new memory
// store holding two sources of each job (see mergeSources), given to l
// one job at a time.
func run(t *testing.T, l *fsmLeader, cfg worker.Config, jobs ...string) running {
	t.Helper()
	store := blockmerge.NewMemStore()
	for _, job := range jobs {
		l.add(t, mergeSources(t, store, job, 2)...)
	}
	return start(t, l, store, cfg)
}

// runHeld is run with the merger of the merges it returns, which holds
// each job's merge until released.
func runHeld(t *testing.T, l *fsmLeader, cfg worker.Config, jobs ...string) (running, *merges) {
	t.Helper()
	m := newMerges()
	for _, job := range jobs {
		m.holdJob(job)
	}
	return runWith(t, l, m, cfg, jobs...), m
}

// runWith is run with m's merger.
func runWith(t *testing.T, l *fsmLeader, m *merges, cfg worker.Config, jobs ...string) running {
	t.Helper()
	cfg.MergeOptions = append(cfg.MergeOptions, m.option())
	return run(t, l, cfg, jobs...)
}

// start runs a worker against l until stop is called. Call it inside a
// synctest bubble.
func start(t *testing.T, l worker.Client, store blockmerge.Store, cfg worker.Config, before ...func(*worker.Worker)) running {
	t.Helper()
	if cfg.ID == "" {
		cfg.ID = "w1"
	}
	w, err := worker.New(l, store, cfg)
	require.NoError(t, err)
	for _, f := range before {
		f(w)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- w.Run(ctx) }()
	var once sync.Once
	var runErr error
	stop := func() error {
		once.Do(func() {
			cancel()
			runErr = <-errc
		})
		return runErr
	}
	t.Cleanup(func() { _ = stop() })
	return running{w: w, stop: stop}
}

// stopChecked stops the worker, requires a clean stop, checks what l
// recorded (see fsmLeader.check) and returns the worker's final stats.
func (r running) stopChecked(t *testing.T, l *fsmLeader) worker.Stats {
	t.Helper()
	require.NoError(t, r.stop())
	l.check(t)
	return r.w.Stats()
}

// ended counts the jobs a worker ended, by outcome.
type ended struct{ completed, failed, released, lost uint64 }

func endedOf(s worker.Stats) ended {
	return ended{completed: s.JobsCompleted, failed: s.JobsFailed, released: s.JobsReleased, lost: s.JobsLost}
}

// eventually lets fake time pass, in steps, until cond holds (at most ten
// minutes of fake time).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Minute)
	for {
		synctest.Wait()
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still not %s after 10 minutes of fake time", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newTextLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
