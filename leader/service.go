package leader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/internal/ident"
	"github.com/compactkit/compactkit/raftfsm"
)

// Defaults of the service's options.
const (
	// defaultProposeTimeout bounds one proposal when the caller's context
	// has no earlier deadline, and how long an abandoned poll's proposal
	// may hold the next poll back.
	defaultProposeTimeout = 10 * time.Second
	// defaultRetries bounds how often a poll is prepared again after a
	// conflict or an unknown outcome.
	defaultRetries = 8
)

// Option configures a [Service].
type Option func(*options)

type options struct {
	twoCommit bool
	clock     func() time.Time
	timeout   time.Duration
	retries   int
	backoff   func(attempt int) time.Duration
	log       *slog.Logger
	keys      []TokenKey // nil: tokens are not signed
	// staleAfter: from this conflict on, a poll is appended on any state
	// (0: never); skipIdle: idle polls are answered without an entry.
	staleAfter int
	skipIdle   bool
}

// WithStaleAfter makes a poll that lost k races for the log (ErrConflict)
// go in on whatever state the log has when its turn comes, instead of
// being prepared again on the newest: it is proposed as not depending on
// the state (preparedAt 0). That is safe — Apply checks every change of a
// poll against the state it meets, as on Raft, where prepared polls are
// never refused — and it bounds the retries under contention; a change
// overtaken meanwhile (a job another worker got first) is skipped, and the
// worker polls again. For logs that refuse stale appends (the bucket log);
// 0, the default, prepares again every time.
func WithStaleAfter(k int) Option { return func(o *options) { o.staleAfter = max(k, 0) } }

// WithSkipIdlePolls answers a poll that reports nothing and gets nothing
// (no free slot, or nothing ready at the leader's clock) without
// appending an entry: for logs where an entry costs a write to a bucket.
// Such a poll then leaves no record: the poll log and the worker's
// last-seen time show only polls that did something. Every poll first
// brings the replica up to date (a barrier), so that idle is judged on
// the newest state.
func WithSkipIdlePolls() Option { return func(o *options) { o.skipIdle = true } }

// WithTwoCommit makes every poll go through the log as two entries
// instead of one: a read-only prepare entry ([raftfsm.PreparePoll]) is
// committed first, then the plan is prepared on the state that includes it
// and the update committed, and assignment tokens are the prepare entry's
// index (Pyroscope v2's protocol). By default a poll is one entry, the
// prepared plan update, whose index is the assignments' token.
func WithTwoCommit() Option { return func(o *options) { o.twoCommit = true } }

// WithClock sets the leader's clock that stamps commands (default, or
// nil: time.Now). Tests inject a fake one.
func WithClock(now func() time.Time) Option { return func(o *options) { o.clock = now } }

// WithProposeTimeout sets how long one proposal may take when the caller's
// context has no earlier deadline (default, or not positive: 10 seconds),
// and how long an abandoned poll's proposal may hold the next poll back.
func WithProposeTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// WithRetries sets how many times a poll is prepared again after a
// conflict or an unknown outcome (default, or negative: 8), and the wait
// before each retry (default none; the bucket log wants jittered backoff).
func WithRetries(n int, backoff func(attempt int) time.Duration) Option {
	return func(o *options) { o.retries, o.backoff = n, backoff }
}

// WithLogger sets the service's logger (default, or nil: discard).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// Service is the leader-side entry point a host's RPC layer calls — worker
// polls, new blocks, operator commands, consistent queries — over any
// [Log]. See the package documentation for what it guarantees.
type Service struct {
	log Log
	fsm *raftfsm.FSM
	o   options

	polls   chan struct{}   // the poll semaphore: one poll at a time
	pending <-chan struct{} // an abandoned poll's proposal; guarded by polls

	metrics *metrics

	mu     sync.Mutex
	office *office
	closed chan struct{}
	once   sync.Once
}

// office is the took-office step of one term.
type office struct {
	term  uint64
	ready chan struct{} // closed when the step is resolved
	err   error
}

// New returns a service proposing to log, whose applied compactkit
// entries go to fsm.
func New(log Log, fsm *raftfsm.FSM, opts ...Option) *Service {
	o := options{retries: defaultRetries}
	for _, opt := range opts {
		opt(&o)
	}
	if o.clock == nil {
		o.clock = time.Now
	}
	if o.timeout <= 0 {
		o.timeout = defaultProposeTimeout
	}
	if o.retries < 0 {
		o.retries = defaultRetries
	}
	if o.log == nil {
		o.log = slog.New(slog.DiscardHandler)
	}
	return &Service{log: log, fsm: fsm, o: o, polls: make(chan struct{}, 1), closed: make(chan struct{}), metrics: newMetrics()}
}

// Close makes every later call fail with a *[NotLeaderError] wrapping
// [ErrClosed]. It closes nothing of the log's.
func (s *Service) Close() error {
	s.once.Do(func() { close(s.closed) })
	return nil
}

// FSM returns the local state machine, for reads that may be stale (on
// followers, say).
func (s *Service) FSM() *raftfsm.FSM { return s.fsm }

// Leader reports what this node knows of who leads: whether it does, in
// which term, and the leader's ID and address when known.
func (s *Service) Leader() Leadership { return s.log.Leader() }

// IsLeader reports whether this node leads and has taken office in its
// current term: it serves calls.
func (s *Service) IsLeader() bool {
	l := s.log.Leader()
	if !l.Leads {
		return false
	}
	s.mu.Lock()
	o := s.office
	s.mu.Unlock()
	if o == nil || o.term != l.Term {
		return false
	}
	select {
	case <-o.ready:
		return o.err == nil
	default:
		return false
	}
}

// TakeOffice returns once this node, leading, has taken office in its
// current term: everything committed before is applied locally, the first
// leader of a new log has proposed its configuration, and the term's
// [raftfsm.TookOffice] command (extending every lease in progress; once
// per term, whoever asks first) is applied. Every write and read takes
// office first; a host calls it as soon as it learns that it leads. Unlike
// [Service.Read] it adds no barrier of its own, so a host whose barriers
// are log entries numbers its entries the same whenever it calls it.
func (s *Service) TakeOffice(ctx context.Context) error {
	_, err := s.enter(ctx)
	return err
}

// enter is TakeOffice that also says whether this call started the
// took-office step: its barrier then began after the call did.
func (s *Service) enter(ctx context.Context) (started bool, err error) {
	select {
	case <-s.closed:
		return false, s.closedErr()
	default:
	}
	l := s.log.Leader()
	if !l.Leads {
		return false, notLeader(l, nil)
	}
	s.mu.Lock()
	o := s.office
	if o == nil || o.term != l.Term {
		o = &office{term: l.Term, ready: make(chan struct{})}
		s.office = o
		started = true
		go s.takeOffice(o, l)
	}
	s.mu.Unlock()
	select {
	case <-o.ready:
	case <-ctx.Done():
		return started, ctx.Err()
	case <-s.closed:
		return started, s.closedErr()
	}
	if o.err != nil {
		s.mu.Lock()
		if s.office == o {
			s.office = nil // the next call tries again
		}
		s.mu.Unlock()
		return started, o.err
	}
	return started, nil
}

// takeOffice runs the took-office step of o's term, whoever asked for it:
// a caller that gives up does not abandon it.
func (s *Service) takeOffice(o *office, l Leadership) {
	defer close(o.ready)
	ctx, cancel := context.WithTimeout(context.Background(), s.o.timeout)
	defer cancel()
	if err := s.log.Barrier(ctx); err != nil {
		o.err = fmt.Errorf("leader: take office: barrier: %w", err)
		return
	}
	if idx, _, _ := s.fsm.LastApplied(); idx == 0 {
		// The first leader of a new log proposes its configuration, so
		// that every replica applies the same one whatever it was started
		// with.
		cfg := s.fsm.Config()
		if _, err := s.propose(ctx, &raftfsm.Command{Config: &cfg}, 0); err != nil {
			o.err = fmt.Errorf("leader: take office: seed configuration: %w", err)
			return
		}
	}
	a, err := s.propose(ctx, &raftfsm.Command{TookOffice: &raftfsm.TookOffice{Leader: l.LeaderID}}, 0)
	if err == nil && a.Term != o.term {
		err = notLeader(s.log.Leader(), fmt.Errorf("took office in term %d, leading term %d", a.Term, o.term))
	}
	if err != nil {
		o.err = fmt.Errorf("leader: take office: %w", err)
		return
	}
	s.o.log.Info("leader: took office", "term", o.term, "index", a.Index, "leases_extended", a.Result.Count)
}

func (s *Service) now() int64 { return s.o.clock().UnixNano() }

func (s *Service) closedErr() error { return &NotLeaderError{Cause: ErrClosed} }

// propose encodes cmd (stamped with the leader's clock, in the version the
// cluster allows) and proposes it, waiting at most the propose timeout. A
// refusal by the state machine is returned as the error.
func (s *Service) propose(ctx context.Context, cmd *raftfsm.Command, preparedAt uint64) (Applied, error) {
	data, err := s.fsm.Encode(cmd, s.now())
	if err != nil {
		return Applied{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.o.timeout)
	defer cancel()
	a, err := s.log.Propose(ctx, data, preparedAt)
	if err != nil {
		return Applied{}, err
	}
	if a.Err != nil {
		return a, a.Err
	}
	if a.Result == nil {
		return a, fmt.Errorf("leader: entry %d: no result: %w", a.Index, ErrOutcomeUnknown)
	}
	return a, nil
}

// write takes office, then proposes cmd.
func (s *Service) write(ctx context.Context, cmd *raftfsm.Command) (*raftfsm.Result, error) {
	if err := s.TakeOffice(ctx); err != nil {
		return nil, err
	}
	a, err := s.propose(ctx, cmd, 0)
	return a.Result, err
}

// Poll serves a worker's poll. A retried request (the worker's latest
// sequence number) is answered from the poll log; otherwise the poll is
// prepared with the leader's clock, proposed (after a prepare entry in
// [WithTwoCommit]) and the response the replicas' Apply produced is
// returned. Polls are serialised — all of them, not per worker: two polls
// prepared on the same state would contend for the same jobs, and the
// second worker would get nothing.
//
// A context already done when the poll would be proposed proposes
// nothing; one cancelled while its proposal is in flight returns at once,
// and the proposal may still apply (the next poll waits for it).
//
// A conflict or an unknown outcome is resolved here: the service waits
// until the log's state is applied, answers from the poll log if the
// poll was applied, and otherwise prepares it again (same sequence
// number, so it acts at most once), up to the configured retries. A
// request the state machine refuses — malformed, inconsistent, or older
// than the worker's latest — returns an error wrapping
// [compactkit.ErrRejected] and the raftfsm sentinel. Its signature is
// worker.Client's.
func (s *Service) Poll(ctx context.Context, req *ck.PollRequest) (*ck.PollResponse, error) {
	start := s.o.clock()
	if req == nil {
		return nil, fmt.Errorf("leader: poll: nil request: %w: %w", ck.ErrRejected, raftfsm.ErrInvalidRequest)
	}
	if err := req.Validate(); err != nil {
		s.o.log.Warn("leader: poll refused", "worker", ck.PublicWorkerName(req.WorkerID), "seq", req.Seq, "err", err)
		return nil, fmt.Errorf("leader: poll: %w: %w: %w", ck.ErrRejected, raftfsm.ErrInvalidRequest, err)
	}
	select {
	case s.polls <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.closed:
		return nil, s.closedErr()
	}
	defer func() { <-s.polls }()
	if s.pending != nil {
		// An abandoned poll's proposal may still apply: prepare on the
		// state that includes it.
		select {
		case <-s.pending:
			s.pending = nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if err := s.TakeOffice(ctx); err != nil {
		return nil, err
	}
	signed, forged := s.checkSignatures(req)
	conflicts := 0
	for attempt := 0; ; attempt++ {
		resp, err := s.pollOnce(ctx, signed, s.o.staleAfter > 0 && conflicts >= s.o.staleAfter)
		if err == nil {
			s.measurePoll(start, resp)
			return s.signResponse(resp, req.WorkerID, forged), nil
		}
		if !(errors.Is(err, ErrConflict) || errors.Is(err, ErrOutcomeUnknown)) || attempt >= s.o.retries || ctx.Err() != nil {
			return nil, err
		}
		if errors.Is(err, ErrConflict) {
			conflicts++
		}
		s.o.log.Debug("leader: poll prepared again", "worker", ck.PublicWorkerName(req.WorkerID), "seq", req.Seq, "attempt", attempt+1, "err", err)
		if s.o.backoff != nil {
			select {
			case <-time.After(s.o.backoff(attempt)):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if errors.Is(err, ErrOutcomeUnknown) {
			// Learn whether the lost proposal committed: after the
			// barrier, the poll log answers if it was applied.
			if err := s.log.Barrier(ctx); err != nil {
				return nil, err
			}
		}
	}
}

// pollOnce answers req from the poll log, or prepares and proposes it —
// on any state if stale (WithStaleAfter).
func (s *Service) pollOnce(ctx context.Context, req *ck.PollRequest, stale bool) (*ck.PollResponse, error) {
	if resp, ok := s.fsm.Recorded(req.WorkerID, req.Seq); ok {
		return resp, nil
	}
	var token uint64
	if s.o.twoCommit {
		prep := &raftfsm.Command{PreparePoll: &raftfsm.PreparePoll{WorkerID: req.WorkerID, Seq: req.Seq}}
		a, err := s.proposePoll(ctx, prep, 0)
		if err != nil {
			return nil, err
		}
		token = a.Index
	}
	if s.o.skipIdle {
		// "Idle" is judged on the newest state (and a log whose replica
		// follows the tip only when it reads it needs the read anyway).
		if err := s.log.Barrier(ctx); err != nil {
			return nil, err
		}
	}
	at, _, _ := s.fsm.LastApplied()
	cmd, err := s.fsm.Prepare(req, s.now())
	if err != nil {
		if errors.Is(err, raftfsm.ErrInvalidRequest) {
			s.o.log.Warn("leader: poll refused", "worker", ck.PublicWorkerName(req.WorkerID), "seq", req.Seq, "err", err)
		}
		return nil, rejected(err)
	}
	if token != 0 {
		cmd.Poll.Update.TokenIndex = token
	}
	if s.o.skipIdle && token == 0 && len(cmd.Poll.Reports) == 0 && len(cmd.Poll.Update.Changes) == 0 {
		return &ck.PollResponse{}, nil // what applying it would answer
	}
	if stale {
		at = 0
	}
	a, err := s.proposePoll(ctx, cmd, at)
	if err != nil {
		return nil, rejected(err)
	}
	if a.Result.Poll == nil {
		return nil, fmt.Errorf("leader: poll: entry %d: no response: %w", a.Index, ErrOutcomeUnknown)
	}
	s.logOutcomes(req, a)
	if !a.Result.Replayed {
		s.measureCompletions(a.Result)
	}
	return a.Result.Poll, nil
}

// logOutcomes logs, once per applied poll, what an operator wants to know
// of it: failures reported, jobs excluded at their failure limit, blocks
// quarantined. A replayed poll changed nothing and logs nothing.
func (s *Service) logOutcomes(req *ck.PollRequest, a Applied) {
	if a.Result.Replayed {
		return
	}
	worker := ck.PublicWorkerName(req.WorkerID)
	for _, c := range a.Result.Changes {
		if !c.Applied {
			continue
		}
		reason := ""
		if c.Kind == ck.ChangeFail {
			for i := range req.Updates {
				if req.Updates[i].Job == c.Job {
					reason = ident.ClipReason(req.Updates[i].Reason)
				}
			}
		}
		switch {
		case c.Excluded && c.Kind == ck.ChangeFail:
			s.o.log.Warn("leader: job excluded at its failure limit; it runs again only when an operator retries it",
				"job", c.Job, "worker", worker, "reason", reason, "entry", a.Index)
		case c.Excluded:
			s.o.log.Warn("leader: job excluded at its failure limit: its last lease expired; it runs again only when an operator retries it",
				"job", c.Job, "entry", a.Index)
		case c.Kind == ck.ChangeFail:
			s.o.log.Info("leader: job failed; it will be retried", "job", c.Job, "worker", worker, "reason", reason, "entry", a.Index)
		case c.Kind == ck.ChangeEvict:
			s.o.log.Warn("leader: excluded job evicted from a full queue; its sources are quarantined until an operator requeues them",
				"job", c.Job, "blocks", c.Quarantined, "entry", a.Index)
		}
	}
}

// proposePoll proposes a poll's command on a goroutine, so that a caller
// who gives up leaves the proposal to finish: the next poll waits for it
// (Service.pending), bounded by the propose timeout.
func (s *Service) proposePoll(ctx context.Context, cmd *raftfsm.Command, preparedAt uint64) (Applied, error) {
	type outcome struct {
		a   Applied
		err error
	}
	if err := ctx.Err(); err != nil {
		return Applied{}, err // a caller already gone proposes nothing
	}
	ch := make(chan outcome, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		a, err := s.propose(context.WithoutCancel(ctx), cmd, preparedAt)
		ch <- outcome{a, err}
	}()
	select {
	case o := <-ch:
		return o.a, o.err
	case <-ctx.Done():
		s.pending = done
		return Applied{}, ctx.Err()
	}
}

// rejected marks the state machine's refusal of a poll as one the worker
// must not retry.
func rejected(err error) error {
	if errors.Is(err, raftfsm.ErrInvalidRequest) || errors.Is(err, raftfsm.ErrStaleRequest) {
		return fmt.Errorf("leader: poll: %w: %w", ck.ErrRejected, err)
	}
	return err
}

// AddBlocks proposes newly written blocks, in commands of at most the
// replicated limit's blocks (raftfsm.Limits.MaxBlocks), and returns what
// became of each, in order (a duplicate is refused individually). On error
// the results of the commands already applied are returned with it.
func (s *Service) AddBlocks(ctx context.Context, blocks []ck.BlockMeta) ([]raftfsm.BlockResult, error) {
	out := make([]raftfsm.BlockResult, 0, len(blocks))
	limit := s.fsm.Config().Limits.MaxBlocks
	if limit <= 0 {
		limit = raftfsm.DefaultLimits.MaxBlocks
	}
	for len(blocks) > 0 {
		n := min(len(blocks), limit)
		res, err := s.write(ctx, &raftfsm.Command{AddBlocks: &raftfsm.AddBlocks{Blocks: blocks[:n]}})
		if err != nil {
			return out, err
		}
		out = append(out, res.Blocks...)
		blocks = blocks[n:]
	}
	return out, nil
}

// Propose proposes a command other than a poll — an operator or policy
// command, a retention, a reader watermark, a configuration, a cluster
// version — and returns its result; the leader's clock stamps it, and the
// service takes office first. A malformed command is refused before it is
// proposed with an error wrapping [raftfsm.ErrInvalidCommand] (and, for a
// policy under which work could never start, policy.ErrNeverOpens or
// policy.ErrInvalid); one the state machine refuses when applying it (an
// operator command on an unknown job, too many tenant policies) wraps
// [raftfsm.ErrOperator]. An operator command carries its issuer's name
// (Operator.By) in the entry. Polls go through [Service.Poll], which
// serialises them, and new blocks through [Service.AddBlocks].
func (s *Service) Propose(ctx context.Context, cmd *raftfsm.Command) (*raftfsm.Result, error) {
	if cmd == nil {
		return nil, fmt.Errorf("leader: nil command: %w", raftfsm.ErrInvalidCommand)
	}
	if cmd.Poll != nil || cmd.PreparePoll != nil {
		return nil, fmt.Errorf("leader: polls go through Service.Poll: %w", raftfsm.ErrInvalidCommand)
	}
	if err := cmd.Validate(); err != nil {
		return nil, err
	}
	return s.write(ctx, cmd)
}

// Read returns the local state machine once it is safe for a
// linearizable read: this node leads, has taken office in its term (so
// everything committed before, and every write it acknowledged since, is
// applied), and a barrier confirms it still leads. Taking office proposes
// the term's [raftfsm.TookOffice] command, which extends every lease in
// progress. Read the state with the
// state machine's queries ([raftfsm.FSM.Stats], [raftfsm.FSM.Jobs],
// [raftfsm.FSM.Index], ...); [Service.FSM] gives the same state machine
// without the check, for reads that may be stale (on followers, say).
func (s *Service) Read(ctx context.Context) (*raftfsm.FSM, error) {
	started, err := s.enter(ctx)
	if err != nil {
		return nil, err
	}
	// A took-office step this call started ran its own barrier after the
	// call began: no second one is needed.
	if !started {
		if err := s.log.Barrier(ctx); err != nil {
			return nil, err
		}
	}
	if l := s.log.Leader(); !l.Leads {
		return nil, notLeader(l, nil)
	}
	return s.fsm, nil
}
