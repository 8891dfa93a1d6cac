package compactkit

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"strings"
	"time"

	"github.com/compactkit/compactkit/internal/enum"

	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/internal/dups"
	"github.com/compactkit/compactkit/internal/ident"
)

// PollRequest is what a worker sends the leader: the status of every job
// it holds and how many new jobs it can take.
//
// WorkerID and Seq identify the request: a worker retries a request whose
// reply it did not receive with the same Seq, and the state machine answers
// a retried request with the recorded response instead of acting twice.
type PollRequest struct {
	_ struct{} `cbor:",toarray"`
	// WorkerID identifies the worker; it must be stable across the
	// worker's requests.
	WorkerID string
	// Seq numbers the worker's requests, starting at 1 and growing by one
	// per new request; a retry reuses the number.
	Seq uint64
	// Updates report the jobs the worker holds.
	Updates []StatusUpdate
	// FreeSlots is the number of new jobs the worker can take, once the
	// jobs this request ends (success, failure, release) are gone: the
	// leader assigns at most that many, capped by its configuration.
	FreeSlots int32
}

// Validate reports whether r is well-formed: a valid worker ID, Seq ≥ 1,
// FreeSlots ≥ 0, and valid updates for distinct jobs.
func (r *PollRequest) Validate() error {
	if err := ident.ValidateName("poll: worker ID", r.WorkerID, false); err != nil {
		return err
	}
	if r.Seq == 0 {
		return fmt.Errorf("poll from %s: sequence 0: %w", r.WorkerID, ident.ErrInconsistent)
	}
	if r.FreeSlots < 0 {
		return fmt.Errorf("poll from %s: free slots %d: %w", r.WorkerID, r.FreeSlots, ident.ErrNegative)
	}
	var seen dups.Tracker[string]
	for i := range r.Updates {
		if err := r.Updates[i].Validate(); err != nil {
			return fmt.Errorf("poll from %s: %w", r.WorkerID, err)
		}
		if seen.Seen(r.Updates[i].Job) {
			return fmt.Errorf("poll from %s: job %s reported twice: %w", r.WorkerID, r.Updates[i].Job, ident.ErrInconsistent)
		}
	}
	return nil
}

// StatusUpdate is a worker's report on one job it holds.
type StatusUpdate struct {
	_ struct{} `cbor:",toarray"`
	// Job is the job's name.
	Job string
	// Token is the fencing token the job was assigned with.
	Token fencing.Token
	// Status is what the worker reports.
	Status ReportStatus
	// Outputs are the metadata of the blocks written (success only).
	Outputs []BlockMeta
	// Reason says why the attempt failed (failure only); for operators.
	Reason string
	// Signature is the signature the job was assigned with
	// ([JobReply.Signature]), returned unchanged; empty when the leaders
	// sign no tokens. The compact encoding (encoding version 1) writes it
	// only when it is set.
	Signature []byte `codec:"optional"`
}

// Validate reports whether u is well-formed on its own. Whether a success
// carries the outputs its job needs depends on the job: see
// [StatusUpdate.ValidateFor].
func (u *StatusUpdate) Validate() error {
	if err := ident.ValidateJobName(u.Job); err != nil {
		return fmt.Errorf("status update: %w", err)
	}
	if err := ident.CheckReportStatus(uint8(u.Status)); err != nil {
		return fmt.Errorf("status update for %s: %w", u.Job, err)
	}
	if u.Token == 0 {
		return fmt.Errorf("status update for %s: token 0: %w", u.Job, ident.ErrInconsistent)
	}
	if u.Status != ReportSuccess && len(u.Outputs) > 0 {
		return fmt.Errorf("status update for %s: outputs on a %s report: %w", u.Job, u.Status, ident.ErrInconsistent)
	}
	if len(u.Reason) > 4096 {
		return fmt.Errorf("status update for %s: reason of %d bytes: %w", u.Job, len(u.Reason), ErrTooLarge)
	}
	if len(u.Signature) > ident.MaxSignatureLen {
		return fmt.Errorf("status update for %s: signature of %d bytes: %w", u.Job, len(u.Signature), ErrTooLarge)
	}
	return validateOutputs(u.Job, u.Outputs)
}

// ValidateFor reports whether u is a valid report for the job with the
// given plan: a success for a job with sources must carry outputs.
func (u *StatusUpdate) ValidateFor(plan *JobPlan) error {
	if err := u.Validate(); err != nil {
		return err
	}
	if u.Status == ReportSuccess && len(plan.Sources) > 0 && len(u.Outputs) == 0 {
		return fmt.Errorf("status update for %s: %w", u.Job, ident.ErrMissingOutputs)
	}
	return nil
}

// Outcome is the leader's answer about one job in a poll response.
type Outcome uint8

// The outcomes. The zero value is not an outcome.
const (
	// OutcomeAssigned: a new job for the worker, with plan, token, deadline
	// and lease duration.
	OutcomeAssigned Outcome = iota + 1
	// OutcomeRenewed: the lease was renewed until the new deadline.
	OutcomeRenewed
	// OutcomeCompleted: the success was committed (also the answer to a
	// repeated success report with the same token).
	OutcomeCompleted
	// OutcomeAccepted: a reported failure or release was recorded; the
	// worker no longer holds the job.
	OutcomeAccepted
	// OutcomeNoLease: the worker does not hold the job (unknown job, not in
	// progress, or another token): stop working on it.
	OutcomeNoLease
)

// String returns the outcome name.
func (o Outcome) String() string {
	return enum.Name("Outcome", o, OutcomeAssigned, "assigned", "renewed", "completed", "accepted", "no_lease")
}

// PollResponse is the leader's answer to a poll: one reply per job the
// worker reported and per job newly assigned to it.
type PollResponse struct {
	_ struct{} `cbor:",toarray"`
	// Jobs are the replies, reported jobs first (in request order), then
	// assignments.
	Jobs []JobReply
}

// JobReply is the answer about one job.
type JobReply struct {
	_ struct{} `cbor:",toarray"`
	// Job is the job's name.
	Job string
	// Outcome is the answer.
	Outcome Outcome
	// Token is the job's token (assigned, renewed, completed).
	Token fencing.Token
	// Deadline is the leader's lease deadline (unix nanoseconds); for
	// display only — workers measure the lease locally with Lease.
	Deadline int64
	// Lease is the lease duration granted (assigned, renewed). Workers
	// measure it from the moment they sent the request.
	Lease time.Duration
	// Plan is the job's plan (assigned only).
	Plan *JobPlan
	// Signature signs (job, token, worker) when the leaders sign tokens
	// (assigned only; see the leader package's WithTokenKeys): the worker
	// returns it with every report on the job. It is added by the leader
	// to the reply it sends, never kept in the replicated state. The
	// compact encoding (encoding version 1, snapshot version 4) writes it
	// only when it is set.
	Signature []byte `codec:"optional"`
}

// Validate reports whether r is well-formed.
func (r *PollResponse) Validate() error {
	for i := range r.Jobs {
		j := &r.Jobs[i]
		if err := ident.ValidateJobName(j.Job); err != nil {
			return fmt.Errorf("poll response: %w", err)
		}
		if j.Outcome < OutcomeAssigned || j.Outcome > OutcomeNoLease {
			return fmt.Errorf("poll response: job %s: outcome %d: %w", j.Job, uint8(j.Outcome), ident.ErrUnknownChange)
		}
		if (j.Outcome == OutcomeAssigned) != (j.Plan != nil) {
			return fmt.Errorf("poll response: job %s: %s with plan=%t: %w", j.Job, j.Outcome, j.Plan != nil, ident.ErrInconsistent)
		}
		if j.Plan != nil {
			if err := j.Plan.Validate(); err != nil {
				return fmt.Errorf("poll response: %w", err)
			}
		}
		if j.Lease < 0 {
			return fmt.Errorf("poll response: job %s: lease %s: %w", j.Job, j.Lease, ident.ErrNegative)
		}
		if len(j.Signature) > ident.MaxSignatureLen || (len(j.Signature) > 0 && j.Outcome != OutcomeAssigned) {
			return fmt.Errorf("poll response: job %s: signature of %d bytes on a %s reply: %w", j.Job, len(j.Signature), j.Outcome, ident.ErrInconsistent)
		}
	}
	return nil
}

// PublicWorkerName returns the name under which the worker with the given
// ID is shown — in job listings, statistics, logs and any API — since the
// ID itself is the worker's credential: whoever knows it can report on the
// worker's jobs and read its recorded responses. [worker.NewID]-style IDs
// end in a random suffix after the last '-'; the public name keeps what
// comes before it and appends a short hash of the whole ID, so that
// different workers of one name stay apart without revealing the suffix.
//
// [worker.NewID]: https://pkg.go.dev/github.com/compactkit/compactkit/worker#NewID
func PublicWorkerName(id string) string {
	if id == "" {
		return ""
	}
	name := id
	if i := strings.LastIndexByte(id, '-'); i > 0 {
		name = id[:i]
	}
	sum := sha256.Sum256([]byte(id))
	return name + "~" + base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:5])
}
