package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/lease"
)

// Worker runs compaction jobs for a leader: see the package documentation.
// Create one with [New] and call [Worker.Run] once. Its methods are safe for
// concurrent use.
type Worker struct {
	client Client
	store  blockmerge.Store
	cfg    Config
	log    *slog.Logger
	runner Runner
	guard  fencing.Guard

	started atomic.Bool
	// wake asks the loop for a poll now: a job ended, a keeper wants a
	// renewal. Capacity 1; signals coalesce.
	wake chan struct{}

	// afterMerge, when set (tests), is called by a job after its merge
	// returned and before the worker decides how the job ended.
	afterMerge func(job string)

	mu       sync.Mutex
	nextSeq  uint64          // the sequence number of the next request built
	held     map[string]*job // the jobs the worker reports, by name
	running  int             // job goroutines alive
	alive    map[string]int  // job goroutines alive, by job name (for the guard)
	stopping bool            // shutting down: no new jobs, no free slots
	jobsCtx  context.Context // parent of the keepers; cancelled at shutdown
	stats    Stats
}

// New returns a worker that polls client for jobs and runs them over store.
// It returns an error wrapping [ErrInvalidConfig] if client or store is nil or the
// configuration is invalid.
func New(client Client, store blockmerge.Store, cfg Config) (*Worker, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: nil client", ErrInvalidConfig)
	}
	if store == nil {
		return nil, fmt.Errorf("%w: nil store", ErrInvalidConfig)
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	log := cfg.Logger.With("worker", cfg.ID)
	runner := cfg.Runner
	if runner == nil {
		runner = mergeRunner(cfg.MergeOptions)
	}
	return &Worker{
		client:  client,
		store:   store,
		cfg:     cfg,
		log:     log,
		runner:  runner,
		wake:    make(chan struct{}, 1),
		nextSeq: 1,
		held:    make(map[string]*job),
		alive:   make(map[string]int),
	}, nil
}

// ID returns the worker's ID.
func (w *Worker) ID() string { return w.cfg.ID }

// Stats returns a snapshot of the worker's counters.
func (w *Worker) Stats() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.stats
	s.JobsHeld = len(w.held)
	s.JobsRunning = w.running
	return s
}

// inflight is a request built by the loop, with what it needs to interpret
// the answer.
type inflight struct {
	req *compactkit.PollRequest
	// sentAt is the local time the request was first sent: leases granted
	// in its answer are measured from then, even if a retry got the
	// answer (the leader may have applied the first attempt).
	sentAt time.Time
	// jobs are the jobs reported, by name, with the status reported.
	jobs map[string]reported
	// more says that reports that cannot wait (a result, a renewal asked
	// for) were left for the next poll (Config.MaxReports).
	more bool
}

type reported struct {
	j      *job
	status compactkit.ReportStatus
}

// Run polls the leader and runs jobs until ctx is done, then shuts down
// gracefully (see the package documentation) and returns. It returns nil
// after a complete shutdown, an error wrapping [ErrShutdown] if the jobs did
// not stop or the final poll was not answered within
// [Config.ShutdownTimeout], and [ErrAlreadyStarted] if called more than once.
func (w *Worker) Run(ctx context.Context) error {
	if !w.started.CompareAndSwap(false, true) {
		return ErrAlreadyStarted
	}
	jobsCtx, cancelJobs := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancelJobs(ErrShutdown)
	w.mu.Lock()
	w.jobsCtx = jobsCtx
	w.mu.Unlock()
	w.log.Info("worker started", "concurrency", w.cfg.Concurrency, "poll_interval", w.cfg.PollInterval)

	var pending *inflight
	rejectBackoff := w.cfg.RetryBackoff
	for ctx.Err() == nil {
		select { // whatever asked for a poll until now is in this one
		case <-w.wake:
		default:
		}
		fl := w.build()
		resp, err := w.send(ctx, fl)
		wait := w.cfg.PollInterval
		switch {
		case errors.Is(err, compactkit.ErrRejected):
			// Not applied: the next request, with the failures the
			// rejection turned the successes into, after a backoff.
			w.reject(fl, err)
			wait = rejectBackoff
			rejectBackoff = min(2*rejectBackoff, max(w.cfg.RetryBackoff, w.cfg.PollInterval))
		case err != nil:
			pending = fl // maybe applied: retried at shutdown
		default:
			w.handle(fl, resp)
			rejectBackoff = w.cfg.RetryBackoff
			if fl.more {
				wait = 0 // the reports left out go at once
			}
		}
		if pending != nil {
			break
		}

		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-w.wake:
		case <-timer.C:
		}
		timer.Stop()
	}
	return w.shutdown(ctx, cancelJobs, pending)
}

// shutdown cancels the jobs, waits for them to stop, then retries the
// pending request if any and sends the final poll.
func (w *Worker) shutdown(ctx context.Context, cancelJobs context.CancelCauseFunc, pending *inflight) error {
	w.log.Info("worker shutting down")
	w.mu.Lock()
	w.stopping = true
	w.mu.Unlock()
	cancelJobs(ErrShutdown)

	var errs []error
	base := context.WithoutCancel(ctx)
	wctx, cancel := context.WithTimeout(base, w.cfg.ShutdownTimeout)
	if n := w.waitJobs(wctx); n > 0 {
		errs = append(errs, fmt.Errorf("%w: %d jobs still running after %v", ErrShutdown, n, w.cfg.ShutdownTimeout))
	}
	cancel()

	pctx, cancel := context.WithTimeout(base, w.cfg.ShutdownTimeout)
	defer cancel()
	ok := true
	if pending != nil {
		resp, err := w.send(pctx, pending)
		switch {
		case errors.Is(err, compactkit.ErrRejected):
			w.reject(pending, err) // not applied: nothing was assigned
		case err != nil:
			ok = false
			errs = append(errs, fmt.Errorf("%w: request %d unanswered: %w", ErrShutdown, pending.req.Seq, err))
		default:
			w.handle(pending, resp)
		}
	}
	// A final poll reports every job held; another one only if the
	// leader rejected it (its successes are then reported failed) or its
	// answer left some (it should not).
	for round := 0; ok && round < 3 && w.holds(); round++ {
		fl := w.build()
		resp, err := w.send(pctx, fl)
		if errors.Is(err, compactkit.ErrRejected) {
			w.reject(fl, err)
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: final poll unanswered: %w", ErrShutdown, err))
			break
		}
		w.handle(fl, resp)
		if fl.more {
			round-- // a full poll of final reports is progress, not a retry
		}
	}

	// Whatever is still held was not accepted by the leader.
	w.mu.Lock()
	var stops []*job
	for _, name := range w.sortedHeldLocked() {
		j := w.held[name]
		w.forgetLocked(j, outcomeLost, fmt.Errorf("job %s: %w", name, ErrShutdown))
		stops = append(stops, j)
	}
	stats := w.stats
	w.mu.Unlock()
	stopKeepers(stops)
	w.log.Info("worker stopped", "completed", stats.JobsCompleted, "failed", stats.JobsFailed,
		"released", stats.JobsReleased, "lost", stats.JobsLost)
	return errors.Join(errs...)
}

// waitJobs waits until no job goroutine is left or ctx is done, and returns
// how many are left.
func (w *Worker) waitJobs(ctx context.Context) int {
	for {
		w.mu.Lock()
		n := w.running
		w.mu.Unlock()
		if n == 0 {
			return 0
		}
		select {
		case <-w.wake:
		case <-ctx.Done():
			w.mu.Lock()
			n = w.running
			w.mu.Unlock()
			return n
		}
	}
}

func (w *Worker) holds() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.held) > 0
}

// wakeup asks the loop for a poll now.
func (w *Worker) wakeup() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// build builds the next request: a status update for every job held, jobs
// whose lease was lost dropped first. A worker holding more jobs than
// Config.MaxReports reports at most that many: results first, then
// renewals asked for, then the jobs reported longest ago.
func (w *Worker) build() *inflight {
	w.mu.Lock()
	now := time.Now()
	req := &compactkit.PollRequest{WorkerID: w.cfg.ID, Seq: w.nextSeq}
	w.nextSeq++
	fl := &inflight{req: req, jobs: make(map[string]reported, min(len(w.held), w.cfg.MaxReports))}
	var stops []*job
	var held []*job
	for _, name := range w.sortedHeldLocked() {
		j := w.held[name]
		if !j.lost && !(j.late && j.reportedSeq == 0) {
			// A job assigned too late is reported released once, whatever
			// its local lease: the leader's runs from later.
			if cause := w.lostLocally(j, now); cause != nil {
				w.loseLocked(j, cause)
			}
		}
		if j.lost {
			w.forgetLocked(j, outcomeLost, nil)
			stops = append(stops, j)
			continue
		}
		held = append(held, j)
	}
	if len(held) > w.cfg.MaxReports {
		slices.SortStableFunc(held, func(a, b *job) int {
			return cmp.Or(cmp.Compare(a.urgency(), b.urgency()), cmp.Compare(a.reportedSeq, b.reportedSeq))
		})
		for _, j := range held[w.cfg.MaxReports:] {
			fl.more = fl.more || j.urgency() < urgencyNone
		}
		held = held[:w.cfg.MaxReports]
		slices.SortFunc(held, func(a, b *job) int { return strings.Compare(a.name, b.name) })
	}
	for _, j := range held {
		u := compactkit.StatusUpdate{Job: j.name, Token: j.token, Signature: j.sig}
		switch j.state {
		case jobRunning:
			u.Status = compactkit.ReportInProgress
			if w.stopping {
				// Still running after the shutdown's wait: give it back
				// all the same.
				u.Status = compactkit.ReportReleased
			}
		case jobSucceeded:
			u.Status = compactkit.ReportSuccess
			u.Outputs = j.outputs
		case jobFailed:
			u.Status = compactkit.ReportFailure
			u.Reason = j.reason
		case jobReleased:
			u.Status = compactkit.ReportReleased
		}
		j.reportedSeq = req.Seq
		req.Updates = append(req.Updates, u)
		fl.jobs[j.name] = reported{j: j, status: u.Status}
	}
	if !w.stopping {
		req.FreeSlots = int32(max(0, w.cfg.Concurrency-w.running))
	}
	w.mu.Unlock()
	stopKeepers(stops)
	return fl
}

// Urgencies of a report, most urgent first, when not all fit in one poll.
const (
	urgencyFinal   = iota // a result to report
	urgencyRenewal        // a renewal asked for
	urgencyNone           // in progress, nothing asked
)

// urgency ranks j's report. The worker's mu is held.
func (j *job) urgency() int {
	switch {
	case j.state != jobRunning:
		return urgencyFinal
	case len(j.waiters) > 0:
		return urgencyRenewal
	}
	return urgencyNone
}

// send sends the request until it is answered or ctx is done, with the same
// sequence number and content every time.
func (w *Worker) send(ctx context.Context, fl *inflight) (*compactkit.PollResponse, error) {
	backoff := w.cfg.RetryBackoff
	maxBackoff := max(w.cfg.RetryBackoff, w.cfg.PollInterval)
	for attempt := 0; ; attempt++ {
		if fl.sentAt.IsZero() {
			fl.sentAt = time.Now()
		}
		resp, err := w.client.Poll(ctx, fl.req)
		if err == nil {
			return resp, nil
		}
		if errors.Is(err, compactkit.ErrRejected) || ctx.Err() != nil {
			return nil, err
		}
		w.mu.Lock()
		w.stats.PollRetries++
		// Keepers waiting for this request learn of the failure; they
		// retry with their own backoff.
		w.resolveAllLocked(fl, 0, fmt.Errorf("worker: poll %d failed: %w", fl.req.Seq, err))
		w.mu.Unlock()
		w.log.Warn("poll failed; retrying", "seq", fl.req.Seq, "attempt", attempt+1, "retry_in", backoff, "error", err)
		timer := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, err
		case <-timer.C:
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// handle applies the leader's answer to fl.
func (w *Worker) handle(fl *inflight, resp *compactkit.PollResponse) {
	seq := fl.req.Seq
	if resp == nil {
		resp = &compactkit.PollResponse{}
	}
	w.mu.Lock()
	var stops []*job
	defer func() {
		w.mu.Unlock()
		stopKeepers(stops)
	}()
	w.stats.Polls++
	if err := resp.Validate(); err != nil {
		w.stats.BadResponses++
		w.log.Error("ignoring an invalid poll response", "seq", seq, "error", err)
		w.resolveAllLocked(fl, seq, fmt.Errorf("worker: invalid response to poll %d: %w", seq, err))
		return
	}

	// Replies about the jobs reported first: an assignment may reuse the
	// name of a job the same answer took away.
	answered := make(map[string]bool, len(fl.jobs))
	for i := range resp.Jobs {
		r := &resp.Jobs[i]
		if r.Outcome == compactkit.OutcomeAssigned {
			continue
		}
		rep, ok := fl.jobs[r.Job]
		if !ok || answered[r.Job] {
			w.log.Warn("ignoring a reply about a job not reported", "seq", seq, "job", r.Job, "outcome", r.Outcome)
			continue
		}
		answered[r.Job] = true
		j := rep.j
		if w.held[r.Job] != j {
			continue // dropped since (its lease ran out locally)
		}
		switch r.Outcome {
		case compactkit.OutcomeRenewed:
			if j.resolveLocked(seq, renewal{d: r.Lease}) {
				w.stats.Renewals++
			}
		case compactkit.OutcomeCompleted, compactkit.OutcomeAccepted:
			o := outcomeLost
			switch {
			case r.Outcome == compactkit.OutcomeCompleted && rep.status == compactkit.ReportSuccess:
				o = outcomeCompleted
			case r.Outcome == compactkit.OutcomeAccepted && rep.status == compactkit.ReportFailure:
				o = outcomeFailed
			case r.Outcome == compactkit.OutcomeAccepted && rep.status == compactkit.ReportReleased:
				o = outcomeReleased
			default:
				w.log.Warn("unexpected answer; dropping the job", "job", j.name, "token", j.token,
					"reported", rep.status, "outcome", r.Outcome)
			}
			w.forgetLocked(j, o, fmt.Errorf("job %s: leader answered %s", j.name, r.Outcome))
			stops = append(stops, j)
		case compactkit.OutcomeNoLease:
			cause := fmt.Errorf("job %s token %d: leader answered no lease: %w", j.name, j.token, lease.ErrLeaseLost)
			w.loseLocked(j, cause)
			w.forgetLocked(j, outcomeLost, cause)
			stops = append(stops, j)
		}
	}
	for name, rep := range fl.jobs {
		if !answered[name] && w.held[name] == rep.j {
			w.log.Warn("no reply about a reported job", "seq", seq, "job", name)
			rep.j.resolveLocked(seq, renewal{err: fmt.Errorf("worker: no reply about job %s in poll %d", name, seq)})
		}
	}

	for i := range resp.Jobs {
		r := &resp.Jobs[i]
		if r.Outcome != compactkit.OutcomeAssigned {
			continue
		}
		if r.Token == 0 {
			w.log.Error("ignoring an assignment with token 0", "job", r.Job)
			continue
		}
		if old := w.held[r.Job]; old != nil {
			if old.token == r.Token {
				w.log.Warn("ignoring a repeated assignment", "job", r.Job, "token", r.Token)
				continue
			}
			cause := fmt.Errorf("job %s token %d: reassigned with token %d: %w", old.name, old.token, r.Token, lease.ErrLeaseLost)
			w.loseLocked(old, cause)
			w.forgetLocked(old, outcomeLost, cause)
			stops = append(stops, old)
		}
		w.startLocked(r, fl.sentAt)
	}
}

// reject takes note that the leader rejected fl as invalid, without
// applying it. The only part of a request the leader checks against its
// state is a success report (its outputs against the job's plan), so every
// success fl reported becomes a failure, reported in the next request with
// the rejection as its reason: the job goes back to the leader, which
// tombstones the attempt's outputs, instead of the worker repeating a
// report that cannot be accepted while its leases run out.
func (w *Worker) reject(fl *inflight, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stats.Rejections++
	w.log.Error("leader rejected the request", "seq", fl.req.Seq, "error", err)
	w.resolveAllLocked(fl, fl.req.Seq, fmt.Errorf("worker: poll %d rejected: %w", fl.req.Seq, err))
	for _, name := range slices.Sorted(maps.Keys(fl.jobs)) {
		j := fl.jobs[name].j
		if w.held[name] != j || j.state != jobSucceeded {
			continue
		}
		j.state = jobFailed
		j.outputs = nil
		j.reason = reason(fmt.Errorf("the leader rejected the success report: %w", err))
		w.log.Warn("reporting the job failed instead", "job", name, "token", j.token)
	}
}

// resolveAllLocked answers the renewals waiting for fl (seq 0: only those
// waiting for this very request, on a transport failure).
func (w *Worker) resolveAllLocked(fl *inflight, seq uint64, err error) {
	if seq == 0 {
		seq = fl.req.Seq
	}
	for _, rep := range fl.jobs {
		if w.held[rep.j.name] == rep.j {
			rep.j.resolveLocked(seq, renewal{err: err})
		}
	}
}

func (w *Worker) sortedHeldLocked() []string {
	names := make([]string, 0, len(w.held))
	for name := range w.held {
		names = append(names, name)
	}
	slices.SortFunc(names, cmp.Compare)
	return names
}

func stopKeepers(jobs []*job) {
	for _, j := range jobs {
		j.keeper.Stop()
	}
}
