package hraft

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/index"
	"github.com/compactkit/compactkit/planner"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/scheduler"
)

// Mode selects how a worker's poll goes through the log.
type Mode uint8

const (
	// SingleCommit (the default) proposes one entry per poll: the prepared
	// plan update. Assignment tokens are that entry's index.
	SingleCommit Mode = iota
	// TwoCommit first commits a read-only prepare entry
	// ([raftfsm.PreparePoll]), then prepares the plan on the state that
	// includes it and commits the update: two entries per poll, tokens are
	// the prepare entry's index (the anchor's protocol).
	TwoCommit
)

// String returns the mode's name.
func (m Mode) String() string {
	switch m {
	case SingleCommit:
		return "single-commit"
	case TwoCommit:
		return "two-commit"
	default:
		return fmt.Sprintf("Mode(%d)", uint8(m))
	}
}

// DefaultApplyTimeout bounds how long a proposal may wait to be enqueued
// by raft when the caller's context has no earlier deadline.
const DefaultApplyTimeout = 10 * time.Second

// Option configures a [Service].
type Option func(*options)

type options struct {
	mode         Mode
	clock        func() time.Time
	applyTimeout time.Duration
	log          *slog.Logger
}

// WithMode selects single-commit (default) or two-commit polls.
func WithMode(m Mode) Option { return func(o *options) { o.mode = m } }

// WithClock sets the leader's clock that stamps commands (default
// time.Now). Tests inject a fake one.
func WithClock(now func() time.Time) Option {
	return func(o *options) {
		if now != nil {
			o.clock = now
		}
	}
}

// WithApplyTimeout sets the enqueue timeout handed to raft.Apply when the
// context has no earlier deadline (default [DefaultApplyTimeout]).
func WithApplyTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.applyTimeout = d
		}
	}
}

// WithLogger sets the service's logger (default: discard).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.log = l
		}
	}
}

// Service is the leader-side entry point a host's RPC layer calls: worker
// polls, new blocks, operator commands and consistent queries, each turned
// into raft proposals over a [raftfsm.FSM].
//
// # Leadership
//
// When the node becomes leader, the service first proposes a
// [raftfsm.TookOffice] command (extending every in-progress lease by one
// lease duration) and serves nothing until it is applied: that entry also
// guarantees the local state machine has applied everything committed by
// earlier leaders, so polls are prepared on current state. Leadership is
// noticed by a raft observer (raft's FSM is never blocked) and, as a
// fallback, by every call, which compares the current term with the term
// of the last TookOffice. The first leader of a new cluster proposes its
// local configuration (a raftfsm config command) before that, so every
// replica applies the same replicated configuration whatever it was
// started with.
//
// On a node that is not the leader every method returns a
// *[NotLeaderError] (errors.Is(err, [ErrNotLeader])) naming the leader.
//
// # Polls
//
// Polls are serialised: one at a time is prepared, proposed and waited
// for, so each is prepared on the state that includes the previous one
// and two polls never contend for the same job. A poll takes about one
// replication round trip (two in [TwoCommit] mode); workers poll every few
// seconds, so one leader serves thousands of workers. Other writes (blocks,
// operator commands) are proposed concurrently: Apply's version checks keep
// them consistent with a poll prepared before they applied.
//
// A retried poll (the worker's latest sequence number) is answered from the
// poll log without proposing anything, when its entry was applied; if it
// was not, the retry is prepared and proposed like a new poll.
//
// # Contexts
//
// Every method respects its context's cancellation and deadline. A write
// abandoned by its caller may still be committed; a poll abandoned that
// way still blocks the next poll until raft resolves it, so polls stay
// serialised.
type Service struct {
	r   *raft.Raft
	fsm *raftfsm.FSM
	o   options

	polls   chan struct{}   // poll semaphore
	pending <-chan struct{} // an abandoned poll's proposal; guarded by polls

	mu     sync.Mutex
	office *office

	obs       *raft.Observer
	obsCh     chan raft.Observation
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// office is the TookOffice proposal of one term.
type office struct {
	term  uint64
	ready chan struct{} // closed when the proposal is resolved
	err   error
}

// NewService returns a service proposing to r, whose FSM must be an [FSM]
// over f (the responses of raft.Apply are read as raftfsm results). It
// watches leadership from a goroutine until [Service.Close].
func NewService(r *raft.Raft, f *raftfsm.FSM, opts ...Option) *Service {
	o := options{clock: time.Now, applyTimeout: DefaultApplyTimeout, log: discardLogger()}
	for _, opt := range opts {
		opt(&o)
	}
	s := &Service{
		r: r, fsm: f, o: o,
		polls: make(chan struct{}, 1),
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

// Close stops watching leadership; afterwards calls that need office fail
// with a *[NotLeaderError] wrapping [ErrClosed]. It does not shut raft
// down.
func (s *Service) Close() error {
	s.closeOnce.Do(func() {
		s.r.DeregisterObserver(s.obs)
		close(s.stop)
		<-s.done
	})
	return nil
}

// FSM returns the local state machine, for reads that may be stale (on
// followers, say).
func (s *Service) FSM() *raftfsm.FSM { return s.fsm }

// Mode returns the poll mode.
func (s *Service) Mode() Mode { return s.o.mode }

// IsLeader reports whether this node is the leader and has applied its
// lease-extension command: it serves calls.
func (s *Service) IsLeader() bool {
	if s.r.State() != raft.Leader {
		return false
	}
	term := s.r.CurrentTerm()
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.office
	if o == nil || o.term != term {
		return false
	}
	select {
	case <-o.ready:
		return o.err == nil
	default:
		return false
	}
}

// watch proposes the lease extension as soon as the node becomes leader.
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
		if err := s.ensureOffice(ctx); err != nil && ctx.Err() == nil {
			s.o.log.Info("hraft: taking office failed", "err", err)
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

// ensureOffice returns once this term's TookOffice command is applied.
func (s *Service) ensureOffice(ctx context.Context) error {
	select {
	case <-s.stop:
		return s.closed()
	default:
	}
	if s.r.State() != raft.Leader {
		return s.notLeader(nil)
	}
	term := s.r.CurrentTerm()
	s.mu.Lock()
	o := s.office
	if o == nil || o.term != term {
		o = &office{term: term, ready: make(chan struct{})}
		s.office = o
		go s.takeOffice(o)
	}
	s.mu.Unlock()
	select {
	case <-o.ready:
	case <-ctx.Done():
		return ctx.Err()
	case <-s.stop:
		return s.closed()
	}
	if o.err != nil {
		s.mu.Lock()
		if s.office == o {
			s.office = nil // the next call tries again
		}
		s.mu.Unlock()
		return o.err
	}
	return nil
}

// takeOffice proposes the lease extension of o's term.
func (s *Service) takeOffice(o *office) {
	defer close(o.ready)
	if err := s.seedConfig(); err != nil {
		o.err = err
		return
	}
	_, id := s.r.LeaderWithID()
	cmd := &raftfsm.Command{Time: s.now(), TookOffice: &raftfsm.TookOffice{Leader: string(id)}}
	res, _, _, err := s.propose(context.Background(), cmd)
	if err != nil {
		o.err = err
		return
	}
	s.o.log.Info("hraft: took office", "term", o.term, "index", res.Index, "leases_extended", res.Count)
}

// seedConfig makes the first leader of a new cluster propose its local
// configuration as the log's first command, so that every replica applies
// the same replicated configuration whatever its local seed. A state
// machine that has applied any command (after a barrier, so that nothing
// committed is pending) keeps its replicated configuration.
func (s *Service) seedConfig() error {
	if idx, _, _ := s.fsm.LastApplied(); idx != 0 {
		return nil
	}
	if err := s.r.Barrier(s.o.applyTimeout).Error(); err != nil {
		return s.raftErr(err)
	}
	if idx, _, _ := s.fsm.LastApplied(); idx != 0 {
		return nil
	}
	cfg := s.fsm.Config()
	res, _, _, err := s.propose(context.Background(), &raftfsm.Command{Config: &cfg})
	if err != nil {
		return err
	}
	s.o.log.Info("hraft: seeded the replicated configuration", "index", res.Index)
	return nil
}

func (s *Service) now() int64 { return s.o.clock().UnixNano() }

// notLeader builds the error returned on a follower.
func (s *Service) notLeader(cause error) error {
	addr, id := s.r.LeaderWithID()
	return &NotLeaderError{LeaderAddr: addr, LeaderID: id, Cause: cause}
}

// closed is the error of a call on a closed service: the node serves
// nothing, the client should find the leader.
func (s *Service) closed() error { return &NotLeaderError{Cause: ErrClosed} }

// raftErr translates an error of a raft future.
func (s *Service) raftErr(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipLost),
		errors.Is(err, raft.ErrLeadershipTransferInProgress), errors.Is(err, raft.ErrRaftShutdown),
		errors.Is(err, raft.ErrAbortedByRestore):
		return s.notLeader(err)
	default:
		return fmt.Errorf("hraft: propose: %w", err)
	}
}

// propose encodes cmd (stamped with the leader's clock, in the version the
// cluster allows: raftfsm.FSM.Encode), proposes it and waits for its result. done is closed once raft resolved
// the proposal; when ctx ends first, propose returns ctx's error and the
// proposal goes on.
func (s *Service) propose(ctx context.Context, cmd *raftfsm.Command) (*raftfsm.Result, uint64, <-chan struct{}, error) {
	data, err := s.fsm.Encode(cmd, s.now())
	if err != nil {
		return nil, 0, nil, fmt.Errorf("hraft: encode command: %w", err)
	}
	timeout := s.o.applyTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, nil, err
	}
	if timeout <= 0 {
		return nil, 0, nil, context.DeadlineExceeded
	}
	fut := s.r.Apply(data, timeout)
	done := make(chan struct{})
	go func() {
		_ = fut.Error()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return nil, 0, done, ctx.Err()
	}
	if err := fut.Error(); err != nil {
		return nil, 0, done, s.raftErr(err)
	}
	switch v := fut.Response().(type) {
	case *raftfsm.Result:
		return v, fut.Index(), done, nil
	case error:
		return nil, fut.Index(), done, v
	default:
		return nil, fut.Index(), done, fmt.Errorf("hraft: entry %d: %T: %w", fut.Index(), v, ErrUnexpectedResponse)
	}
}

// write waits for office, then proposes cmd.
func (s *Service) write(ctx context.Context, cmd *raftfsm.Command) (*raftfsm.Result, error) {
	if err := s.ensureOffice(ctx); err != nil {
		return nil, err
	}
	res, _, _, err := s.propose(ctx, cmd)
	return res, err
}

// Poll serves a worker's poll: a retried request is answered from the poll
// log; otherwise the poll is prepared with the leader's clock, proposed
// (after a prepare entry in [TwoCommit] mode) and the response the
// replicas' Apply produced is returned. A stale request (older than the
// worker's latest) returns an error wrapping [raftfsm.ErrStaleRequest], a
// malformed one [raftfsm.ErrInvalidRequest]. Polls are serialised (see
// [Service]). Its signature is worker.Client's.
func (s *Service) Poll(ctx context.Context, req *ck.PollRequest) (*ck.PollResponse, error) {
	if req == nil {
		return nil, fmt.Errorf("hraft: poll: nil request: %w", raftfsm.ErrInvalidRequest)
	}
	if err := req.Validate(); err != nil {
		return nil, fmt.Errorf("hraft: poll: %w: %w", raftfsm.ErrInvalidRequest, err)
	}
	select {
	case s.polls <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.stop:
		return nil, s.closed()
	}
	defer func() { <-s.polls }()
	if s.pending != nil {
		select {
		case <-s.pending:
			s.pending = nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if err := s.ensureOffice(ctx); err != nil {
		return nil, err
	}
	if resp, ok := s.fsm.Recorded(req.WorkerID, req.Seq); ok {
		return resp, nil
	}
	var token uint64
	if s.o.mode == TwoCommit {
		prep := &raftfsm.Command{PreparePoll: &raftfsm.PreparePoll{WorkerID: req.WorkerID, Seq: req.Seq}}
		_, idx, done, err := s.propose(ctx, prep)
		if err != nil {
			s.pending = done
			return nil, err
		}
		token = idx
	}
	cmd, err := s.fsm.Prepare(req, s.now())
	if err != nil {
		return nil, fmt.Errorf("hraft: poll: %w", err)
	}
	if token != 0 {
		cmd.Poll.Update.TokenIndex = token
	}
	res, _, done, err := s.propose(ctx, cmd)
	if err != nil {
		s.pending = done
		return nil, err
	}
	if res.Poll == nil {
		return nil, fmt.Errorf("hraft: poll: entry %d: no response: %w", res.Index, ErrUnexpectedResponse)
	}
	return res.Poll, nil
}

// AddBlocks proposes newly written blocks, in commands of at most
// [raftfsm.MaxBlocksPerCommand] blocks, and returns what became of each,
// in order (a duplicate is refused individually). On error the results of
// the commands already applied are returned with it.
func (s *Service) AddBlocks(ctx context.Context, blocks []ck.BlockMeta) ([]raftfsm.BlockResult, error) {
	out := make([]raftfsm.BlockResult, 0, len(blocks))
	for len(blocks) > 0 {
		n := min(len(blocks), raftfsm.MaxBlocksPerCommand)
		res, err := s.write(ctx, &raftfsm.Command{AddBlocks: &raftfsm.AddBlocks{Blocks: blocks[:n]}})
		if err != nil {
			return out, err
		}
		out = append(out, res.Blocks...)
		blocks = blocks[n:]
	}
	return out, nil
}

// Operator proposes an operator command; an error wrapping
// [raftfsm.ErrOperator] says it could not be carried out.
func (s *Service) Operator(ctx context.Context, op raftfsm.Operator) (*raftfsm.Result, error) {
	return s.write(ctx, &raftfsm.Command{Operator: &op})
}

// SetConfig proposes a new replicated configuration.
func (s *Service) SetConfig(ctx context.Context, cfg raftfsm.Config) error {
	_, err := s.write(ctx, &raftfsm.Command{Config: &cfg})
	return err
}

// Retention proposes a retention command; the result lists the blocks
// dropped and the jobs cancelled.
func (s *Service) Retention(ctx context.Context, r raftfsm.Retention) (*raftfsm.Result, error) {
	return s.write(ctx, &raftfsm.Command{Retention: &r})
}

// Watermark proposes the start time of the oldest query still reading.
func (s *Service) Watermark(ctx context.Context, oldestReader int64) error {
	_, err := s.write(ctx, &raftfsm.Command{Watermark: &raftfsm.Watermark{OldestReader: oldestReader}})
	return err
}

// SetClusterVersion proposes raising the command version the cluster
// writes.
func (s *Service) SetClusterVersion(ctx context.Context, v byte) error {
	_, err := s.write(ctx, &raftfsm.Command{ClusterVersion: &raftfsm.SetClusterVersion{Version: v}})
	return err
}

// Propose proposes any command and returns its result; a zero Time is
// stamped with the leader's clock. Polls should go through [Service.Poll],
// which serialises them.
func (s *Service) Propose(ctx context.Context, cmd *raftfsm.Command) (*raftfsm.Result, error) {
	if cmd == nil {
		return nil, fmt.Errorf("hraft: nil command: %w", raftfsm.ErrInvalidCommand)
	}
	if err := cmd.Validate(); err != nil {
		return nil, err
	}
	return s.write(ctx, cmd)
}

// read makes the local state machine safe for a linearizable read: this
// term's TookOffice is applied (so is everything committed before it, and
// every write this leader acknowledged since), and raft confirms the node
// is still the leader.
func (s *Service) read(ctx context.Context) error {
	if err := s.ensureOffice(ctx); err != nil {
		return err
	}
	fut := s.r.VerifyLeader()
	done := make(chan error, 1)
	go func() { done <- fut.Error() }()
	select {
	case err := <-done:
		if err != nil {
			return s.raftErr(err)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stats returns the statistics of the state machine, read on the leader.
func (s *Service) Stats(ctx context.Context) (raftfsm.Stats, error) {
	if err := s.read(ctx); err != nil {
		return raftfsm.Stats{}, err
	}
	return s.fsm.Stats(), nil
}

// Jobs lists jobs matching the filter, a page at a time (see
// [raftfsm.FSM.Jobs]), read on the leader.
func (s *Service) Jobs(ctx context.Context, flt scheduler.Filter, cursor string, limit int) ([]ck.JobState, string, error) {
	if err := s.read(ctx); err != nil {
		return nil, "", err
	}
	jobs, next := s.fsm.Jobs(flt, cursor, limit)
	return jobs, next, nil
}

// Job returns the state and plan of the named job, read on the leader.
func (s *Service) Job(ctx context.Context, name string) (ck.JobState, ck.JobPlan, bool, error) {
	if err := s.read(ctx); err != nil {
		return ck.JobState{}, ck.JobPlan{}, false, err
	}
	js, plan, ok := s.fsm.Job(name)
	return js, plan, ok, nil
}

// Quarantined lists quarantined blocks, a page at a time, read on the
// leader.
func (s *Service) Quarantined(ctx context.Context, cursor string, limit int) ([]planner.QuarantinedBlock, string, error) {
	if err := s.read(ctx); err != nil {
		return nil, "", err
	}
	bs, next := s.fsm.Quarantined(cursor, limit)
	return bs, next, nil
}

// Index returns a read-only view of the block index, opened on the leader.
func (s *Service) Index(ctx context.Context) (*index.View, error) {
	if err := s.read(ctx); err != nil {
		return nil, err
	}
	return s.fsm.Index(), nil
}
