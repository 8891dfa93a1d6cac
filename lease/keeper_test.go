package lease_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/compactkit/compactkit/lease"
)

// All keeper tests run inside synctest bubbles, where time is fake: sleeps
// return as soon as every goroutine in the bubble is blocked, and time.Now is
// exact. Nothing sleeps in real time.

// call records one renewal as the Renewer saw it.
type call struct {
	at       time.Time // when the renewal was sent
	deadline time.Time // the deadline of the renewal's context
}

// recorder is a Renewer that records its calls and answers through respond.
type recorder struct {
	mu      sync.Mutex
	calls   []call
	respond func(ctx context.Context, n int) (time.Duration, error) // n counts from 1
}

func (r *recorder) renew(ctx context.Context) (time.Duration, error) {
	dl, ok := ctx.Deadline()
	if !ok {
		panic("renewal context has no deadline")
	}
	r.mu.Lock()
	r.calls = append(r.calls, call{at: time.Now(), deadline: dl})
	n := len(r.calls)
	r.mu.Unlock()
	return r.respond(ctx, n)
}

func (r *recorder) snapshot() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]call(nil), r.calls...)
}

func grantAlways(d time.Duration) func(context.Context, int) (time.Duration, error) {
	return func(context.Context, int) (time.Duration, error) { return d, nil }
}

// offsets returns the call times relative to t0.
func offsets(t0 time.Time, calls []call) []time.Duration {
	out := make([]time.Duration, len(calls))
	for i, c := range calls {
		out[i] = c.at.Sub(t0)
	}
	return out
}

// sleepUntil advances the bubble's clock to t and lets the keeper react.
func sleepUntil(t time.Time) {
	time.Sleep(time.Until(t))
	synctest.Wait()
}

func requireAlive(t *testing.T, k *lease.Keeper) {
	t.Helper()
	require.NoError(t, k.Context().Err())
	require.NoError(t, context.Cause(k.Context()))
}

func requireLost(t *testing.T, k *lease.Keeper) {
	t.Helper()
	require.Error(t, k.Context().Err())
	require.ErrorIs(t, context.Cause(k.Context()), lease.ErrLeaseLost)
}

func TestKeeperRenewsEveryHalfLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k, r, t0 := steadyKeeper(t, t.Context())

		sleepUntil(t0.Add(61 * time.Second))
		requireAlive(t, k)

		calls := r.snapshot()
		var want []time.Duration
		for i := 1; i <= 12; i++ {
			want = append(want, time.Duration(i)*5*time.Second)
		}
		require.Equal(t, want, offsets(t0, calls))
		for i, c := range calls {
			// Each renewal may take until the end of the lease it renews.
			require.Equal(t, c.at.Add(5*time.Second), c.deadline, "call %d", i)
		}
		require.Equal(t, t0.Add(70*time.Second), k.Deadline())
	})
}

func TestKeeperFraction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		r := &recorder{respond: grantAlways(8 * time.Second)}
		k := lease.NewKeeper(t.Context(), 8*time.Second, t0, r.renew, lease.WithFraction(0.25))
		defer k.Stop()

		sleepUntil(t0.Add(7 * time.Second))
		require.Equal(t, []time.Duration{2 * time.Second, 4 * time.Second, 6 * time.Second}, offsets(t0, r.snapshot()))
	})
}

func TestKeeperInvalidFractionUsesDefault(t *testing.T) {
	for _, f := range []float64{0, 1, -0.5, 1.5, math.NaN(), math.Inf(1)} {
		t.Run(fmt.Sprint(f), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var logs bytes.Buffer
				logger := slog.New(slog.NewTextHandler(&logs, nil))
				t0 := time.Now()
				r := &recorder{respond: grantAlways(8 * time.Second)}
				k := lease.NewKeeper(t.Context(), 8*time.Second, t0, r.renew, lease.WithFraction(f), lease.WithLogger(logger))
				defer k.Stop()

				sleepUntil(t0.Add(9 * time.Second))
				require.Equal(t, []time.Duration{4 * time.Second, 8 * time.Second}, offsets(t0, r.snapshot()))
				require.Contains(t, logs.String(), "invalid renewal fraction")
			})
		})
	}
}

func TestKeeperLeaseLostCancels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		lost := fmt.Errorf("job-7: %w", lease.ErrLeaseLost)
		r := &recorder{respond: func(_ context.Context, n int) (time.Duration, error) {
			if n == 1 {
				return 10 * time.Second, nil
			}
			return 0, lost
		}}
		k := lease.NewKeeper(t.Context(), 10*time.Second, t0, r.renew)
		defer k.Stop()

		sleepUntil(t0.Add(10*time.Second - 1))
		requireAlive(t, k)

		sleepUntil(t0.Add(10 * time.Second)) // the second renewal answers "no lease"
		requireLost(t, k)
		require.Same(t, lost, context.Cause(k.Context()), "the cause is the Renewer's error")

		sleepUntil(t0.Add(time.Minute))
		require.Len(t, r.snapshot(), 2, "no renewal after the lease is lost")
	})
}

func TestKeeperExpiresWhenRenewalHangs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		sentAt := t0.Add(-2 * time.Second) // the poll was sent 2s ago
		r := &recorder{respond: func(ctx context.Context, _ int) (time.Duration, error) {
			<-ctx.Done()
			return 0, ctx.Err()
		}}
		k := lease.NewKeeper(t.Context(), 10*time.Second, sentAt, r.renew)
		defer k.Stop()

		end := sentAt.Add(10 * time.Second)
		sleepUntil(end.Add(-1))
		requireAlive(t, k)
		require.Equal(t, []call{{at: sentAt.Add(5 * time.Second), deadline: end}}, r.snapshot())

		sleepUntil(end)
		requireLost(t, k)
		require.Contains(t, context.Cause(k.Context()).Error(), "expired locally")
		require.Equal(t, end, k.Deadline())
	})
}

func TestKeeperExpiresWhenRenewerIgnoresContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		release := make(chan struct{})
		r := &recorder{respond: func(context.Context, int) (time.Duration, error) {
			<-release // ignores its context
			return time.Hour, nil
		}}
		k := lease.NewKeeper(t.Context(), 10*time.Second, t0, r.renew)

		end := t0.Add(10 * time.Second)
		sleepUntil(end.Add(-1))
		requireAlive(t, k)
		sleepUntil(end)
		requireLost(t, k) // cancelled on time, while the renewal is still stuck

		close(release) // the late answer must not revive the lease
		k.Stop()
		requireLost(t, k)
		require.Equal(t, end, k.Deadline())
		require.Len(t, r.snapshot(), 1)
	})
}

func TestKeeperExpiresWhenRenewalsKeepFailing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		unavailable := errors.New("leader unavailable")
		r := &recorder{respond: func(context.Context, int) (time.Duration, error) {
			return 0, unavailable
		}}
		k := lease.NewKeeper(t.Context(), 10*time.Second, t0, r.renew, lease.WithRetryBackoff(100*time.Millisecond, 2*time.Second))
		defer k.Stop()

		end := t0.Add(10 * time.Second)
		sleepUntil(end.Add(-1))
		requireAlive(t, k)
		// First renewal at half lease, then retries after 100ms, 200ms,
		// 400ms, 800ms, 1.6s, 2s (capped); the next would pass the end.
		ms := time.Millisecond
		require.Equal(t,
			[]time.Duration{5000 * ms, 5100 * ms, 5300 * ms, 5700 * ms, 6500 * ms, 8100 * ms},
			offsets(t0, r.snapshot()))

		sleepUntil(end)
		requireLost(t, k)
		require.Contains(t, context.Cause(k.Context()).Error(), "expired locally")
		require.Contains(t, context.Cause(k.Context()).Error(), unavailable.Error(), "the cause reports the last failure")
		require.NotErrorIs(t, context.Cause(k.Context()), unavailable, "a transient failure is not the cause")
	})
}

func TestKeeperRecoversAfterTransientFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		r := &recorder{respond: func(_ context.Context, n int) (time.Duration, error) {
			if n <= 2 {
				return 0, errors.New("connection refused")
			}
			return 10 * time.Second, nil
		}}
		k := lease.NewKeeper(t.Context(), 10*time.Second, t0, r.renew, lease.WithRetryBackoff(time.Second, 4*time.Second))
		defer k.Stop()

		sleepUntil(t0.Add(12 * time.Second))
		requireAlive(t, k)
		// Failures at 5s and 6s, success at 8s (lease to 18s), next at 13s.
		require.Equal(t, []time.Duration{5 * time.Second, 6 * time.Second, 8 * time.Second}, offsets(t0, r.snapshot()))
		require.Equal(t, t0.Add(18*time.Second), k.Deadline())

		sleepUntil(t0.Add(13 * time.Second))
		require.Len(t, r.snapshot(), 4)
	})
}

func TestKeeperDeadlineMeasuredFromSendTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		r := &recorder{respond: func(context.Context, int) (time.Duration, error) {
			time.Sleep(3 * time.Second) // a slow round trip
			return 10 * time.Second, nil
		}}
		k := lease.NewKeeper(t.Context(), 10*time.Second, t0, r.renew)
		defer k.Stop()

		sleepUntil(t0.Add(9 * time.Second)) // first renewal sent at 5s, answered at 8s
		// 5s + 10s, not 8s + 10s: the leader may have granted it as early as 5s.
		require.Equal(t, t0.Add(15*time.Second), k.Deadline())

		sleepUntil(t0.Add(11 * time.Second))
		calls := r.snapshot()
		require.Equal(t, []time.Duration{5 * time.Second, 10 * time.Second}, offsets(t0, calls))
		require.Equal(t, t0.Add(15*time.Second), calls[1].deadline)
	})
}

func TestKeeperNeverShortensLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		r := &recorder{respond: func(_ context.Context, n int) (time.Duration, error) {
			if n == 1 {
				return time.Second, nil // the leader's lease duration was lowered
			}
			return 0, errors.New("timeout")
		}}
		k := lease.NewKeeper(t.Context(), 10*time.Second, t0, r.renew, lease.WithRetryBackoff(10*time.Second, 10*time.Second))
		defer k.Stop()

		sleepUntil(t0.Add(5 * time.Second))
		require.Equal(t, t0.Add(10*time.Second), k.Deadline(), "5s + 1s would shorten the lease")
		sleepUntil(t0.Add(10*time.Second - 1))
		requireAlive(t, k)
		// The next renewal is due at half the granted second.
		require.Equal(t, []time.Duration{5 * time.Second, 5500 * time.Millisecond}, offsets(t0, r.snapshot()))
		sleepUntil(t0.Add(10 * time.Second))
		requireLost(t, k)
	})
}

func TestKeeperNonPositiveGrantIsAFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		r := &recorder{respond: grantAlways(0)}
		k := lease.NewKeeper(t.Context(), 10*time.Second, t0, r.renew)
		defer k.Stop()

		sleepUntil(t0.Add(10*time.Second - 1))
		requireAlive(t, k)
		require.Greater(t, len(r.snapshot()), 1, "retried")
		sleepUntil(t0.Add(10 * time.Second))
		requireLost(t, k)
		require.Contains(t, context.Cause(k.Context()).Error(), "non-positive")
	})
}

// steadyKeeper starts, now, the keeper of a 10 s lease that every renewal
// extends by 10 s; it is stopped when the test ends.
func steadyKeeper(t *testing.T, parent context.Context) (*lease.Keeper, *recorder, time.Time) {
	t0 := time.Now()
	r := &recorder{respond: grantAlways(10 * time.Second)}
	k := lease.NewKeeper(parent, 10*time.Second, t0, r.renew)
	t.Cleanup(k.Stop)
	return k, r, t0
}

func TestKeeperZeroGrantedIsLostAtOnce(t *testing.T) {
	for _, granted := range []time.Duration{0, -time.Second} {
		t.Run(granted.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := &recorder{respond: grantAlways(time.Second)}
				k := lease.NewKeeper(t.Context(), granted, time.Now(), r.renew)
				defer k.Stop()
				synctest.Wait()
				requireLost(t, k)
				require.Empty(t, r.snapshot())
			})
		})
	}
}

func TestKeeperStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k, r, t0 := steadyKeeper(t, t.Context())

		sleepUntil(t0.Add(7 * time.Second))
		k.Stop()
		require.ErrorIs(t, k.Context().Err(), context.Canceled)
		require.Same(t, lease.ErrStopped, context.Cause(k.Context()))
		requireNoKeeperGoroutine(t)

		// Stop is idempotent and safe from many goroutines.
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(k.Stop)
		}
		wg.Wait()
		require.Same(t, lease.ErrStopped, context.Cause(k.Context()))

		sleepUntil(t0.Add(time.Minute))
		require.Len(t, r.snapshot(), 1, "no renewal after Stop")
	})
}

func TestKeeperStopDuringRenewal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		var seen error
		r := &recorder{respond: func(ctx context.Context, _ int) (time.Duration, error) {
			<-ctx.Done()
			seen = context.Cause(ctx)
			return 0, ctx.Err()
		}}
		k := lease.NewKeeper(t.Context(), 10*time.Second, t0, r.renew)

		sleepUntil(t0.Add(6 * time.Second)) // a renewal is in flight
		k.Stop()
		require.Same(t, lease.ErrStopped, seen, "the renewal's context is cancelled by Stop")
		require.Same(t, lease.ErrStopped, context.Cause(k.Context()))
		requireNoKeeperGoroutine(t)
	})
}

func TestKeeperParentCancellation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithCancelCause(t.Context())
		k, r, t0 := steadyKeeper(t, parent)

		sleepUntil(t0.Add(3 * time.Second))
		shutdown := errors.New("worker shutting down")
		cancel(shutdown)
		synctest.Wait()

		require.Same(t, shutdown, context.Cause(k.Context()))
		require.Same(t, shutdown, context.Cause(k.Context()))
		requireNoKeeperGoroutine(t) // the keeper exits without waiting for Stop

		sleepUntil(t0.Add(time.Minute))
		require.Empty(t, r.snapshot())
	})
}

func TestKeeperDeadlineConcurrentReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k, _, t0 := steadyKeeper(t, t.Context())

		var (
			wg        sync.WaitGroup
			backwards atomic.Int32
		)
		for range 4 {
			wg.Go(func() {
				prev := k.Deadline()
				for range 20 {
					time.Sleep(time.Second)
					d := k.Deadline()
					if d.Before(prev) {
						backwards.Add(1)
					}
					prev = d
				}
			})
		}
		wg.Wait()
		synctest.Wait() // let the keeper finish the renewal due at 20s
		require.Zero(t, backwards.Load(), "the deadline moved backwards")
		require.Equal(t, t0.Add(30*time.Second), k.Deadline())
		requireAlive(t, k)
	})
}

func TestNewKeeperNilRenewerPanics(t *testing.T) {
	require.Panics(t, func() { lease.NewKeeper(context.Background(), time.Second, time.Now(), nil) })
}

// requireNoKeeperGoroutine checks that no keeper goroutine is left in the
// process. Callers run inside a bubble: synctest.Wait returns only once every
// other goroutine in the bubble has exited or is blocked.
func requireNoKeeperGoroutine(t *testing.T) {
	t.Helper()
	synctest.Wait()
	buf := make([]byte, 1<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	require.False(t, strings.Contains(stacks, "lease.(*Keeper)."), "a keeper goroutine is still alive:\n%s", stacks)
}
