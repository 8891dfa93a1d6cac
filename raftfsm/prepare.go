package raftfsm

import (
	"fmt"
	"slices"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/planner"
	"github.com/compactkit/compactkit/scheduler"
)

// Prepare decides, on the leader, what a worker's poll changes, and
// returns the command to propose. It is read-only: it holds the state
// machine's lock only to open copy-on-write views of the planner, the
// scheduler and the index (O(1)), and plans on them while entries keep
// being applied. Its cost grows with log n and with the work asked for.
//
// now is the leader's clock; the command is stamped as [FSM.Encode] stamps
// (max(now, the log's time), at most one clock step ahead), so Prepare and
// Apply judge lease expiry by the same clock. Propose the command with
// FSM.Encode. The steps: status updates first (renew,
// complete, fail, release), then assignment of existing jobs, then new
// jobs — evicting an excluded job when the queue is full — each assigned in
// the same poll, and finally cleanup-only jobs, as many as the capacity
// left allows, when released tombstones have waited too long for a carrier
// (see WithCleanupAfter). When they have waited longer still
// (WithCleanupUrgentAfter), one cleanup-only job takes the poll's first
// free slot, ahead of compaction. Capacity is the request's free slots (which
// already leave out the jobs the request ends), capped by the scheduler's
// configuration.
//
// A retried request (the worker's latest sequence number) gets a command
// that changes nothing: its Apply returns the recorded response. A request
// older than that returns an error wrapping [ErrStaleRequest]; a malformed
// one, or a success report inconsistent with the job's plan, an error
// wrapping [ErrInvalidRequest].
//
// In two-commit mode the host first proposes a [PreparePoll] command, then
// calls Prepare once that entry is applied and sets the returned command's
// Poll.Update.TokenIndex to the prepare entry's index.
func (f *FSM) Prepare(req *ck.PollRequest, now int64) (*Command, error) {
	f.mu.Lock()
	limits := f.st.cfg.Limits.withDefaults()
	f.mu.Unlock()
	// The limits first: they bound the work of everything after.
	if err := limits.checkPoll(req.WorkerID, len(req.Updates), func(yield func(string, []ck.BlockMeta) bool) {
		for i := range req.Updates {
			if !yield(req.Updates[i].Job, req.Updates[i].Outputs) {
				return
			}
		}
	}); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	if err := req.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	reports := make([]Report, len(req.Updates))
	for i := range req.Updates {
		u := &req.Updates[i]
		reports[i] = Report{Job: u.Job, Token: u.Token, Status: u.Status}
	}
	cmd := &Command{Poll: &Poll{WorkerID: req.WorkerID, Seq: req.Seq, Reports: reports}}

	f.mu.Lock()
	if f.failed != nil {
		f.mu.Unlock()
		return nil, f.failed
	}
	st := f.st
	now = f.stampLocked(now)
	cmd.Time = now
	if rec, ok := st.polls.lookup(req.WorkerID); ok && req.Seq <= rec.Seq {
		f.mu.Unlock()
		if req.Seq < rec.Seq {
			return nil, fmt.Errorf("poll %d from %s, latest %d: %w", req.Seq, req.WorkerID, rec.Seq, ErrStaleRequest)
		}
		cmd.Poll.Update.Time = now
		return cmd, nil
	}
	// Ownership is the token and the worker: tokens are log indexes,
	// public and guessable (Apply checks it too).
	sv := st.sched.Schedule(now)
	if st.clusterVersion >= capFreedVersion {
		sv.FreeCaps()
	}
	pv := st.planner.View()
	iv := st.index.View()
	force := slices.Clone(st.policies.compact)
	f.mu.Unlock()
	// Closed views let Apply change the trees in place, without copying
	// them: the index's trees the view never read, and the scheduler's.
	defer iv.Close()
	defer sv.Close()

	for i := range req.Updates {
		u := &req.Updates[i]
		if u.Status == ck.ReportSuccess {
			if _, plan, ok := sv.Job(u.Job); ok {
				if err := validateSuccess(u, plan); err != nil {
					return nil, fmt.Errorf("%w: poll from %s: %w", ErrInvalidRequest, req.WorkerID, err)
				}
			}
		}
		sv.UpdateJob(req.WorkerID, u)
	}
	// From cluster version 6 the jobs the updates end count off their
	// tenants' caps: the planner plans those tenants again in this poll.
	for _, t := range sv.Freed() {
		pv.Release(t)
	}
	// FreeSlots already leaves out the jobs this request ends: the worker
	// knows which slots it can fill (none while it shuts down). Adding the
	// jobs the updates free would hand it jobs it must release unrun.
	capacity := sv.Capacity(req.FreeSlots)
	assigned := 0
	tombstones := iv.Releasable(now)
	waited, waiting := iv.OldestUnattachedReleasable(now)
	if waiting && capacity > 0 && now-waited >= int64(max(f.opts.cleanupUrgent, f.opts.cleanupAfter)) {
		// Released tombstones have waited so long that cleanup goes first:
		// a fleet kept busy by compaction would never get to them.
		if f.addCleanupJob(sv, req.WorkerID, tombstones, now) {
			assigned++
		}
	}
	for assigned < capacity && sv.AssignJob(req.WorkerID) {
		assigned++
	}
	// Paused, closed (run window, not-before) and capped tenants are passed
	// over; the planner holds the keys of capped ones itself, so they cost
	// nothing here.
	opts := &planner.PlanOptions{Skip: sv.Held, Tombstones: tombstones, Force: force}
	for assigned < capacity {
		plan, ok := pv.Next(now, opts)
		if !ok {
			break
		}
		if !sv.AddJob(plan) && !(sv.EvictJob() && sv.AddJob(plan)) {
			break
		}
		if sv.AssignJob(req.WorkerID) {
			assigned++
		}
	}
	if waiting && now-waited >= int64(f.opts.cleanupAfter) {
		// Released tombstones have waited too long for a compaction job:
		// fill the remaining capacity with cleanup-only jobs.
		for assigned < capacity && f.addCleanupJob(sv, req.WorkerID, tombstones, now) {
			assigned++
		}
	}
	cmd.Poll.Update = sv.Update()
	return cmd, nil
}

// addCleanupJob adds a cleanup-only job of the next released tombstones
// and assigns it to the worker, evicting an excluded job if the queue is
// full. It reports whether the worker got the job.
func (f *FSM) addCleanupJob(sv *scheduler.Schedule, worker string, tombstones func() (ck.Tombstone, bool), now int64) bool {
	plan, ok := planner.CleanupPlan(tombstones, f.opts.cleanupBatch, now)
	return ok && (sv.AddJob(plan) || (sv.EvictJob() && sv.AddJob(plan))) && sv.AssignJob(worker)
}

// validateSuccess checks a success report against the job's plan: outputs
// present for a compaction job, and one level up at least.
func validateSuccess(u *ck.StatusUpdate, plan *ck.JobPlan) error {
	if err := u.ValidateFor(plan); err != nil {
		return err
	}
	for i := range u.Outputs {
		if u.Outputs[i].Level <= plan.Level {
			return fmt.Errorf("job %s: output %s at level %d, the job's level is %d: %w",
				u.Job, u.Outputs[i].ID, u.Outputs[i].Level, plan.Level, ck.ErrInconsistent)
		}
	}
	return nil
}

// Recorded returns the response recorded for the worker's request seq, if
// it is the worker's latest: a host may answer a retried request with it
// without proposing anything.
func (f *FSM) Recorded(worker string, seq uint64) (*ck.PollResponse, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rec, ok := f.st.polls.lookup(worker)
	if !ok || rec.Seq != seq {
		return nil, false
	}
	resp := rec.Response
	return &resp, true
}
