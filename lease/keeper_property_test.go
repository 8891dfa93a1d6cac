package lease_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/compactkit/compactkit/lease"
)

// outcome is how a scripted renewal answers.
type outcome int

const (
	renewed   outcome = iota // the leader grants step.grant
	transient                // a transient error
	zeroGrant                // the leader "grants" zero: a failure too
	lost                     // the leader answers "no lease"
	hang                     // no answer until the renewal's context is done
)

type step struct {
	outcome outcome
	grant   time.Duration
	// latency is the fraction, in thousandths, of the time left before the
	// renewal's deadline that the answer takes; always less than all of it.
	latency int64
}

// scriptedCall is what happened to one renewal inside the bubble.
type scriptedCall struct {
	sent, deadline, returned time.Time
	step                     step
	err                      error
}

type keeperRun struct {
	t0, sentAt                time.Time
	granted                   time.Duration
	fraction                  float64
	retryInitial, retryMax    time.Duration
	calls                     []scriptedCall
	cancelledAt               time.Time
	cause                     error
	deadlineAfter             time.Time
	script                    []step
	exhaustedErr              error
	renewalsAfterCancellation int // counted in the bubble
}

// TestKeeperProperty drives a keeper with random scripts of renewal answers
// (grants, failures, slow and hanging renewals, "no lease") and checks every
// renewal and the moment and cause of cancellation against a plain model of
// the rules documented on NewKeeper.
func TestKeeperProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		run := keeperRun{
			granted:      time.Duration(rapid.Int64Range(int64(time.Millisecond), int64(30*time.Second)).Draw(rt, "granted")),
			fraction:     rapid.Float64Range(0.05, 0.95).Draw(rt, "fraction"),
			retryInitial: time.Duration(rapid.Int64Range(int64(time.Millisecond), int64(5*time.Second)).Draw(rt, "retryInitial")),
		}
		run.retryMax = run.retryInitial * time.Duration(rapid.IntRange(1, 8).Draw(rt, "retryMaxFactor"))
		// The granting request was sent up to 1.2 leases ago.
		back := time.Duration(rapid.Int64Range(0, int64(run.granted)*6/5).Draw(rt, "sentAgo"))
		run.script = rapid.SliceOfN(rapid.Custom(func(t *rapid.T) step {
			return step{
				outcome: outcome(rapid.IntRange(int(renewed), int(hang)).Draw(t, "outcome")),
				grant:   time.Duration(rapid.Int64Range(int64(time.Millisecond), int64(30*time.Second)).Draw(t, "grant")),
				latency: rapid.Int64Range(0, 999).Draw(t, "latency"),
			}
		}), 0, 16).Draw(rt, "script")
		run.exhaustedErr = fmt.Errorf("script exhausted: %w", lease.ErrLeaseLost)

		synctest.Test(t, func(t *testing.T) { runScript(t, &run, back) })
		checkAgainstModel(rt, &run)
	})
}

// runScript runs a keeper in the bubble until its context is done.
func runScript(t *testing.T, run *keeperRun, back time.Duration) {
	run.t0 = time.Now()
	run.sentAt = run.t0.Add(-back)
	var cancelled atomic.Bool
	renew := func(ctx context.Context) (time.Duration, error) {
		if cancelled.Load() {
			run.renewalsAfterCancellation++
		}
		n := len(run.calls)
		dl, _ := ctx.Deadline()
		c := scriptedCall{sent: time.Now(), deadline: dl}
		s := step{outcome: lost}
		if n < len(run.script) {
			s = run.script[n]
		}
		c.step = s
		var g time.Duration
		switch s.outcome {
		case hang:
			<-ctx.Done()
			c.err = ctx.Err()
		default:
			time.Sleep(time.Until(dl) * time.Duration(s.latency) / 1000)
			switch s.outcome {
			case renewed:
				g = s.grant
			case transient:
				c.err = errors.New("transient")
			case lost:
				c.err = fmt.Errorf("call %d: %w", n, lease.ErrLeaseLost)
				if n >= len(run.script) {
					c.err = run.exhaustedErr
				}
			}
		}
		c.returned = time.Now()
		run.calls = append(run.calls, c)
		return g, c.err
	}
	k := lease.NewKeeper(t.Context(), run.granted, run.sentAt, renew,
		lease.WithFraction(run.fraction), lease.WithRetryBackoff(run.retryInitial, run.retryMax))
	<-k.Context().Done()
	run.cancelledAt = time.Now()
	cancelled.Store(true)
	k.Stop() // Stop waits for the keeper: run is safe to read afterwards
	run.cause = context.Cause(k.Context())
	run.deadlineAfter = k.Deadline()
}

func checkAgainstModel(t *rapid.T, run *keeperRun) {
	scale := func(d time.Duration) time.Duration { return time.Duration(run.fraction * float64(d)) }
	end := run.sentAt.Add(run.granted)
	next := run.sentAt.Add(scale(run.granted))
	free := run.t0 // when the keeper is next free to send
	backoff := run.retryInitial

	var wantCancel time.Time
	var wantCause error // nil: expired locally
	done := false
	for i, c := range run.calls {
		require.False(t, done, "call %d made after the lease ended: %+v", i, run.calls)
		sendAt := next
		if free.After(sendAt) {
			sendAt = free
		}
		require.True(t, sendAt.Before(end), "call %d: the model expects expiry at %v, not a renewal", i, end)
		require.Equal(t, sendAt, c.sent, "call %d sent at the wrong time", i)
		require.Equal(t, end, c.deadline, "call %d: renewal deadline is not the local lease end", i)

		free = c.returned
		switch c.step.outcome {
		case renewed:
			if s := c.sent.Add(c.step.grant); s.After(end) {
				end = s
			}
			next = c.sent.Add(scale(c.step.grant))
			backoff = run.retryInitial
		case transient, zeroGrant:
			next = c.returned.Add(backoff)
			backoff = min(2*backoff, run.retryMax)
		case lost:
			wantCancel, wantCause, done = c.returned, c.err, true
		case hang:
			require.Equal(t, end, c.returned)
			wantCancel, done = end, true
		}
	}
	if !done {
		// No renewal left: the lease must have run out locally, with no
		// renewal due before its end.
		sendAt := next
		if free.After(sendAt) {
			sendAt = free
		}
		require.False(t, sendAt.Before(end), "a renewal was due at %v, before the end %v, but never made", sendAt, end)
		wantCancel = end
		if free.After(end) {
			wantCancel = free // already ended when the keeper started
		}
	}

	require.Equal(t, wantCancel, run.cancelledAt, "cancelled at the wrong time")
	require.ErrorIs(t, run.cause, lease.ErrLeaseLost)
	if wantCause != nil {
		require.Same(t, wantCause, run.cause)
	} else {
		require.Contains(t, run.cause.Error(), "expired locally")
	}
	require.Equal(t, end, run.deadlineAfter)
	require.Zero(t, run.renewalsAfterCancellation)
}
