package bucketlog_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/bucketlog"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/raftfsm"
)

const coordinatorEnv = "BUCKETLOG_TEST_COORDINATOR" // dir,id: run as a coordinator process

func processConfig() raftfsm.Config {
	cfg := raftfsm.DefaultConfig()
	for i := range cfg.Planner.Levels {
		cfg.Planner.Levels[i].MaxBlocks = 4
	}
	return cfg
}

// TestCoordinatorProcess is the body of a coordinator process (it does
// nothing in a normal run): ingest blocks, and a worker completing the
// jobs it is given, through its own coordinator, until killed. Every
// block it added is recorded in <dir>/ingested-<id> once AddBlocks
// returned.
func TestCoordinatorProcess(t *testing.T) {
	spec := os.Getenv(coordinatorEnv)
	if spec == "" {
		return // not a coordinator process
	}
	dir, id, _ := strings.Cut(spec, ",")
	ctx := context.Background()
	store, err := blockmerge.NewFileStore(filepath.Join(dir, "bucket"), blockmerge.WithoutSync())
	require.NoError(t, err)
	fsm, err := raftfsm.New(processConfig())
	require.NoError(t, err)
	l, err := bucketlog.Open(ctx, store, "compaction", fsm, id, bucketlog.WithCheckpointEvery(32))
	require.NoError(t, err)
	svc := leader.New(l, fsm, leader.WithRetries(1000, func(a int) time.Duration { return time.Duration(a%8+1) * time.Millisecond }))
	rec, err := os.OpenFile(filepath.Join(dir, "ingested-"+id), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	require.NoError(t, err)
	var held *ck.JobReply
	for n, seq := 0, uint64(1); ; n, seq = n+1, seq+1 {
		b := leadertest.Block(fmt.Sprintf("%s-%05d", id, n), "acme", uint32(n%3), int64(n)*1e9)
		_, err := svc.AddBlocks(ctx, []ck.BlockMeta{b})
		require.NoError(t, err)
		_, err = fmt.Fprintln(rec, b.ID)
		require.NoError(t, err)
		req := &ck.PollRequest{WorkerID: "w-" + id, Seq: seq, FreeSlots: 1}
		if held != nil {
			u := ck.StatusUpdate{Job: held.Job, Token: held.Token, Status: ck.ReportFailure, Reason: "sources gone"}
			if outs, ok := outputsOf(svc, held); ok {
				u = ck.StatusUpdate{Job: held.Job, Token: held.Token, Status: ck.ReportSuccess, Outputs: outs}
			}
			req.Updates = []ck.StatusUpdate{u}
		}
		resp, err := svc.Poll(ctx, req)
		require.NoError(t, err)
		held = nil
		for i := range resp.Jobs {
			if resp.Jobs[i].Outcome == ck.OutcomeAssigned && len(resp.Jobs[i].Plan.Sources) > 0 {
				held = &resp.Jobs[i]
			}
		}
	}
}

// outputsOf is a job's output: one block one level up spanning its
// sources, if they are live.
func outputsOf(svc *leader.Service, j *ck.JobReply) ([]ck.BlockMeta, bool) {
	view := svc.FSM().Index()
	defer view.Close()
	out := leadertest.Block(ck.OutputID(j.Job, j.Token, 0), j.Plan.Tenant, j.Plan.Shard, 1<<62)
	out.Level, out.MaxTime, out.Size = j.Plan.Level+1, 0, 0
	for _, src := range j.Plan.Sources {
		b, ok := view.Lookup(src)
		if !ok {
			return nil, false
		}
		out.MinTime, out.MaxTime, out.Size = min(out.MinTime, b.MinTime), max(out.MaxTime, b.MaxTime), out.Size+b.Size
	}
	out.Datasets[0].MinTime, out.Datasets[0].MaxTime, out.Datasets[0].Size = out.MinTime, out.MaxTime, out.Size
	return []ck.BlockMeta{out}, true
}

// hideCheckpoints makes a replica replay from entry 1.
type hideCheckpoints struct{ blockmerge.Store }

func (h hideCheckpoints) List(ctx context.Context, prefix string, fn func(string) error) error {
	if strings.Contains(prefix, "/checkpoint/") {
		return nil
	}
	return h.Store.List(ctx, prefix, fn)
}

func (h hideCheckpoints) ModTime(ctx context.Context, key string) (time.Time, error) {
	return h.Store.(blockmerge.Timestamper).ModTime(ctx, key)
}

func (h hideCheckpoints) PutIfAbsent(ctx context.Context, key string, r io.Reader) error {
	return h.Store.(blockmerge.ConditionalPutter).PutIfAbsent(ctx, key, r)
}

// Four coordinator processes on one directory, ingesting and compacting;
// ten times one is killed with SIGKILL at whatever point it reached and
// restarted. At the end: the chain has no gap or fork (a replica replays
// it from entry 1 and one restores a checkpoint, and they are
// byte-identical), every block a process recorded as added is live or was
// compacted, and no block was compacted twice.
func TestCoordinatorsSIGKILL(t *testing.T) {
	if testing.Short() {
		// -short runs skip the process tests; CI and the README's test
		// command run them.
		t.Skip("SKIPPED in -short: starts processes")
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(7, 7))
	start := func(i, gen int) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCoordinatorProcess$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s,c%d.%d", coordinatorEnv, dir, i, gen))
		out, err := os.Create(filepath.Join(dir, fmt.Sprintf("out-%d.%d", i, gen)))
		require.NoError(t, err)
		cmd.Stdout, cmd.Stderr = out, out
		require.NoError(t, cmd.Start())
		return cmd
	}
	procs := make([]*exec.Cmd, 4)
	for i := range procs {
		procs[i] = start(i, 0)
	}
	entries := func() int {
		des, _ := os.ReadDir(filepath.Join(dir, "bucket", "compaction", "log"))
		return len(des)
	}
	waitGrowth := func(by int) {
		from := entries()
		for deadline := time.Now().Add(60 * time.Second); entries() < from+by; {
			require.True(t, time.Now().Before(deadline), "the log stopped growing at %d entries", entries())
			time.Sleep(20 * time.Millisecond)
		}
	}
	for kill := 1; kill <= 10; kill++ {
		waitGrowth(15)
		i := rng.IntN(len(procs))
		require.NoError(t, procs[i].Process.Signal(syscall.SIGKILL))
		_ = procs[i].Wait()
		procs[i] = start(i, kill)
	}
	waitGrowth(15)
	for _, p := range procs {
		_ = p.Process.Signal(syscall.SIGKILL)
		_ = p.Wait()
	}

	ctx := context.Background()
	store, err := blockmerge.NewFileStore(filepath.Join(dir, "bucket"), blockmerge.WithoutSync())
	require.NoError(t, err)
	// Replay from entry 1, following every completion's sources.
	plans := map[string][]string{}
	compacted := map[string]int{}
	replay, err := raftfsm.New(processConfig())
	require.NoError(t, err)
	full, err := bucketlog.Open(ctx, hideCheckpoints{store}, "compaction", replay, "audit-1", bucketlog.WithCheckpointEvery(0),
		bucketlog.WithObserver(func(data []byte, a leader.Applied) {
			cmd, err := raftfsm.DecodeCommand(data)
			if err != nil || cmd.Poll == nil || a.Result == nil {
				return
			}
			for i, c := range cmd.Poll.Update.Changes {
				if c.Kind == ck.ChangeAdd && c.Plan != nil {
					plans[c.Job] = c.Plan.Sources
				}
				if r := a.Result.Changes[i]; r.Applied && c.Kind == ck.ChangeComplete && r.Replace != nil && r.Replace.Applied {
					for _, src := range plans[c.Job] {
						compacted[src]++
					}
				}
			}
		}))
	require.NoError(t, err)
	fromCheckpoint, err := raftfsm.New(processConfig())
	require.NoError(t, err)
	cp, err := bucketlog.Open(ctx, store, "compaction", fromCheckpoint, "audit-2")
	require.NoError(t, err)
	require.Equal(t, full.Applied(), cp.Applied())
	var a, b strings.Builder
	require.NoError(t, replay.Snapshot(&a))
	require.NoError(t, fromCheckpoint.Snapshot(&b))
	require.Equal(t, a.String(), b.String(), "a checkpoint-restored replica equals one that replayed everything")

	view := replay.Index()
	defer view.Close()
	recorded := 0
	files, _ := filepath.Glob(filepath.Join(dir, "ingested-*"))
	for _, f := range files {
		fh, err := os.Open(f)
		require.NoError(t, err)
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			id := sc.Text()
			recorded++
			require.True(t, view.Live(id) != (compacted[id] == 1), "block %s: live %t, compacted %d times", id, view.Live(id), compacted[id])
		}
		fh.Close()
	}
	for id, n := range compacted {
		require.Equal(t, 1, n, "block %s compacted %d times", id, n)
	}
	t.Logf("%d entries, %d blocks recorded, %d compacted, 10 SIGKILLs", full.Applied(), recorded, len(compacted))
	require.Positive(t, len(compacted))

}
