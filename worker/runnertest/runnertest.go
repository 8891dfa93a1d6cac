package runnertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/compactkittest"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/internal/ident"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/planner"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/worker"
)

// Format is the host's block format under test.
type Format struct {
	// Runner is the runner under test.
	Runner worker.Runner
	// Layout is where a block's objects are (the worker's
	// [worker.Config.Layout] for this format).
	Layout blockmerge.Layout
	// Write writes a source block holding the records, in one dataset,
	// and returns its metadata. block carries the ID, tenant, shard, level
	// and a time range that holds the records; Write may complete or
	// change the rest (sizes, datasets).
	Write func(ctx context.Context, store blockmerge.Store, block ck.BlockMeta, records []Record) (ck.BlockMeta, error)
	// Read reads back every record of a block, in any order.
	Read func(ctx context.Context, store blockmerge.Store, block ck.BlockMeta) ([]Record, error)
	// CancelBound is how soon Run must return after its context is
	// cancelled (default 5 s).
	CancelBound time.Duration
}

// Record is one record of a block: a key, distinct among the sources of a
// job, and a time.
type Record struct {
	Key  string
	Time int64
}

func (f *Format) bound() time.Duration {
	if f.CancelBound <= 0 {
		return 5 * time.Second
	}
	return f.CancelBound
}

// check is one property: nil when the format keeps it on the job.
type check func(ctx context.Context, f *Format, j *job) error

var (
	dataChecks = []struct {
		name string
		fn   check
	}{
		{"Placement", checkPlacement},
		{"Metadata", withOutputs(checkMetadata)},
		{"Records", withOutputs(sameRecords)},
		{"Accepted", withOutputs(checkAccepted)},
		{"Failure", checkFailure},
		{"Retry", checkRetry},
	}
	timingChecks = []struct {
		name string
		fn   check
	}{
		{"Cancel", checkCancel},
		{"NoLateWrite", checkNoLateWrite},
	}
)

// Run runs the suite on the format; see the package documentation for
// the properties.
func Run(t *testing.T, f Format) {
	t.Helper()
	if f.Runner == nil || f.Write == nil || f.Read == nil {
		t.Fatal("runnertest: Format needs a Runner, Write and Read")
	}
	for _, c := range dataChecks {
		t.Run(c.name, func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				if err := runCheck(t.Context(), &f, c.fn, jobs().Draw(rt, "job")); err != nil {
					rt.Fatal(err)
				}
			})
		})
	}
	for _, c := range timingChecks {
		t.Run(c.name, func(t *testing.T) {
			for seed := range 3 {
				if err := runCheck(t.Context(), &f, c.fn, jobs().Example(seed)); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// runCheck sets up the job on a new store and state machine, then checks.
func runCheck(ctx context.Context, f *Format, c check, s spec) error {
	j, err := setup(ctx, f, s)
	if err != nil {
		return err
	}
	return c(ctx, f, j)
}

// spec is a job's sources: their metadata and records.
type spec struct {
	blocks  []ck.BlockMeta
	records [][]Record
}

// jobs generates the sources of one job: two to four level-0 blocks of one
// tenant and shard, single-segment IDs, one to five records each.
func jobs() *rapid.Generator[spec] {
	return rapid.Custom(func(t *rapid.T) spec {
		space := compactkittest.Space{
			Tenants: []string{compactkittest.Name().Draw(t, "tenant")},
			Shards:  []uint32{rapid.Uint32Range(0, 3).Draw(t, "shard")},
		}
		bs := compactkittest.Blocks(space, 2, 4).Draw(t, "sources")
		var s spec
		seen := map[string]bool{}
		for i, b := range bs {
			b.ID = strings.ReplaceAll(b.ID, "/", "-")
			if seen[b.ID] {
				b.ID += fmt.Sprintf("-%d", i)
			}
			seen[b.ID] = true
			n := rapid.IntRange(1, 5).Draw(t, "records")
			recs := make([]Record, n)
			for k := range recs {
				recs[k] = Record{Key: fmt.Sprintf("%s.%d.%d", compactkittest.Name().Draw(t, "key"), i, k), Time: rapid.Int64Range(b.MinTime, b.MaxTime).Draw(t, "time")}
			}
			b.Datasets = []ck.DatasetMeta{{Name: "records", Records: int64(n), Size: b.Size, MinTime: b.MinTime, MaxTime: b.MaxTime}}
			s.blocks = append(s.blocks, b)
			s.records = append(s.records, recs)
		}
		return s
	})
}

// job is a job assigned by a state machine, its sources written in the
// host's format.
type job struct {
	store   blockmerge.Store
	svc     *leader.Service
	sources []ck.BlockMeta
	records []Record // every source's
	plan    *ck.JobPlan
	token   fencing.Token
	guard   *fencing.Guard
	seq     uint64
}

const worker1 = "runnertest-worker"

func setup(ctx context.Context, f *Format, s spec) (*job, error) {
	j := &job{store: blockmerge.NewMemStore(), guard: &fencing.Guard{}}
	for i, b := range s.blocks {
		m, err := f.Write(ctx, j.store, b, s.records[i])
		if err != nil {
			return nil, fmt.Errorf("setup: write source %s: %w", b.ID, err)
		}
		j.sources = append(j.sources, m)
		j.records = append(j.records, s.records[i]...)
	}
	cfg := raftfsm.DefaultConfig()
	cfg.Planner.Levels = []planner.LevelConfig{{MaxBlocks: len(s.blocks), MaxAge: time.Minute, MaxSpan: 3 * time.Hour, AgingThreshold: 4 * time.Minute}}
	cfg.Planner.FinalLevel = 1
	cfg.Scheduler.LeaseDuration = time.Hour
	fsm, err := raftfsm.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("setup: %w", err)
	}
	j.svc = leader.New(leadertest.NewMemLog(fsm), fsm)
	res, err := j.svc.AddBlocks(ctx, j.sources)
	if err != nil {
		return nil, fmt.Errorf("setup: add sources: %w", err)
	}
	for _, r := range res {
		if r.Err != nil {
			return nil, fmt.Errorf("setup: the state machine refused source %s that Write returned: %w", r.ID, r.Err)
		}
	}
	if err := j.assign(ctx, nil); err != nil {
		return nil, err
	}
	return j, nil
}

// assign polls with the updates and one free slot, and takes the job the
// state machine assigns.
func (j *job) assign(ctx context.Context, updates []ck.StatusUpdate) error {
	resp, err := j.poll(ctx, updates, 1)
	if err != nil {
		return err
	}
	for _, r := range resp.Jobs {
		if r.Outcome == ck.OutcomeAssigned {
			j.plan, j.token = r.Plan, r.Token
			return nil
		}
	}
	return fmt.Errorf("setup: no job assigned for sources %v", ids(j.sources))
}

func (j *job) poll(ctx context.Context, updates []ck.StatusUpdate, free int32) (*ck.PollResponse, error) {
	j.seq++
	resp, err := j.svc.Poll(ctx, &ck.PollRequest{WorkerID: worker1, Seq: j.seq, Updates: updates, FreeSlots: free})
	if err != nil {
		return nil, fmt.Errorf("poll: %w", err)
	}
	return resp, nil
}

// run runs the attempt as the worker does: through a fenced store.
func (j *job) run(ctx context.Context, f *Format, store blockmerge.Store) ([]ck.BlockMeta, error) {
	fenced := blockmerge.NewFencedStore(store, j.guard, j.plan.Name, j.token)
	return f.Runner.Run(ctx, fenced, j.plan, j.token)
}

// succeed runs the attempt and requires outputs.
func (j *job) succeed(ctx context.Context, f *Format) ([]ck.BlockMeta, error) {
	outs, err := j.run(ctx, f, j.store)
	if err != nil {
		return nil, fmt.Errorf("run job %s (token %d): %w", j.plan.Name, j.token, err)
	}
	if len(outs) == 0 {
		return nil, fmt.Errorf("job %s with %d sources: no outputs", j.plan.Name, len(j.plan.Sources))
	}
	return outs, nil
}

func checkPlacement(ctx context.Context, f *Format, j *job) error {
	before, err := keys(ctx, j.store)
	if err != nil {
		return err
	}
	outs, err := j.succeed(ctx, f)
	if err != nil {
		return err
	}
	prefix := ck.AttemptPrefix(j.plan.Name, j.token)
	for _, o := range outs {
		if !strings.HasPrefix(ck.ObjectKey(o.ID), prefix) {
			return fmt.Errorf("output %s is not named under the attempt's prefix %s (compactkit.OutputID(%q, %d, n))", o.ID, prefix, j.plan.Name, j.token)
		}
		if err := present(ctx, f.Layout, j.store, o.ID); err != nil {
			return err
		}
	}
	after, err := keys(ctx, j.store)
	if err != nil {
		return err
	}
	for _, k := range after {
		if !slices.Contains(before, k) && !strings.HasPrefix(k, prefix) {
			return fmt.Errorf("the attempt wrote %s, outside its prefix %s", k, prefix)
		}
	}
	return nil
}

// present reports an error unless the block's objects are where the
// layout says.
func present(ctx context.Context, l blockmerge.Layout, s blockmerge.Store, id string) error {
	key := ck.ObjectKey(id)
	if l == blockmerge.PrefixLayout {
		n := 0
		if err := s.List(ctx, key+"/", func(string) error { n++; return nil }); err != nil {
			return fmt.Errorf("list output %s: %w", id, err)
		}
		if n == 0 {
			return fmt.Errorf("output %s: no object under %s/ (PrefixLayout)", id, key)
		}
		return nil
	}
	ok, err := s.Exists(ctx, key)
	if err != nil {
		return fmt.Errorf("output %s: %w", id, err)
	}
	if !ok {
		return fmt.Errorf("output %s: no object %s (ObjectLayout)", id, key)
	}
	return nil
}

// withOutputs is the check that runs the job to its success and checks
// its outputs with fn.
func withOutputs(fn func(ctx context.Context, f *Format, j *job, outs []ck.BlockMeta) error) check {
	return func(ctx context.Context, f *Format, j *job) error {
		outs, err := j.succeed(ctx, f)
		if err != nil {
			return err
		}
		return fn(ctx, f, j, outs)
	}
}

func checkMetadata(ctx context.Context, f *Format, j *job, outs []ck.BlockMeta) error {
	for _, o := range outs {
		if err := o.Validate(); err != nil {
			return fmt.Errorf("output metadata: %w", err)
		}
		recs, err := f.Read(ctx, j.store, o)
		if err != nil {
			return fmt.Errorf("read output %s: %w", o.ID, err)
		}
		if int64(len(recs)) != o.Records() {
			return fmt.Errorf("output %s: its metadata counts %d records, %d were written", o.ID, o.Records(), len(recs))
		}
		for _, r := range recs {
			if r.Time < o.MinTime || r.Time > o.MaxTime {
				return fmt.Errorf("output %s: record %s at %d outside the metadata's range [%d, %d]", o.ID, r.Key, r.Time, o.MinTime, o.MaxTime)
			}
		}
	}
	return nil
}

// sameRecords reports an error unless the outputs hold exactly the
// sources' records.
func sameRecords(ctx context.Context, f *Format, j *job, outs []ck.BlockMeta) error {
	var got []Record
	for _, o := range outs {
		recs, err := f.Read(ctx, j.store, o)
		if err != nil {
			return fmt.Errorf("read output %s: %w", o.ID, err)
		}
		got = append(got, recs...)
	}
	count := map[Record]int{}
	for _, r := range j.records {
		count[r]++
	}
	for _, r := range got {
		count[r]--
	}
	var missing, extra []Record
	for _, r := range j.records {
		if count[r] > 0 {
			missing = append(missing, r)
			count[r] = 0
		}
	}
	for _, r := range got {
		if count[r] < 0 {
			extra = append(extra, r)
			count[r] = 0
		}
	}
	if len(missing) > 0 || len(extra) > 0 {
		return fmt.Errorf("the outputs lack records %v of the sources' and hold records %v beyond them", missing, extra)
	}
	return nil
}

func checkAccepted(ctx context.Context, f *Format, j *job, outs []ck.BlockMeta) error {
	resp, err := j.poll(ctx, []ck.StatusUpdate{{Job: j.plan.Name, Token: j.token, Status: ck.ReportSuccess, Outputs: outs}}, 0)
	if err != nil {
		return fmt.Errorf("the state machine refused the outputs: %w", err)
	}
	if len(resp.Jobs) != 1 || resp.Jobs[0].Outcome != ck.OutcomeCompleted {
		return fmt.Errorf("success report answered %v, not completed", resp.Jobs)
	}
	view := j.svc.FSM().Index()
	defer view.Close()
	for _, o := range outs {
		if !view.Live(o.ID) {
			return fmt.Errorf("output %s not live after the commit", o.ID)
		}
	}
	for _, s := range j.plan.Sources {
		if view.Live(s) {
			return fmt.Errorf("source %s still live after the commit", s)
		}
	}
	return nil
}

func checkFailure(ctx context.Context, f *Format, j *job) error {
	lost := j.plan.Sources[len(j.plan.Sources)-1]
	if _, err := f.Layout.DeleteTombstones(ctx, j.store, []ck.Tombstone{{Kind: ck.TombstoneBlock, Target: lost}}); err != nil {
		return fmt.Errorf("setup: delete source %s: %w", lost, err)
	}
	outs, err := j.run(ctx, f, j.store)
	if err == nil {
		return fmt.Errorf("source %s is gone, yet Run returned %d outputs and no error", lost, len(outs))
	}
	reason := ident.ClipReason(err.Error())
	if strings.TrimSpace(reason) == "" {
		return errors.New("the run failed with an empty reason")
	}
	resp, perr := j.poll(ctx, []ck.StatusUpdate{{Job: j.plan.Name, Token: j.token, Status: ck.ReportFailure, Reason: reason}}, 0)
	if perr != nil {
		return perr
	}
	if len(resp.Jobs) != 1 || resp.Jobs[0].Outcome != ck.OutcomeAccepted {
		return fmt.Errorf("failure report answered %v, not accepted", resp.Jobs)
	}
	js, _, ok := j.svc.FSM().Job(j.plan.Name)
	if !ok || js.LastFailure != reason {
		return fmt.Errorf("the state machine recorded failure %q, the run's reason is %q", js.LastFailure, reason)
	}
	return nil
}

func checkRetry(ctx context.Context, f *Format, j *job) error {
	first, err := j.succeed(ctx, f)
	if err != nil {
		return err
	}
	name, token1 := j.plan.Name, j.token
	if _, err := j.poll(ctx, []ck.StatusUpdate{{Job: name, Token: token1, Status: ck.ReportReleased}}, 0); err != nil {
		return err
	}
	if err := j.assign(ctx, nil); err != nil {
		return err
	}
	if j.plan.Name != name || j.token <= token1 {
		return fmt.Errorf("setup: the retry is job %s with token %d, after %s with %d", j.plan.Name, j.token, name, token1)
	}
	second, err := j.succeed(ctx, f)
	if err != nil {
		return err
	}
	for _, o := range second {
		if slices.ContainsFunc(first, func(b ck.BlockMeta) bool { return b.ID == o.ID }) {
			return fmt.Errorf("output %s of the retry (token %d) has the ID of an output of the abandoned attempt (token %d)", o.ID, j.token, token1)
		}
	}
	// The abandoned attempt is deleted whole, as its orphan's tombstone says.
	if err := j.store.DeleteByPrefix(ctx, ck.AttemptPrefix(name, token1)); err != nil {
		return fmt.Errorf("delete the abandoned attempt: %w", err)
	}
	for _, o := range second {
		if err := present(ctx, f.Layout, j.store, o.ID); err != nil {
			return fmt.Errorf("after the abandoned attempt was deleted: %w", err)
		}
	}
	if err := sameRecords(ctx, f, j, second); err != nil {
		return fmt.Errorf("after the abandoned attempt was deleted: %w", err)
	}
	return nil
}

func checkCancel(ctx context.Context, f *Format, j *job) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := &watched{Store: j.store, first: cancel, cancelled: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		_, err := j.run(ctx, f, w)
		done <- err
	}()
	select {
	case err := <-done:
		if w.cancelledAt().IsZero() {
			return nil // the run did not touch the store: nothing to cancel
		}
		if err == nil {
			return errors.New("Run returned no error after its context was cancelled")
		}
		return nil
	case <-w.cancelled:
	}
	select {
	case err := <-done:
		if err == nil {
			return errors.New("Run returned no error after its context was cancelled")
		}
		return nil
	case <-time.After(f.bound()):
		return fmt.Errorf("Run had not returned %v after its context was cancelled", f.bound())
	}
}

func checkNoLateWrite(ctx context.Context, f *Format, j *job) error {
	for _, cancelled := range []bool{false, true} {
		cctx, cancel := context.WithCancel(ctx)
		w := &watched{Store: j.store}
		if cancelled {
			w.first = cancel
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = j.run(cctx, f, w) // only the writes matter here
		}()
		select {
		case <-done:
		case <-time.After(f.bound() + time.Minute):
			cancel()
			return errors.New("Run did not return")
		}
		w.returned()
		time.Sleep(max(100*time.Millisecond, f.bound()/20))
		cancel()
		if late := w.lateWrite(); late != "" {
			return fmt.Errorf("%s began after Run returned (cancelled: %t)", late, cancelled)
		}
	}
	return nil
}

func keys(ctx context.Context, s blockmerge.Store) ([]string, error) {
	var out []string
	err := s.List(ctx, "", func(k string) error { out = append(out, k); return nil })
	if err != nil {
		return nil, fmt.Errorf("list the store: %w", err)
	}
	return out, nil
}

func ids(bs []ck.BlockMeta) []string {
	out := make([]string, len(bs))
	for i := range bs {
		out[i] = bs[i].ID
	}
	return out
}
