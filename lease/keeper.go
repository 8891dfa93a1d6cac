package lease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"
)

// ErrLeaseLost means the worker no longer holds its lease. A [Renewer]
// returns an error wrapping it when the leader answers "no lease"; a [Keeper]
// cancels its context with a cause wrapping it when that happens or when the
// locally measured lease runs out.
var ErrLeaseLost = errors.New("lease: lease lost")

// errStopped is the cause with which [Keeper.Stop] cancels a keeper's
// context.
var errStopped = errors.New("lease: keeper stopped")

// Renewer performs one lease renewal round trip to the leader on behalf of a
// [Keeper]. On success it returns the lease duration the leader granted —
// a duration, never the leader's absolute deadline, which means nothing on
// the worker's clock. When the leader answers that the worker holds no lease
// for the job it returns an error wrapping [ErrLeaseLost]; any other error is
// treated as transient and retried.
//
// ctx is done when the locally measured lease runs out (its deadline is the
// local end of the lease) or when the keeper's context is cancelled; a
// Renewer should return promptly then. Its answer no longer counts: once the
// lease has run out locally it is lost, whatever the leader says.
type Renewer func(ctx context.Context) (time.Duration, error)

// DefaultFraction is the renewal fraction of a [Keeper]: it renews every
// half lease, so the first renewal of a lease of duration d obtained by a
// request sent at s is due at s + DefaultFraction×d.
const DefaultFraction = 0.5

// Default retry tuning of a [Keeper].
const (
	// defaultRetryInitial is the default wait before retrying a failed
	// renewal.
	defaultRetryInitial = 100 * time.Millisecond
	// defaultRetryMax is the default longest wait between retries.
	defaultRetryMax = 2 * time.Second
)

// An Option configures a [Keeper].
type Option func(*config)

type config struct {
	fraction     float64
	logger       *slog.Logger
	retryInitial time.Duration
	retryMax     time.Duration
}

// withFraction sets the fraction of a lease after which the keeper renews
// it: a lease of duration g obtained by a request sent at s is renewed at
// s + f×g. f must lie in the open interval (0, 1); any other value (and NaN)
// is ignored, with a warning on the keeper's logger, and the keeper uses
// [DefaultFraction]. Only tests set it (export_test.go).
func withFraction(f float64) Option {
	return func(c *config) { c.fraction = f }
}

// WithLogger sets the logger the keeper reports renewals, failures and the
// loss of its lease to. By default the keeper logs nothing. A nil logger is
// ignored.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.logger = l
		}
	}
}

// WithRetryBackoff sets how the keeper retries failed renewals: it waits
// initial after the first failure and doubles the wait after each further
// one, up to maxWait. Retries never go past the locally measured end of the
// lease. The defaults are 100ms and 2s; a non-positive initial keeps the
// default, and a maxWait smaller than initial is raised to initial.
func WithRetryBackoff(initial, maxWait time.Duration) Option {
	return func(c *config) {
		if initial > 0 {
			c.retryInitial = initial
		}
		c.retryMax = max(maxWait, c.retryInitial)
	}
}

// Keeper keeps a worker's lease on one job alive: it renews the lease in the
// background and cancels [Keeper.Context] when the lease is lost. Create one
// with [NewKeeper] as soon as a job is assigned, run the job under its
// context, and call [Keeper.Stop] when the job ends.
//
// A Keeper measures the lease on the worker's own clock, from the moment the
// worker sent the request that granted or renewed it (see the package
// documentation for why). It runs one goroutine, which exits once the
// context is done and which [Keeper.Stop] waits for. Its methods are safe for
// concurrent use.
type Keeper struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}

	renew        Renewer
	log          *slog.Logger
	fraction     float64
	retryInitial time.Duration
	retryMax     time.Duration

	mu  sync.Mutex
	end time.Time // the locally measured end of the lease
}

// NewKeeper starts a keeper for a lease of duration granted, obtained by a
// request the worker sent at local time sentAt (read from [time.Now]). The
// lease ends locally at sentAt + granted; the keeper first renews it at
// sentAt + f×granted, f being the renewal fraction ([DefaultFraction]), by
// calling renew.
//
// After a successful renewal sent at s that granted g, the lease ends locally
// at the later of its previous end and s + g, and the next renewal is due at
// s + f×g. A renewal failing with an error that does not wrap [ErrLeaseLost]
// is retried with backoff ([WithRetryBackoff]), but never after the local end
// of the lease.
//
// The keeper's context, derived from parent, is cancelled
//   - with the Renewer's error as cause, when a renewal fails with an error
//     wrapping [ErrLeaseLost];
//   - with a cause wrapping [ErrLeaseLost] and saying the lease expired
//     locally, at the local end of the lease if no renewal has extended it
//     by then — on time even if a renewal is still in flight;
//   - with the parent's cause, when parent is cancelled;
//   - with a cause of its own, when [Keeper.Stop] is called.
//
// The keeper treats the lease as lost at its local end itself, whereas the
// leader lets a lease hold at its deadline: the local end is no
// later than the leader's deadline, and the worker errs on the side of
// stopping early. A granted duration that is not positive gives a lease that has
// already ended: the keeper cancels its context at once. NewKeeper panics if
// renew is nil.
func NewKeeper(parent context.Context, granted time.Duration, sentAt time.Time, renew Renewer, opts ...Option) *Keeper {
	if renew == nil {
		panic("lease: NewKeeper called with a nil Renewer")
	}
	cfg := config{
		fraction:     DefaultFraction,
		logger:       slog.New(slog.DiscardHandler),
		retryInitial: defaultRetryInitial,
		retryMax:     defaultRetryMax,
	}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if !(cfg.fraction > 0 && cfg.fraction < 1) {
		cfg.logger.Warn("lease: ignoring invalid renewal fraction", "fraction", cfg.fraction, "using", DefaultFraction)
		cfg.fraction = DefaultFraction
	}

	ctx, cancel := context.WithCancelCause(parent)
	k := &Keeper{
		ctx:          ctx,
		cancel:       cancel,
		done:         make(chan struct{}),
		renew:        renew,
		log:          cfg.logger,
		fraction:     cfg.fraction,
		retryInitial: cfg.retryInitial,
		retryMax:     cfg.retryMax,
		end:          sentAt.Add(granted),
	}
	go k.run(sentAt.Add(k.scale(granted)))
	return k
}

// Context returns the context the worker should run the job under. It is
// cancelled when the lease is lost, the parent context is cancelled or the
// keeper is stopped; [context.Cause] tells which (see [NewKeeper]).
func (k *Keeper) Context() context.Context { return k.ctx }

// Deadline returns the current local end of the lease, in local time. It
// only ever moves later.
func (k *Keeper) Deadline() time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.end
}

// Stop cancels the keeper's context (unless it was
// already cancelled) and waits for the keeper's goroutine to exit, including
// a renewal in flight: a [Renewer] that ignores its context delays Stop, and
// calling Stop from inside the Renewer deadlocks. Stop may be called any
// number of times, from any goroutine.
func (k *Keeper) Stop() {
	k.cancel(errStopped)
	<-k.done
}

func (k *Keeper) run(next time.Time) {
	defer close(k.done)
	var lastErr error // the error of the last failed renewal, nil after a success
	backoff := k.retryInitial
	for {
		end := k.Deadline()
		if !k.sleepUntil(earlier(next, end)) {
			return
		}
		now := time.Now()
		if !now.Before(end) {
			k.expire(end, lastErr)
			return
		}
		if now.Before(next) {
			continue // the timer fired early; wait again
		}

		sent := now
		g, err := k.renewOnce(end, lastErr)
		if errors.Is(err, ErrLeaseLost) {
			k.log.Warn("lease lost", "error", err)
			k.cancel(err)
			return
		}
		if k.ctx.Err() != nil {
			return
		}
		if err == nil && g <= 0 {
			err = fmt.Errorf("lease: renewal granted a non-positive duration %v", g)
		}
		if err == nil {
			k.mu.Lock()
			k.end = later(k.end, sent.Add(g))
			end = k.end
			k.mu.Unlock()
			next = sent.Add(k.scale(g))
			lastErr, backoff = nil, k.retryInitial
			k.log.Debug("lease renewed", "granted", g, "deadline", end, "next_renewal", next)
			continue
		}
		lastErr = err
		now = time.Now()
		if !now.Before(end) {
			k.expire(end, lastErr)
			return
		}
		next = now.Add(backoff)
		k.log.Warn("lease renewal failed; retrying", "error", err, "retry_in", backoff, "deadline", end)
		backoff = min(2*backoff, k.retryMax)
	}
}

// renewOnce calls the Renewer once, with a context that is done when the
// lease ends locally at end. If end passes before the Renewer returns, the
// keeper's context is cancelled at end, without waiting for the Renewer, and
// renewOnce returns the cancellation cause (which wraps ErrLeaseLost) whatever
// the Renewer answered: the lease ran out before the answer arrived.
func (k *Keeper) renewOnce(end time.Time, lastErr error) (time.Duration, error) {
	expired := expiredError(end, lastErr)
	rctx, cancel := context.WithDeadlineCause(k.ctx, end, expired)
	defer cancel()
	stop := context.AfterFunc(rctx, func() {
		if context.Cause(rctx) == expired {
			k.cancel(expired)
		}
	})
	defer stop()
	g, err := k.renew(rctx)
	if context.Cause(rctx) == expired {
		return 0, expired
	}
	return g, err
}

// sleepUntil waits until local time t. It returns false if the keeper's
// context is done first.
func (k *Keeper) sleepUntil(t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return k.ctx.Err() == nil
	case <-k.ctx.Done():
		return false
	}
}

func (k *Keeper) expire(end time.Time, lastErr error) {
	err := expiredError(end, lastErr)
	k.log.Warn("lease expired locally", "error", err)
	k.cancel(err)
}

// scale returns fraction × d, never more than d.
func (k *Keeper) scale(d time.Duration) time.Duration {
	x := k.fraction * float64(d)
	if x >= float64(d) || x >= math.MaxInt64 {
		return d
	}
	return time.Duration(x)
}

func expiredError(end time.Time, lastErr error) error {
	at := end.Format(time.RFC3339Nano)
	if lastErr != nil {
		return fmt.Errorf("%w: expired locally at %s without a successful renewal (last renewal error: %v)", ErrLeaseLost, at, lastErr)
	}
	return fmt.Errorf("%w: expired locally at %s without a successful renewal", ErrLeaseLost, at)
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
