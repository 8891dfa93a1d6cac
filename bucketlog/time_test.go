package bucketlog_test

import (
	"context"
	"fmt"
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

// clocks are the store's clock and a proposer's, set by the test.
type clocks struct{ store, proposer time.Time }

func timedLog(t *testing.T, c *clocks, store blockmerge.Store, id string, opts ...bucketlog.Option) (*bucketlog.Log, *raftfsm.FSM) {
	t.Helper()
	cfg := raftfsm.DefaultConfig() // clock step 1h, lease 15s
	cfg.Planner.Levels[0].MaxBlocks = 4
	fsm, err := raftfsm.New(cfg)
	require.NoError(t, err)
	opts = append([]bucketlog.Option{bucketlog.WithClock(func() time.Time { return c.proposer })}, opts...)
	l, err := bucketlog.Open(context.Background(), store, "log", fsm, id, opts...)
	require.NoError(t, err)
	return l, fsm
}

func addOne(t *testing.T, l *bucketlog.Log, fsm *raftfsm.FSM, id string) leader.Applied {
	t.Helper()
	b := leadertest.Block(id, "acme", 0, 1e9)
	cmd, err := fsm.Encode(&raftfsm.Command{AddBlocks: &raftfsm.AddBlocks{Blocks: []ck.BlockMeta{b}}}, time.Now().UnixNano())
	require.NoError(t, err)
	a, err := l.Propose(context.Background(), cmd, 0)
	require.NoError(t, err)
	require.NoError(t, a.Err)
	return a
}

// An entry's time is the store's, while the proposer's clock is within
// the clock step of it; a proposer further off moves the log's time by
// its error less the step, never back, at most one step per entry.
func TestEntryTimeFromStore(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)
	c := &clocks{store: t0, proposer: t0}
	store := blockmerge.NewMemStore(blockmerge.WithMemClock(func() time.Time { return c.store }))
	l, fsm := timedLog(t, c, store, "c1")
	step := func(name string, store, proposer time.Duration) time.Time {
		c.store, c.proposer = t0.Add(store), t0.Add(proposer)
		return time.Unix(0, addOne(t, l, fsm, name).Result.Now).UTC()
	}
	require.Equal(t, t0.Add(time.Second), step("a", time.Second, time.Second))
	require.Equal(t, t0.Add(2*time.Second), step("b", 2*time.Second, 40*time.Minute), "a fast proposer within the step: the store's time")
	require.Equal(t, t0.Add(3*time.Second), step("c", 3*time.Second, -40*time.Minute), "a slow one within the step: the store's time")
	require.Equal(t, t0.Add(3*time.Second), step("d", 4*time.Second, -3*time.Hour), "further behind: the stamp plus the step, but never back")
	require.Equal(t, t0.Add(time.Hour+3*time.Second), step("e", 5*time.Second, 3*time.Hour), "further ahead: the stamp less the step, one step at most")

	// Without store time, the stamp alone (bounded by the state machine).
	l2, fsm2 := timedLog(t, c, blockmerge.NewMemStore(), "c2", bucketlog.WithoutStoreTime())
	c.proposer = t0.Add(7 * time.Second)
	require.Equal(t, t0.Add(7*time.Second), time.Unix(0, addOne(t, l2, fsm2, "a").Result.Now).UTC())
}

// A step of the log's time beyond one lease (here: no entry for a minute,
// a coordinator outage) first extends the leases in progress, so the job
// a worker holds is not expired and charged a failure.
func TestTimeStepExtendsLeases(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)
	c := &clocks{store: t0, proposer: t0}
	store := blockmerge.NewMemStore(blockmerge.WithMemClock(func() time.Time { return c.store }))
	l, fsm := timedLog(t, c, store, "c1")
	svc := leader.New(l, fsm, leader.WithClock(func() time.Time { return c.proposer }))
	for i := range 4 {
		_, err := svc.AddBlocks(context.Background(), []ck.BlockMeta{leadertest.Block(fmt.Sprintf("b%d", i), "acme", 0, int64(i)*1e9)})
		require.NoError(t, err)
	}
	resp, err := svc.Poll(context.Background(), &ck.PollRequest{WorkerID: "w1", Seq: 1, FreeSlots: 1})
	require.NoError(t, err)
	require.Len(t, resp.Jobs, 1)
	job := resp.Jobs[0]

	c.store, c.proposer = t0.Add(time.Minute), t0.Add(time.Minute)
	_, err = svc.AddBlocks(context.Background(), []ck.BlockMeta{leadertest.Block("late", "acme", 0, 9e9)})
	require.NoError(t, err)
	require.Equal(t, uint64(1), l.Stats().Extensions)
	js, _, ok := fsm.Job(job.Job)
	require.True(t, ok)
	require.Equal(t, ck.StatusInProgress, js.Status, "the lease was extended, not expired")
	require.Zero(t, js.Failures)
	require.Equal(t, t0.Add(time.Minute+15*time.Second).UnixNano(), js.Deadline)
}

// A replica that reads an entry timed by the store through a store that
// reports no times stops with a clear error instead of timing it
// differently (a fork).
func TestStoreTimeRequired(t *testing.T) {
	c := &clocks{store: time.Unix(1e9, 0), proposer: time.Unix(1e9, 0)}
	store := blockmerge.NewMemStore(blockmerge.WithMemClock(func() time.Time { return c.store }))
	l, fsm := timedLog(t, c, store, "c1")
	addOne(t, l, fsm, "a")
	other, err := raftfsm.New(raftfsm.DefaultConfig())
	require.NoError(t, err)
	_, err = bucketlog.Open(context.Background(), noTimes{store, store.(blockmerge.ConditionalPutter)}, "log", other, "c2")
	require.ErrorIs(t, err, bucketlog.ErrUnsupportedStore)
	require.ErrorContains(t, err, "reports no modification times")

	// Entries appended WithoutStoreTime are read by any replica.
	store2 := newMemStore()
	l2, fsm2 := timedLog(t, c, store2, "c1", bucketlog.WithoutStoreTime())
	addOne(t, l2, fsm2, "a")
	other, err = raftfsm.New(raftfsm.DefaultConfig())
	require.NoError(t, err)
	r, err := bucketlog.Open(context.Background(), noTimes{store2, store2}, "log", other, "c2")
	require.NoError(t, err)
	require.Equal(t, uint64(1), r.Applied())
}

// noTimes hides the store's modification times.
type noTimes struct {
	blockmerge.Store
	blockmerge.ConditionalPutter
}

// A coordinator whose clock is 40 minutes ahead of the store's (within
// the clock step, so the log keeps the store's time) prepares polls at
// Log.Now, the log's time as it can tell it: a healthy job held by
// another worker is not taken for expired. Prepared at its own clock, the
// poll would propose the job's reassignment, which Apply refuses (the
// lease has not run out in log time), and the worker would get nothing.
func TestPrepareAtLogTime(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)
	for _, logClock := range []bool{true, false} {
		t.Run(fmt.Sprintf("log-clock=%t", logClock), func(t *testing.T) {
			c := &clocks{store: t0, proposer: t0.Add(40 * time.Minute)}
			store := blockmerge.NewMemStore(blockmerge.WithMemClock(func() time.Time { return c.store }))
			l, fsm := timedLog(t, c, store, "c1")
			clock := func() time.Time { return c.proposer }
			if logClock {
				clock = l.Now
			}
			svc := leader.New(l, fsm, leader.WithClock(clock))
			ctx := context.Background()
			var bs []ck.BlockMeta
			for i := range 8 {
				bs = append(bs, leadertest.Block(fmt.Sprintf("b%d", i), "acme", 0, int64(i)*1e9))
			}
			_, err := svc.AddBlocks(ctx, bs)
			require.NoError(t, err)
			resp, err := svc.Poll(ctx, &ck.PollRequest{WorkerID: "w1", Seq: 1, FreeSlots: 1})
			require.NoError(t, err)
			require.Len(t, resp.Jobs, 1)
			held := resp.Jobs[0].Job
			require.Equal(t, c.store, l.Now(), "after its own appends, Now is the store's clock")

			c.store = c.store.Add(time.Second)
			c.proposer = c.proposer.Add(time.Second)
			resp, err = svc.Poll(ctx, &ck.PollRequest{WorkerID: "w2", Seq: 1, FreeSlots: 1})
			require.NoError(t, err)
			skipped := fsm.Stats().Scheduler.Counters.Skipped
			if logClock {
				require.WithinDuration(t, c.store, l.Now(), time.Second, "Now follows the store's clock")
				require.Len(t, resp.Jobs, 1, "w2 gets the second batch")
				require.NotEqual(t, held, resp.Jobs[0].Job)
				require.Zero(t, skipped)
			} else {
				require.Empty(t, resp.Jobs, "its only slot went to a reassignment Apply refused")
				require.Equal(t, uint64(1), skipped)
			}
			js, _, _ := fsm.Job(held)
			require.Equal(t, ck.StatusInProgress, js.Status)
			require.Zero(t, js.Failures)
		})
	}
}
