package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/lease"
)

// jobState is how far a held job got.
type jobState uint8

const (
	jobRunning   jobState = iota // reported in progress
	jobSucceeded                 // reported successful, with outputs
	jobFailed                    // reported failed, with a reason
	jobReleased                  // reported released (shutdown, no free slot, too late)
)

// outcome is how a job left the worker, for the stats.
type outcome uint8

const (
	outcomeCompleted outcome = iota
	outcomeFailed
	outcomeReleased
	outcomeLost
)

// maxReason is the longest failure reason a status update may carry.
const maxReason = 4096

// job is a job held by the worker. Its fields below mu are guarded by the
// worker's mutex.
type job struct {
	name   string
	token  fencing.Token
	sig    []byte // the assignment's token signature, returned with every report
	plan   *compactkit.JobPlan
	keeper *lease.Keeper
	// ctx is the context the job runs under: the keeper's context, also
	// cancelled when the leader answers "no lease".
	ctx    context.Context
	cancel context.CancelCauseFunc

	// mu: the worker's.
	state     jobState
	running   bool // the job's goroutine is alive
	lost      bool // the lease is lost: never reported again
	late      bool // assigned too late to run (tooLate): reported released once, whatever its local lease
	forgotten bool // no longer held
	// reportedSeq is the sequence number of the last request that
	// reported the job (Config.MaxReports).
	reportedSeq uint64
	outputs     []compactkit.BlockMeta
	reason      string
	waiters     []*waiter // renewals waiting for an answer
}

// waiter is a renewal asked for by the job's keeper: it waits for the answer
// to a request numbered minSeq or later, that is a request built after the
// keeper asked, so that the lease it grants is measured from a send time
// no earlier than the keeper's own.
type waiter struct {
	minSeq uint64
	ch     chan renewal // capacity 1
}

type renewal struct {
	d   time.Duration
	err error
}

// resolveLocked answers the renewals waiting for a request numbered seq or
// earlier and reports whether there was any.
func (j *job) resolveLocked(seq uint64, r renewal) bool {
	found := false
	j.waiters = slices.DeleteFunc(j.waiters, func(wt *waiter) bool {
		if wt.minSeq > seq {
			return false
		}
		wt.ch <- r
		found = true
		return true
	})
	return found
}

// startLocked takes on the job assigned by r, in answer to a request first
// sent at sentAt: it starts the job's keeper and, unless the worker is
// shutting down, has no free slot or got the job too late (see tooLate),
// its goroutine.
func (w *Worker) startLocked(r *compactkit.JobReply, sentAt time.Time) {
	w.stats.JobsAssigned++
	j := &job{name: r.Job, token: r.Token, sig: r.Signature, plan: r.Plan}
	log := w.log.With("job", j.name, "token", j.token)
	j.keeper = lease.NewKeeper(w.jobsCtx, r.Lease, sentAt, w.renewer(j),
		lease.WithLogger(log),
		lease.WithRetryBackoff(w.cfg.RetryBackoff, max(w.cfg.RetryBackoff, w.cfg.PollInterval)))
	j.ctx, j.cancel = context.WithCancelCause(j.keeper.Context())
	w.held[j.name] = j
	j.late = tooLate(r.Lease, sentAt, time.Now())
	if w.stopping || w.running >= w.cfg.Concurrency || j.late {
		// Assigned while shutting down (the answer to a retried request),
		// beyond the free slots, or too late: give it back, at once if
		// late — before its lease runs out at the leader too.
		log.Warn("releasing a job without running it", "shutting_down", w.stopping, "running", w.running,
			"late", j.late, "lease", r.Lease, "since_sent", time.Since(sentAt))
		j.state = jobReleased
		if j.late {
			w.wakeup()
		}
		return
	}
	w.stats.JobsStarted++
	w.running++
	w.alive[j.name]++
	j.running = true
	log.Info("job started", "sources", len(j.plan.Sources), "tombstones", len(j.plan.Tombstones), "lease", r.Lease)
	go w.runJob(j, log)
}

// tooLate reports whether an assignment of a lease of d, in answer to a
// request first sent at sentAt, arrives too late to run at now: its first
// renewal is already due (the lease's renewal fraction has passed since
// the request was first sent, as after an outage of the leader). Run, such
// a job would likely see its lease run out locally before a renewal is
// answered, and be charged an expired lease; released at once, it goes
// back to the queue without a failure. The leader measures the lease from
// when it applied the request, later than its first send: the release
// reaches it in time.
func tooLate(d time.Duration, sentAt, now time.Time) bool {
	return !now.Before(sentAt.Add(time.Duration(lease.DefaultFraction * float64(d))))
}

// renewer returns the keeper's Renewer for j: it asks the loop for a poll
// and waits for that poll's answer about j.
func (w *Worker) renewer(j *job) lease.Renewer {
	return func(ctx context.Context) (time.Duration, error) {
		wt := &waiter{ch: make(chan renewal, 1)}
		w.mu.Lock()
		if j.forgotten {
			w.mu.Unlock()
			return 0, fmt.Errorf("worker: job %s is no longer held", j.name)
		}
		wt.minSeq = w.nextSeq
		j.waiters = append(j.waiters, wt)
		w.mu.Unlock()
		w.wakeup()
		select {
		case r := <-wt.ch:
			return r.d, r.err
		case <-ctx.Done():
			w.mu.Lock()
			j.waiters = slices.DeleteFunc(j.waiters, func(x *waiter) bool { return x == wt })
			w.mu.Unlock()
			return 0, context.Cause(ctx)
		}
	}
}

// outsideAttempt refuses outputs whose objects would not lie under the
// attempt's prefix: the runner broke its contract (see Runner), and
// committing them would leave objects no tombstone ever deletes.
func outsideAttempt(j *job, outputs []compactkit.BlockMeta) error {
	prefix := compactkit.AttemptPrefix(j.name, j.token)
	for _, o := range outputs {
		if !strings.HasPrefix(compactkit.ObjectKey(o.ID), prefix) {
			return fmt.Errorf("runner output %q is outside the attempt's prefix %q", o.ID, prefix)
		}
	}
	return nil
}

// runJob runs j: deletes its tombstones, merges its sources, and records how
// it ended.
func (w *Worker) runJob(j *job, log *slog.Logger) {
	var (
		outputs []compactkit.BlockMeta
		err     error
	)
	store := blockmerge.NewFencedStore(w.store, &w.guard, j.name, j.token)
	if len(j.plan.Tombstones) > 0 {
		errTimeout := fmt.Errorf("cleanup of job %s: timed out after %v", j.name, w.cfg.CleanupTimeout)
		cctx, cancel := context.WithTimeoutCause(j.ctx, w.cfg.CleanupTimeout, errTimeout)
		deleted, derr := w.cfg.Layout.DeleteTombstones(cctx, store, j.plan.Tombstones)
		if derr != nil && context.Cause(cctx) == errTimeout {
			derr = fmt.Errorf("%w: %w", errTimeout, derr)
		}
		cancel()
		w.mu.Lock()
		w.stats.TombstonesDeleted += uint64(len(deleted))
		w.mu.Unlock()
		if derr != nil {
			err = fmt.Errorf("delete tombstones: %w", derr)
		}
	}
	if err == nil && len(j.plan.Sources) > 0 {
		outputs, err = w.runner.Run(j.ctx, store, j.plan, j.token)
	}
	if err == nil {
		err = outsideAttempt(j, outputs)
	}
	if err == nil {
		// The leader rejects a whole request whose success report does
		// not fit the job's plan (no outputs for a job with sources, or
		// invalid output metadata): such a job is reported failed
		// instead. Merge never produces either; this is defence in depth
		// (see also Worker.reject).
		u := compactkit.StatusUpdate{Job: j.name, Token: j.token, Status: compactkit.ReportSuccess, Outputs: outputs}
		if verr := u.ValidateFor(j.plan); verr != nil {
			err = fmt.Errorf("success report refused before sending: %w", verr)
		}
	}
	if w.afterMerge != nil {
		w.afterMerge(j.name)
	}

	w.mu.Lock()
	state := w.finishLocked(j, outputs, err)
	w.mu.Unlock()
	w.wakeup()
	switch state {
	case jobSucceeded:
		log.Info("job succeeded", "outputs", len(outputs), "tombstones", len(j.plan.Tombstones))
	case jobFailed:
		log.Warn("job failed", "error", err)
	case jobReleased:
		log.Info("job stopped for shutdown")
	default:
		log.Warn("job dropped: lease lost", "cause", context.Cause(j.ctx))
	}
}

// finishLocked decides how j ended, given what its run returned, and
// returns the decision (jobRunning for a lost lease). The decision is
// taken under the worker's lock, so that it cannot race with the loop
// dropping the job: once a job's lease is lost, it is never reported
// successful.
func (w *Worker) finishLocked(j *job, outputs []compactkit.BlockMeta, err error) jobState {
	w.running--
	j.running = false
	if w.alive[j.name]--; w.alive[j.name] <= 0 {
		delete(w.alive, j.name)
		// No attempt of the job runs in this process any more.
		w.guard.Forget(j.name)
	}
	if err == nil {
		for i := range outputs {
			w.stats.BlocksWritten++
			w.stats.BytesWritten += uint64(max(outputs[i].Size, 0))
		}
	}
	if !j.lost && !j.forgotten {
		if cause := w.lostLocally(j, time.Now()); cause != nil {
			w.loseLocked(j, cause)
		}
	}
	switch {
	case j.lost || j.forgotten:
		return jobRunning
	case err == nil:
		j.state = jobSucceeded
		j.outputs = outputs
	case w.stopping:
		j.state = jobReleased
	default:
		j.state = jobFailed
		j.reason = reason(err)
	}
	return j.state
}

// lostLocally returns why j's lease is lost as far as the worker can tell
// on its own (the keeper's context cancelled for a lost lease, or the
// locally measured lease over), or nil.
func (w *Worker) lostLocally(j *job, now time.Time) error {
	if cause := context.Cause(j.keeper.Context()); errors.Is(cause, lease.ErrLeaseLost) {
		return cause
	}
	if end := j.keeper.Deadline(); !now.Before(end) {
		return fmt.Errorf("job %s token %d: lease ran out locally at %s: %w", j.name, j.token, end.Format(time.RFC3339Nano), lease.ErrLeaseLost)
	}
	return nil
}

// loseLocked marks j's lease lost and cancels its run.
func (w *Worker) loseLocked(j *job, cause error) {
	if j.lost {
		return
	}
	j.lost = true
	j.cancel(cause)
	w.log.Warn("lease lost", "job", j.name, "token", j.token, "cause", cause)
}

// forgetLocked drops j from the jobs held, counting how it ended. The
// caller stops its keeper (outside the lock).
func (w *Worker) forgetLocked(j *job, o outcome, cause error) {
	if j.forgotten {
		return
	}
	j.forgotten = true
	delete(w.held, j.name)
	if cause == nil {
		cause = fmt.Errorf("job %s: no longer held", j.name)
	}
	j.cancel(cause)
	var err error
	switch o {
	case outcomeCompleted:
		w.stats.JobsCompleted++
		err = fmt.Errorf("job %s completed", j.name)
	case outcomeFailed:
		w.stats.JobsFailed++
		err = fmt.Errorf("job %s failed", j.name)
	case outcomeReleased:
		w.stats.JobsReleased++
		err = fmt.Errorf("job %s released", j.name)
	case outcomeLost:
		w.stats.JobsLost++
		err = fmt.Errorf("job %s: %w", j.name, lease.ErrLeaseLost)
	}
	for _, wt := range j.waiters {
		wt.ch <- renewal{err: err}
	}
	j.waiters = nil
}

// reason formats err for a failure report: at most maxReason bytes of
// valid UTF-8.
func reason(err error) string {
	s := err.Error()
	if len(s) > maxReason {
		s = s[:maxReason]
	}
	return strings.ToValidUTF8(s, "")
}
