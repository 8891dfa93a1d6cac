package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/planner"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/worker"
)

// A "directory" block format: each block is two objects under
// blocks/<id>/ — meta.json (the block's metadata) and data (its records,
// one per line). Not blockmerge's format.

func putDirBlock(ctx context.Context, s blockmerge.Store, meta ck.BlockMeta, records []string) error {
	m, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	dir := ck.ObjectKey(meta.ID) + "/"
	if err := s.Put(ctx, dir+"meta.json", bytes.NewReader(m)); err != nil {
		return err
	}
	return s.Put(ctx, dir+"data", strings.NewReader(strings.Join(records, "\n")+"\n"))
}

func readObject(ctx context.Context, s blockmerge.Store, key string) ([]byte, error) {
	r, err := s.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// dirRunner merges directory blocks: the output's data is the sources'
// records, its metadata spans theirs.
func dirRunner(ctx context.Context, store blockmerge.Store, plan *ck.JobPlan, token fencing.Token) ([]ck.BlockMeta, error) {
	out := ck.BlockMeta{ID: ck.OutputID(plan.Name, token, 0), Tenant: plan.Tenant, Shard: plan.Shard, Level: plan.Level + 1, MinTime: 1 << 62}
	ds := ck.DatasetMeta{Name: "ds", MinTime: 1 << 62}
	var data []byte
	for _, src := range plan.Sources {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		m, err := readObject(ctx, store, ck.ObjectKey(src)+"/meta.json")
		if err != nil {
			return nil, err
		}
		var meta ck.BlockMeta
		if err := json.Unmarshal(m, &meta); err != nil {
			return nil, fmt.Errorf("source %s: %w", src, err)
		}
		d, err := readObject(ctx, store, ck.ObjectKey(src)+"/data")
		if err != nil {
			return nil, err
		}
		data = append(data, d...)
		out.MinTime, out.MaxTime, out.Size = min(out.MinTime, meta.MinTime), max(out.MaxTime, meta.MaxTime), out.Size+meta.Size
		ds.MinTime, ds.MaxTime, ds.Size, ds.Records = min(ds.MinTime, meta.MinTime), max(ds.MaxTime, meta.MaxTime), ds.Size+meta.Size, ds.Records+meta.Datasets[0].Records
	}
	out.Datasets = []ck.DatasetMeta{ds}
	records := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	return []ck.BlockMeta{out}, putDirBlock(ctx, store, out, records)
}

// dirCluster is a state machine and leader service with one level of
// compaction (two blocks per job) whose clock moves 10 s per command, so
// that tombstones are released and carried without waiting.
func dirCluster() (*leader.Service, error) {
	cfg := raftfsm.DefaultConfig()
	cfg.Planner.Levels = []planner.LevelConfig{{MaxBlocks: 2, MaxAge: time.Minute, MaxSpan: 3 * time.Hour, AgingThreshold: 4 * time.Minute}}
	cfg.Planner.FinalLevel = 1
	cfg.Planner.TombstoneMaxLevel = 0
	cfg.Index.CleanupDelay = time.Second
	cfg.Scheduler.LeaseDuration = time.Hour
	fsm, err := raftfsm.New(cfg, raftfsm.WithCleanupAfter(time.Second))
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(10 * time.Second)
		return now
	}
	return leader.New(leadertest.NewMemLog(fsm), fsm, leader.WithClock(clock)), nil
}

// ingestDir writes n directory blocks of tenant acme and adds them.
func ingestDir(svc *leader.Service, store blockmerge.Store, n int) error {
	ctx := context.Background()
	var metas []ck.BlockMeta
	for i := range n {
		m := leadertest.Block(fmt.Sprintf("src-%d", i), "acme", 0, int64(i)*int64(time.Second))
		if err := putDirBlock(ctx, store, m, []string{fmt.Sprintf("record %d.a", i), fmt.Sprintf("record %d.b", i)}); err != nil {
			return err
		}
		metas = append(metas, m)
	}
	_, err := svc.AddBlocks(ctx, metas)
	return err
}

// drainedClient signals when the state machine has nothing left to do
// after a poll.
type drainedClient struct {
	svc     *leader.Service
	once    sync.Once
	drained chan struct{}
}

func (c *drainedClient) Poll(ctx context.Context, req *ck.PollRequest) (*ck.PollResponse, error) {
	resp, err := c.svc.Poll(ctx, req)
	if st := c.svc.FSM().Stats(); err == nil && st.Drained() {
		c.once.Do(func() { close(c.drained) })
	}
	return resp, err
}

// runUntilDrained runs a worker with the directory runner until the
// state machine is drained.
func runUntilDrained(t testing.TB, svc *leader.Service, store blockmerge.Store, runner worker.Runner) {
	c := &drainedClient{svc: svc, drained: make(chan struct{})}
	w, err := worker.New(c, store, worker.Config{Concurrency: 2, PollInterval: 5 * time.Millisecond, Runner: runner, Layout: blockmerge.PrefixLayout})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	<-c.drained
	cancel()
	require.NoError(t, <-done)
}

func listAll(t testing.TB, s blockmerge.Store) []string {
	var keys []string
	require.NoError(t, s.List(context.Background(), "", func(k string) error { keys = append(keys, k); return nil }))
	return keys
}

// TestRunnerOwnFormat: a host's runner whose blocks are several objects:
// the sources are compacted, every source object is deleted, nothing of
// an attempt is left behind, and every live block is whole.
func TestRunnerOwnFormat(t *testing.T) {
	store := blockmerge.NewMemStore()
	svc, err := dirCluster()
	require.NoError(t, err)
	require.NoError(t, ingestDir(svc, store, 4))
	runUntilDrained(t, svc, store, worker.RunnerFunc(dirRunner))

	view := svc.FSM().Index()
	live := view.Blocks("", 0)
	view.Close()
	require.Len(t, live, 2, "four sources, two per job")
	var want []string
	var records []string
	for _, b := range live {
		require.Equal(t, uint32(1), b.Level)
		want = append(want, ck.ObjectKey(b.ID)+"/data", ck.ObjectKey(b.ID)+"/meta.json")
		d, err := readObject(context.Background(), store, ck.ObjectKey(b.ID)+"/data")
		require.NoError(t, err)
		records = append(records, strings.Fields(strings.ReplaceAll(string(d), "record ", "record_"))...)
	}
	require.Equal(t, want, listAll(t, store), "exactly the live blocks' objects: no source, no orphan")
	require.ElementsMatch(t, []string{"record_0.a", "record_0.b", "record_1.a", "record_1.b", "record_2.a", "record_2.b", "record_3.a", "record_3.b"}, records)
}

// TestRunnerOutputsOutsideAttempt: outputs outside the attempt's prefix
// are refused: the job is reported failed with the reason, and nothing is
// committed.
func TestRunnerOutputsOutsideAttempt(t *testing.T) {
	store := blockmerge.NewMemStore()
	svc, err := dirCluster()
	require.NoError(t, err)
	require.NoError(t, ingestDir(svc, store, 2))
	failed := make(chan string, 1)
	bad := worker.RunnerFunc(func(ctx context.Context, s blockmerge.Store, plan *ck.JobPlan, token fencing.Token) ([]ck.BlockMeta, error) {
		outs, err := dirRunner(ctx, s, plan, token)
		if err != nil {
			return nil, err
		}
		outs[0].ID = "elsewhere-1"
		return outs, nil
	})
	c := worker.ClientFunc(func(ctx context.Context, req *ck.PollRequest) (*ck.PollResponse, error) {
		resp, err := svc.Poll(ctx, req)
		for _, u := range req.Updates {
			if u.Status == ck.ReportFailure && err == nil {
				select {
				case failed <- u.Job:
				default:
				}
			}
		}
		return resp, err
	})
	w, err := worker.New(c, store, worker.Config{Concurrency: 1, PollInterval: 5 * time.Millisecond, Runner: bad, Layout: blockmerge.PrefixLayout})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	job := <-failed
	cancel()
	require.NoError(t, <-done)
	js, _, ok := svc.FSM().Job(job)
	require.True(t, ok)
	require.Contains(t, js.LastFailure, "outside the attempt's prefix")
	view := svc.FSM().Index()
	defer view.Close()
	require.True(t, view.Live("src-0"), "nothing committed")
	require.False(t, view.Live("elsewhere-1"))
}
