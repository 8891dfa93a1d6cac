package compactkit

import (
	"fmt"
	"unicode/utf8"

	"github.com/compactkit/compactkit/internal/enum"

	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/internal/dups"
	"github.com/compactkit/compactkit/internal/ident"
)

// ChangeKind is a kind of change to a job: the rows of the change table of
// ARCHITECTURE.md ("Job states and changes").
type ChangeKind uint8

// The change kinds. The zero value is not a kind.
const (
	// ChangeAdd creates a job (Unassigned) and claims its sources.
	ChangeAdd ChangeKind = iota + 1
	// ChangeAssign gives an Unassigned job, or an InProgress job whose
	// lease expired, to a worker with a new token and deadline.
	ChangeAssign
	// ChangeExclude marks an InProgress job whose lease expired and whose
	// failures reach the limit as Excluded.
	ChangeExclude
	// ChangeRenew extends the lease of the token holder.
	ChangeRenew
	// ChangeComplete removes the job and commits its outputs.
	ChangeComplete
	// ChangeFail records a failure reported by the token holder.
	ChangeFail
	// ChangeRelease returns the job of a worker shutting down, without
	// counting a failure.
	ChangeRelease
	// ChangeEvict removes an Excluded job when the queue is full; its
	// sources are quarantined.
	ChangeEvict
	// ChangeCancel removes a job on an operator's request; its sources
	// return to the planner.
	ChangeCancel
)

// String returns the kind name.
func (k ChangeKind) String() string {
	return enum.Name("ChangeKind", k, ChangeAdd, "add", "assign", "exclude", "renew", "complete", "fail", "release", "evict", "cancel")
}

// Change is one change to one job, prepared by the leader against a view
// of the state and executed by every replica only if its precondition
// still holds.
//
// Version is the job's version before the entry that carries the change
// (0 for a job that does not exist yet). Apply executes a change only if
// the job's version before the entry still equals it, so two updates
// prepared on the same view can never both take a job. Several changes of
// one update may touch the same job (add then assign, fail then assign);
// they all carry the version from before the entry.
type Change struct {
	_ struct{} `cbor:",toarray"`
	// Kind is the change.
	Kind ChangeKind
	// Job is the job's name.
	Job string
	// Version is the job version the change was prepared against.
	Version uint64
	// Token is the token the worker presented (renew, complete, fail,
	// release). Assignments get their token at Apply and leave it 0.
	Token fencing.Token
	// Worker is the worker the job is assigned to (assign) or that reports
	// (renew, complete, fail, release).
	Worker string
	// Plan is the new job's plan (add only).
	Plan *JobPlan
	// Outputs are the blocks the job wrote (complete only).
	Outputs []BlockMeta
	// Reason is why the attempt failed, as the worker reported it (fail
	// only; at most 1024 bytes of valid UTF-8, longer reasons clipped at a
	// character boundary). The compact encoding (encoding version 1,
	// command version 5) writes it only when it is set.
	Reason string `codec:"optional"`
}

// validReason reports whether s is a reason as ident.ClipReason makes them.
func validReason(s string) bool {
	return len(s) <= ident.MaxReasonLen && utf8.ValidString(s)
}

// Validate reports whether c is well-formed for its kind.
func (c *Change) Validate() error {
	if err := ident.CheckChangeKind(uint8(c.Kind)); err != nil {
		return err
	}
	if err := ident.ValidateJobName(c.Job); err != nil {
		return fmt.Errorf("%s change: %w", c.Kind, err)
	}
	if err := ident.ValidateName("worker", c.Worker, true); err != nil {
		return fmt.Errorf("%s %s: %w", c.Kind, c.Job, err)
	}
	switch c.Kind {
	case ChangeAdd:
		if c.Plan == nil {
			return fmt.Errorf("add %s: no plan: %w", c.Job, ident.ErrInconsistent)
		}
		if err := c.Plan.Validate(); err != nil {
			return fmt.Errorf("add %s: %w", c.Job, err)
		}
		if c.Plan.Name != c.Job || c.Version != 0 {
			return fmt.Errorf("add %s: plan %q, version %d: %w", c.Job, c.Plan.Name, c.Version, ident.ErrInconsistent)
		}
	case ChangeRenew, ChangeComplete, ChangeFail, ChangeRelease:
		if c.Token == 0 {
			return fmt.Errorf("%s %s: token 0: %w", c.Kind, c.Job, ident.ErrInconsistent)
		}
	case ChangeAssign:
		if c.Worker == "" {
			return fmt.Errorf("assign %s: worker: %w", c.Job, ident.ErrEmptyID)
		}
	}
	if c.Kind != ChangeAdd && c.Plan != nil {
		return fmt.Errorf("%s %s: plan on a change that is not add: %w", c.Kind, c.Job, ident.ErrInconsistent)
	}
	if c.Kind != ChangeComplete && len(c.Outputs) > 0 {
		return fmt.Errorf("%s %s: outputs on a change that is not complete: %w", c.Kind, c.Job, ident.ErrInconsistent)
	}
	if c.Reason != "" && c.Kind != ChangeFail {
		return fmt.Errorf("%s %s: reason on a change that is not fail: %w", c.Kind, c.Job, ident.ErrInconsistent)
	}
	if !validReason(c.Reason) {
		return fmt.Errorf("%s %s: reason of %d bytes, limit %d, or not UTF-8: %w", c.Kind, c.Job, len(c.Reason), ident.MaxReasonLen, ErrTooLarge)
	}
	return validateOutputs(c.Job, c.Outputs)
}

func validateOutputs(job string, outputs []BlockMeta) error {
	var seen dups.Tracker[string]
	for i := range outputs {
		if err := outputs[i].Validate(); err != nil {
			return fmt.Errorf("job %s: output: %w", job, err)
		}
		if seen.Seen(outputs[i].ID) {
			return fmt.Errorf("job %s: output %s appears twice: %w", job, outputs[i].ID, ident.ErrInconsistent)
		}
	}
	return nil
}

// PlanUpdate is what the leader's Prepare produces and every replica's
// Apply executes: an ordered list of changes and the leader's timestamp.
//
// In single-commit mode TokenIndex is 0 and assignments take the index of
// the entry that applies the update as their token. In two-commit mode the
// prepare step is itself a log entry and TokenIndex is its index: tokens are
// then the prepare entry's index, as in Pyroscope's two-commit mode.
type PlanUpdate struct {
	_ struct{} `cbor:",toarray"`
	// Time is the leader's timestamp (unix nanoseconds) at Prepare.
	Time int64
	// Changes are executed in order.
	Changes []Change
	// TokenIndex is the index of the prepare entry in two-commit mode, or 0.
	TokenIndex uint64
}

// Validate reports whether u is well-formed: every change valid.
func (u *PlanUpdate) Validate() error {
	for i := range u.Changes {
		if err := u.Changes[i].Validate(); err != nil {
			return fmt.Errorf("plan update: change %d: %w", i, err)
		}
	}
	return nil
}
