package hraft

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/raftfsm"
)

// defaultApplyTimeout bounds one proposal when the caller's context has no
// earlier deadline.
const defaultApplyTimeout = 10 * time.Second

// Option configures a [Service].
type Option func(*options)

type options struct {
	leader   []leader.Option
	envelope func(cmd []byte) []byte
	timeout  time.Duration
	log      *slog.Logger
}

// WithLeader passes options to the leader service: two-commit polls
// (leader.WithTwoCommit), the clock that stamps commands
// (leader.WithClock; tests inject a fake one), token keys, retries, ...
// The service's propose timeout and logger are [WithApplyTimeout]'s and
// [WithLogger]'s.
func WithLeader(opts ...leader.Option) Option {
	return func(o *options) { o.leader = append(o.leader, opts...) }
}

// WithApplyTimeout sets how long one proposal may take when the context
// has no earlier deadline (default 10 seconds).
func WithApplyTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.timeout = d
			o.leader = append(o.leader, leader.WithProposeTimeout(d))
		}
	}
}

// WithLogger sets the service's logger (default: discard).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.log = l
			o.leader = append(o.leader, leader.WithLogger(l))
		}
	}
}

// WithEnvelope wraps compactkit's command bytes into the host's own log
// entries, for a host whose raft FSM holds other state too (see
// [FSM] for the routing on the other side): wrap might prepend a tag byte.
// The host's FSM must return, for a compactkit entry, what
// raftfsm.FSM.Apply returned — the *raftfsm.Result, or the error.
func WithEnvelope(wrap func(cmd []byte) []byte) Option {
	return func(o *options) { o.envelope = wrap }
}

// Service is the leader-side entry point a host's RPC layer calls: the
// host-agnostic [leader.Service] (whose methods it has) over a
// hashicorp/raft node, taking office as soon as raft reports that the
// node leads.
type Service struct {
	*leader.Service
	r         *raft.Raft
	log       *slog.Logger
	obs       *raft.Observer
	obsCh     chan raft.Observation
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// NewService returns a service proposing to r, whose FSM must hand the
// results of f's Apply back as raft's responses (an [FSM] over f does, or
// the host's own FSM routing compactkit's entries to f: see
// [WithEnvelope]). It watches leadership from a goroutine until
// [Service.Close].
func NewService(r *raft.Raft, f *raftfsm.FSM, opts ...Option) *Service {
	o := options{timeout: defaultApplyTimeout, log: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		opt(&o)
	}
	s := &Service{
		Service: leader.New(&raftLog{r: r, wrap: o.envelope, timeout: o.timeout}, f, o.leader...),
		r:       r, log: o.log,
		obsCh: make(chan raft.Observation, 16),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	s.obs = raft.NewObserver(s.obsCh, false, func(o *raft.Observation) bool {
		switch o.Data.(type) {
		case raft.LeaderObservation, raft.RaftState:
			return true
		}
		return false
	})
	r.RegisterObserver(s.obs)
	go s.watch()
	return s
}

// Close stops watching leadership; afterwards calls fail with a
// *[leader.NotLeaderError] wrapping [leader.ErrClosed]. It does not shut
// raft down.
func (s *Service) Close() error {
	s.closeOnce.Do(func() {
		s.r.DeregisterObserver(s.obs)
		close(s.stop)
		<-s.done
		_ = s.Service.Close() // never fails
	})
	return nil
}

// watch takes office as soon as the node becomes leader, so that leases
// are extended without waiting for the first call.
func (s *Service) watch() {
	defer close(s.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-s.stop
		cancel()
	}()
	check := func() {
		if s.r.State() != raft.Leader {
			return
		}
		if err := s.TakeOffice(ctx); err != nil && ctx.Err() == nil {
			s.log.Info("hraft: taking office failed", "err", err)
		}
	}
	check()
	for {
		select {
		case <-s.stop:
			return
		case <-s.obsCh:
			check()
		}
	}
}

// raftLog is the [leader.Log] of a hashicorp/raft node: raft's futures
// return the FSM's responses, so no request matching is needed.
type raftLog struct {
	r       *raft.Raft
	wrap    func([]byte) []byte
	timeout time.Duration
}

func (l *raftLog) Leader() leader.Leadership {
	addr, id := l.r.LeaderWithID()
	return leader.Leadership{
		Leads: l.r.State() == raft.Leader, Term: l.r.CurrentTerm(),
		LeaderID: string(id), LeaderAddr: string(addr),
	}
}

func (l *raftLog) notLeader(cause error) error {
	ld := l.Leader()
	return &leader.NotLeaderError{LeaderID: ld.LeaderID, LeaderAddr: ld.LeaderAddr, Cause: cause}
}

// timeoutFor is raft's enqueue timeout for ctx.
func (l *raftLog) timeoutFor(ctx context.Context) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		return min(l.timeout, time.Until(dl))
	}
	return l.timeout
}

// wait waits for a future's error, or ctx.
func wait(ctx context.Context, fut raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- fut.Error() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("hraft: %w: %w", leader.ErrOutcomeUnknown, ctx.Err())
	}
}

func (l *raftLog) Propose(ctx context.Context, cmd []byte, _ uint64) (leader.Applied, error) {
	if l.wrap != nil {
		cmd = l.wrap(cmd)
	}
	timeout := l.timeoutFor(ctx)
	if err := ctx.Err(); err != nil || timeout <= 0 {
		return leader.Applied{}, cmp(err, context.DeadlineExceeded)
	}
	fut := l.r.Apply(cmd, timeout)
	if err := wait(ctx, fut); err != nil {
		switch {
		case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress),
			errors.Is(err, raft.ErrRaftShutdown), errors.Is(err, raft.ErrAbortedByRestore):
			return leader.Applied{}, l.notLeader(err) // nothing appended
		case errors.Is(err, raft.ErrLeadershipLost):
			// Appended, perhaps committed by the next leader.
			return leader.Applied{}, fmt.Errorf("hraft: %w: %w", leader.ErrOutcomeUnknown, l.notLeader(err))
		default:
			return leader.Applied{}, fmt.Errorf("hraft: propose: %w", err)
		}
	}
	switch v := fut.Response().(type) {
	case *raftfsm.Result:
		return leader.Applied{Index: fut.Index(), Term: v.Term, Result: v}, nil
	case error:
		return leader.Applied{Index: fut.Index(), Err: v}, nil
	default:
		return leader.Applied{}, fmt.Errorf("hraft: entry %d: %T: %w", fut.Index(), v, ErrUnexpectedResponse)
	}
}

// cmp returns err, or def if err is nil.
func cmp(err, def error) error {
	if err != nil {
		return err
	}
	return def
}

func (l *raftLog) Barrier(ctx context.Context) error {
	timeout := l.timeoutFor(ctx)
	if timeout <= 0 {
		return context.DeadlineExceeded
	}
	if err := wait(ctx, l.r.Barrier(timeout)); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) || errors.Is(err, raft.ErrRaftShutdown) {
			return l.notLeader(err)
		}
		return err
	}
	return nil
}
