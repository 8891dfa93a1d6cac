package raftfsm

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/index"
	"github.com/compactkit/compactkit/scheduler"
)

// applyPoll executes a prepared poll: the changes of its update, wired to
// the planner and the index, then the response, recorded in the poll log.
func (st *state) applyPoll(e ck.Entry, now int64, p *Poll, res *Result, log *slog.Logger) error {
	if rec, ok := st.polls.lookup(p.WorkerID); ok {
		switch {
		case p.Seq < rec.Seq:
			return fmt.Errorf("poll %d from %s, latest %d: %w", p.Seq, p.WorkerID, rec.Seq, ErrStaleRequest)
		case p.Seq == rec.Seq:
			resp := rec.Response
			res.Poll, res.Replayed = &resp, true
			return nil
		}
	}
	tx := st.sched.Begin(e, now, p.Update.TokenIndex)
	res.Changes = make([]ChangeResult, len(p.Update.Changes))
	results := st.scratchResults(len(p.Update.Changes))
	defer clear(results) // the scratch holds no plan or string past the poll
	for i := range p.Update.Changes {
		c := &p.Update.Changes[i]
		cr := &res.Changes[i]
		cr.Kind, cr.Job = c.Kind, c.Job
		var r scheduler.Result
		if c.Kind == ck.ChangeAdd {
			r = st.applyAdd(e, now, tx, c)
		} else {
			r = tx.Apply(c)
		}
		results[i] = r
		cr.Applied, cr.Reason, cr.Detail = r.Applied, r.Reason, r.Detail
		if !r.Applied {
			if r.Reason < scheduler.NumSkips {
				st.skipped[r.Reason]++
			}
			log.Debug("raftfsm: change skipped", "entry", e.Index, "kind", c.Kind, "job", c.Job, "reason", r.Reason.String(), "detail", r.Detail)
			continue
		}
		cr.Token = r.After.Token
		if r.Plan != nil {
			cr.Level = r.Plan.Level
		}
		switch r.Kind {
		case ck.ChangeComplete:
			cr.Replace = st.commit(e, now, c, r.Plan)
		case ck.ChangeEvict:
			reason := fmt.Sprintf("excluded after %d failures, evicted from a full queue", r.Before.Failures)
			if r.Before.LastFailure != "" {
				reason = fmt.Sprintf("excluded after %d failures (last: %s), evicted from a full queue", r.Before.Failures, r.Before.LastFailure)
			}
			if !r.Plan.CleanupOnly() { // a cleanup-only job claims nothing
				st.invariant(st.planner.Quarantine(e, c.Job, reason), "quarantine of "+c.Job)
			}
			cr.Quarantined = len(r.Plan.Sources)
			st.index.Detach(c.Job)
		case ck.ChangeCancel:
			st.release(now, c.Job, 0)
		}
		if r.After.Status == ck.StatusExcluded {
			cr.Excluded = true
			// An excluded job never runs until an operator retries it:
			// its tombstones go back to the pool for another job. Its plan
			// forgets them too, so that a retry does not hand them out a
			// second time (a cleanup-only job, left with nothing to do, is
			// removed).
			st.index.Detach(c.Job)
			if st.sched.DropTombstones(c.Job) {
				log.Info("raftfsm: excluded cleanup-only job removed; its tombstones go to another job", "entry", e.Index, "job", c.Job)
			}
		}
		if !r.Plan.CleanupOnly() {
			// A cleanup-only attempt writes nothing: no prefix to delete.
			st.orphan(now, c.Job, r.PrevToken)
		}
	}
	// The tenants' counts of jobs in progress may have reached their caps,
	// or left them: the planner holds their keys meanwhile. Synced once the
	// entry's changes are in, so that a completion and the assignment of
	// the tenant's next job move none of them.
	for i := range results {
		if r := &results[i]; r.Applied && r.Plan != nil {
			st.syncHeld(r.Plan.Tenant)
		}
	}
	st.afterPoll(now, results)
	st.regradeOutputs(now, p.Update.Changes, results)
	resp := st.response(p, results, now)
	st.polls.record(p.WorkerID, p.Seq, now, resp)
	res.Poll = &resp
	return nil
}

// scratchResults returns st.results resized to n zero results.
func (st *state) scratchResults(n int) []scheduler.Result {
	if cap(st.results) < n {
		st.results = make([]scheduler.Result, n)
	}
	return st.results[:n]
}

// applyAdd admits a new job: its sources must be the planner's to give,
// its tombstones releasable and unattached. Only the tombstones the index
// accepts go into the job's plan, so a worker never deletes what it was
// not given.
func (st *state) applyAdd(e ck.Entry, now int64, tx *scheduler.Tx, c *ck.Change) scheduler.Result {
	plan := c.Plan
	if _, _, exists := st.sched.Job(plan.Name); exists {
		return scheduler.Result{Kind: ck.ChangeAdd, Reason: scheduler.SkippedJobExists}
	}
	if !plan.CleanupOnly() {
		if err := st.planner.Admissible(plan); err != nil {
			return scheduler.Result{Kind: ck.ChangeAdd, Reason: scheduler.SkippedNotAdmissible, Detail: err.Error()}
		}
	}
	if len(plan.Tombstones) > 0 {
		accepted := st.index.Attach(now, plan.Name, plan.Tombstones)
		// Records attach whole: what the index accepted may hold objects
		// the plan did not list.
		if !slices.Equal(accepted, plan.Tombstones) {
			if plan.CleanupOnly() && len(accepted) == 0 {
				return scheduler.Result{Kind: ck.ChangeAdd, Reason: scheduler.SkippedNoTombstoneLeft, Detail: fmt.Sprintf("none of its %d tombstones is unattached and releasable", len(plan.Tombstones))}
			}
			cp := *plan
			cp.Tombstones = accepted
			plan = &cp
		}
	}
	add := *c
	add.Plan = plan
	r := tx.Apply(&add)
	if !r.Applied {
		st.index.Detach(plan.Name)
		return r
	}
	if !plan.CleanupOnly() {
		if err := st.planner.Claim(e, plan); err != nil {
			// Unreachable: Admissible just accepted the plan on this very
			// state. Undo the job rather than leave it without a claim.
			st.invariant(err, "claim of "+plan.Name)
			_, cerr := st.sched.Cancel(e, now, plan.Name)
			st.invariant(cerr, "undo of "+plan.Name)
			st.index.Detach(plan.Name)
			return scheduler.Result{Kind: ck.ChangeAdd, Reason: scheduler.SkippedNotAdmissible, Detail: err.Error()}
		}
	}
	return r
}

// commit wires an applied completion: the index replaces the sources by
// the outputs (or refuses), the planner ends the claim, the outputs are
// queued one level up, and the job's tombstones are confirmed — the worker
// deleted them either way.
func (st *state) commit(e ck.Entry, now int64, c *ck.Change, plan *ck.JobPlan) *index.ReplaceResult {
	var out *index.ReplaceResult
	if !plan.CleanupOnly() {
		st.index.SetRecords(st.clusterVersion >= recordsVersion)
		rr := st.index.Replace(e, now, c.Job, c.Token, plan.Sources, c.Outputs)
		out = &rr
		if rr.Applied {
			st.invariant(st.planner.Complete(c.Job), "completion of "+c.Job)
			for i := range c.Outputs {
				// The index validated the outputs; the planner keeps
				// those below the final level.
				_, err := st.planner.Enqueue(e, &c.Outputs[i])
				st.invariant(err, "output of "+c.Job)
			}
		} else {
			st.invariant(st.planner.Return(c.Job, rr.Surviving), "return of "+c.Job)
		}
	}
	st.index.Confirm(now, c.Job)
	return out
}

// response answers the poll: one reply per reported job, in request order,
// then one per job assigned to the worker.
func (st *state) response(p *Poll, results []scheduler.Result, now int64) ck.PollResponse {
	lease := st.sched.Config().LeaseDuration
	// Never nil, so that a response reads the same after a snapshot
	// round trip.
	n := len(p.Reports)
	for i := range p.Update.Changes {
		if p.Update.Changes[i].Kind == ck.ChangeAssign {
			n++
		}
	}
	resp := ck.PollResponse{Jobs: make([]ck.JobReply, 0, n)}
	answers := answersOf(p, results)
	for _, rep := range p.Reports {
		reply := ck.JobReply{Job: rep.Job, Outcome: ck.OutcomeNoLease, Token: rep.Token}
		found := false
		for _, i := range answers.of(rep.Job) {
			c, r := &p.Update.Changes[i], &results[i]
			if c.Token != rep.Token {
				continue
			}
			switch r.Kind {
			case ck.ChangeRenew:
				reply.Outcome, reply.Deadline, reply.Lease = ck.OutcomeRenewed, r.After.Deadline, lease
				found = true
			case ck.ChangeComplete:
				reply.Outcome, found = ck.OutcomeCompleted, true
			case ck.ChangeFail, ck.ChangeRelease:
				reply.Outcome, found = ck.OutcomeAccepted, true
			}
		}
		if !found {
			st.answerUnchanged(&reply, p.WorkerID, now)
		}
		resp.Jobs = append(resp.Jobs, reply)
	}
	for i := range p.Update.Changes {
		c := &p.Update.Changes[i]
		r := &results[i]
		if c.Kind != ck.ChangeAssign || c.Worker != p.WorkerID || !r.Applied {
			continue
		}
		resp.Jobs = append(resp.Jobs, ck.JobReply{
			Job: c.Job, Outcome: ck.OutcomeAssigned, Token: r.After.Token,
			Deadline: r.After.Deadline, Lease: lease, Plan: canonicalPlan(r.Plan),
		})
	}
	return resp
}

// answers are the changes of a poll that may answer its reports — the
// worker's renewals, completions, failures and releases that applied —
// as positions in the update's changes, sorted by job and in change order
// within a job. response looks up each report's changes, so that a poll
// costs a search per report rather than a pass over its changes per
// report.
type answers struct {
	changes []ck.Change
	at      []int
}

func answersOf(p *Poll, results []scheduler.Result) answers {
	a := answers{changes: p.Update.Changes}
	for i := range a.changes {
		switch results[i].Kind {
		case ck.ChangeRenew, ck.ChangeComplete, ck.ChangeFail, ck.ChangeRelease:
			if results[i].Applied && a.changes[i].Worker == p.WorkerID {
				a.at = append(a.at, i)
			}
		}
	}
	slices.SortStableFunc(a.at, func(i, j int) int { return strings.Compare(a.changes[i].Job, a.changes[j].Job) })
	return a
}

// of returns the positions of the answers about job, in change order.
func (a answers) of(job string) []int {
	lo, _ := slices.BinarySearchFunc(a.at, job, func(i int, job string) int { return strings.Compare(a.changes[i].Job, job) })
	hi := lo
	for hi < len(a.at) && a.changes[a.at[hi]].Job == job {
		hi++
	}
	return a.at[lo:hi]
}

// canonicalPlan returns p with empty, non-nil Sources and Tombstones where
// they are empty: the form a plan has after the poll log's round trip
// through a snapshot, so that a restored replica answers exactly as the
// original (a plan restored with the scheduler has nil where a new one has
// an empty slice). p is shared and is copied, not changed.
func canonicalPlan(p *ck.JobPlan) *ck.JobPlan {
	if p.Sources != nil && p.Tombstones != nil {
		return p
	}
	c := *p
	if c.Sources == nil {
		c.Sources = []string{}
	}
	if c.Tombstones == nil {
		c.Tombstones = []ck.Tombstone{}
	}
	return &c
}

// answerUnchanged answers a report no change of the poll acted on: the job
// was completed with this token, or the worker still holds it (the lease
// runs on, unrenewed), or the worker has no lease.
func (st *state) answerUnchanged(reply *ck.JobReply, worker string, at int64) {
	if tok, ok := st.sched.CompletedToken(reply.Job); ok && tok == reply.Token {
		reply.Outcome = ck.OutcomeCompleted
		return
	}
	js, _, ok := st.sched.Job(reply.Job)
	if ok && js.Status == ck.StatusInProgress && js.Token == reply.Token && js.Deadline >= at &&
		js.Worker == worker {
		reply.Outcome, reply.Deadline = ck.OutcomeRenewed, js.Deadline
		reply.Lease = time.Duration(js.Deadline - at)
		return
	}
	reply.Outcome = ck.OutcomeNoLease
}
