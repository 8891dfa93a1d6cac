// Package hrafttest is the model of blocks, workers and their jobs that
// the tests of the hashicorp/raft host (packages hraft and hraftnode) drive
// their clusters with, and the raft settings those tests share. It imports
// no store: hraft's own tests stay free of BoltDB.
package hrafttest

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/raftfsm/hraft"
)

// State is the state machine's configuration of the tests: four blocks
// make a batch at every level.
func State() raftfsm.Config {
	cfg := raftfsm.DefaultConfig()
	for i := range cfg.Planner.Levels {
		cfg.Planner.Levels[i].MaxBlocks = 4
	}
	return cfg
}

// RaftConfig is FastConfig with timeouts of at least timeout (the
// machine running the tests may be loaded: a starved leader steps down).
func RaftConfig(id string, timeout time.Duration) *raft.Config {
	c := hraft.FastConfig(id)
	c.HeartbeatTimeout = max(c.HeartbeatTimeout, timeout)
	c.ElectionTimeout = max(c.ElectionTimeout, timeout)
	c.LeaderLeaseTimeout = max(c.LeaderLeaseTimeout, timeout)
	c.SnapshotThreshold = 32 // exercise snapshots and their installation
	c.TrailingLogs = 4
	c.SnapshotInterval = 300 * time.Millisecond
	c.Logger = hclog.NewNullLogger()
	return c
}

// SnapshotBytes returns f's snapshot.
func SnapshotBytes(t testing.TB, f *raftfsm.FSM) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, f.Snapshot(&b))
	return b.Bytes()
}

// Workload is a model of the blocks, the workers and their jobs.
type Workload struct {
	t        testing.TB
	Meta     map[string]ck.BlockMeta // every block added or written
	Added    []string
	next     int
	Workers  []*Worker
	CompSrc  map[string]string // source -> completed job
	Complete map[string]ck.JobReply
	NoLease  int
}

// Worker is a modelled worker.
type Worker struct {
	ID   string
	Seq  uint64
	Held map[string]ck.JobReply // the jobs the worker holds
	Age  map[string]int         // how many requests each has been held
}

// NewWorkload returns a model with the given number of workers.
func NewWorkload(t testing.TB, workers int) *Workload {
	w := &Workload{t: t, Meta: map[string]ck.BlockMeta{}, CompSrc: map[string]string{}, Complete: map[string]ck.JobReply{}}
	for i := range workers {
		w.Workers = append(w.Workers, &Worker{ID: fmt.Sprintf("w%d", i), Held: map[string]ck.JobReply{}, Age: map[string]int{}})
	}
	return w
}

// T0 is the time of the first block, in nanoseconds.
const T0 = int64(1_700_000_000_000_000_000)

// NewBlocks returns n new level-0 blocks, recorded in the model.
func (w *Workload) NewBlocks(n int) []ck.BlockMeta {
	out := make([]ck.BlockMeta, n)
	for i := range out {
		id := fmt.Sprintf("b%05d", w.next)
		minT := T0 + int64(w.next)*int64(time.Second)
		b := ck.BlockMeta{
			ID: id, Tenant: "t1", Shard: uint32(w.next % 2), MinTime: minT, MaxTime: minT + int64(time.Second), Size: 100,
			Datasets: []ck.DatasetMeta{{Name: "ds", Size: 100, Records: 10, MinTime: minT, MaxTime: minT + int64(time.Second)}},
		}
		w.next++
		w.Meta[id] = b
		w.Added = append(w.Added, id)
		out[i] = b
	}
	return out
}

// Request builds the worker's next request: jobs held for two rounds are
// reported done, others renewed.
func (w *Workload) Request(k *Worker, free int32) *ck.PollRequest {
	k.Seq++
	req := &ck.PollRequest{WorkerID: k.ID, Seq: k.Seq, FreeSlots: free}
	for _, name := range SortedKeys(k.Held) {
		j := k.Held[name]
		k.Age[name]++
		u := ck.StatusUpdate{Job: name, Token: j.Token, Status: ck.ReportInProgress}
		if k.Age[name] >= 2 {
			u.Status = ck.ReportSuccess
			u.Outputs = w.Outputs(j)
		}
		req.Updates = append(req.Updates, u)
	}
	return req
}

// Outputs returns the output block a worker reports for job j.
func (w *Workload) Outputs(j ck.JobReply) []ck.BlockMeta {
	if j.Plan.CleanupOnly() {
		return nil
	}
	var minT, maxT int64 = 1<<63 - 1, 0
	var size int64
	for _, id := range j.Plan.Sources {
		b, ok := w.Meta[id]
		require.True(w.t, ok, "unknown source %s", id)
		minT, maxT, size = min(minT, b.MinTime), max(maxT, b.MaxTime), size+b.Size
	}
	return []ck.BlockMeta{{
		ID: ck.OutputID(j.Plan.Name, j.Token, 0), Tenant: j.Plan.Tenant, Shard: j.Plan.Shard, Level: j.Plan.Level + 1,
		MinTime: minT, MaxTime: maxT, Size: size,
		Datasets: []ck.DatasetMeta{{Name: "ds", Size: size, Records: 10, MinTime: minT, MaxTime: maxT}},
	}}
}

// Handle applies the response to the model.
func (w *Workload) Handle(k *Worker, resp *ck.PollResponse) {
	for _, r := range resp.Jobs {
		switch r.Outcome {
		case ck.OutcomeAssigned:
			require.NotNil(w.t, r.Plan)
			k.Held[r.Job] = r
			k.Age[r.Job] = 0
		case ck.OutcomeRenewed:
		case ck.OutcomeCompleted:
			j, ok := k.Held[r.Job]
			require.True(w.t, ok, "completed job %s not held", r.Job)
			if _, seen := w.Complete[r.Job]; !seen {
				w.Complete[r.Job] = j
				for _, src := range j.Plan.Sources {
					prev, dup := w.CompSrc[src]
					require.False(w.t, dup, "block %s compacted by %s and %s", src, prev, r.Job)
					w.CompSrc[src] = r.Job
				}
				for _, out := range w.Outputs(j) {
					w.Meta[out.ID] = out
				}
			}
			delete(k.Held, r.Job)
			delete(k.Age, r.Job)
		case ck.OutcomeNoLease:
			w.NoLease++
			delete(k.Held, r.Job)
			delete(k.Age, r.Job)
		default:
			w.t.Fatalf("unexpected outcome %s for %s", r.Outcome, r.Job)
		}
	}
}

// SortedKeys returns the keys of m, sorted.
func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}
