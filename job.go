package compactkit

import (
	"fmt"
	"strings"

	"github.com/compactkit/compactkit/internal/enum"

	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/internal/dups"
	"github.com/compactkit/compactkit/internal/ident"
)

// JobStatus is the status of a job as the scheduler stores it.
type JobStatus uint8

// The stored job statuses (ARCHITECTURE.md, "Job states and changes"). The
// zero value is not a status.
const (
	// StatusUnassigned: created, or released or failed and waiting for a
	// worker.
	StatusUnassigned JobStatus = iota + 1
	// StatusInProgress: held by the worker with the current token until the
	// lease deadline.
	StatusInProgress
	// StatusExcluded: the failure limit was reached; never assigned until
	// an operator retries it.
	StatusExcluded
)

// String returns the status name.
func (s JobStatus) String() string {
	return enum.Name("JobStatus", s, StatusUnassigned, "unassigned", "in_progress", "excluded")
}

// ReportStatus is what a worker reports about a job it holds.
type ReportStatus uint8

// The statuses a worker reports. The zero value is not a status.
const (
	// ReportInProgress: still working; renew the lease.
	ReportInProgress ReportStatus = iota + 1
	// ReportSuccess: done; the outputs are written and the report carries
	// their metadata.
	ReportSuccess
	// ReportFailure: the attempt failed; count a failure and reassign.
	ReportFailure
	// ReportReleased: the worker is shutting down; reassign without
	// counting a failure.
	ReportReleased
)

// String returns the status name.
func (s ReportStatus) String() string {
	return enum.Name("ReportStatus", s, ReportInProgress, "in_progress", "success", "failure", "released")
}

// TombstoneKind says what a tombstone deletes.
type TombstoneKind uint8

// The tombstone kinds. The zero value is not a kind.
const (
	// TombstoneBlock deletes the object of a block that was replaced by a
	// compaction output or dropped by retention: ObjectKey(Target).
	TombstoneBlock TombstoneKind = iota + 1
	// TombstonePrefix deletes every object under a prefix: the outputs of
	// an attempt that ended without being committed (an orphan).
	TombstonePrefix
)

// String returns the kind name.
func (k TombstoneKind) String() string {
	return enum.Name("TombstoneKind", k, TombstoneBlock, "block", "prefix")
}

// Tombstone names objects to delete once nobody can read them any more.
// Tombstones ride on jobs: the worker deletes the objects and its success
// report confirms the deletion.
type Tombstone struct {
	_ struct{} `cbor:",toarray"`
	// Kind says whether Target is a block ID or an object key prefix.
	Kind TombstoneKind
	// Target is the block ID (TombstoneBlock) or the object key prefix,
	// ending in '/' (TombstonePrefix).
	Target string
}

// Validate reports whether t names something deletable.
func (t Tombstone) Validate() error {
	switch t.Kind {
	case TombstoneBlock:
		if err := ident.ValidateID(t.Target); err != nil {
			return fmt.Errorf("tombstone: %w", err)
		}
	case TombstonePrefix:
		if !strings.HasSuffix(t.Target, "/") || !strings.HasPrefix(t.Target, BlockPrefix) {
			return fmt.Errorf("tombstone prefix %q: must start with %q and end with '/': %w", t.Target, BlockPrefix, ident.ErrInvalidID)
		}
		if err := ident.ValidateID(strings.TrimSuffix(t.Target, "/")); err != nil {
			return fmt.Errorf("tombstone prefix: %w", err)
		}
	default:
		return fmt.Errorf("tombstone kind %d: %w", uint8(t.Kind), ident.ErrUnknownChange)
	}
	return nil
}

// String formats the tombstone as kind:target.
func (t Tombstone) String() string { return t.Kind.String() + ":" + t.Target }

// AnyShard is the shard of a compaction key, and of a job plan, that leaves
// the shard out: the level's blocks of a tenant are compacted across shards.
const AnyShard = ^uint32(0)

// JobPlan is what a compaction job does: merge its source blocks (all of
// one tenant, shard and level) into new blocks one level up, and delete the
// objects its tombstones name. A cleanup-only job has tombstones and no
// sources.
type JobPlan struct {
	_ struct{} `cbor:",toarray"`
	// Name identifies the job: 1 to 256 bytes of ASCII letters, digits,
	// '.', '_' and '-', neither "." nor ".." (an object-path segment, see
	// [AttemptPrefix]).
	Name string
	// Tenant, Shard and Level are the compaction key of the sources. Tenant
	// is empty for a job over multi-tenant level-0 segments; Shard is
	// AnyShard for a level compacted across shards.
	Tenant string
	Shard  uint32
	Level  uint32
	// Sources are the IDs of the blocks to merge, in arrival order.
	Sources []string
	// Tombstones are the deletions the job carries.
	Tombstones []Tombstone
}

// CleanupOnly reports whether the job only deletes.
func (p *JobPlan) CleanupOnly() bool { return len(p.Sources) == 0 }

// Clone returns a deep copy of p.
func (p *JobPlan) Clone() JobPlan {
	c := *p
	c.Sources = append([]string(nil), p.Sources...)
	c.Tombstones = append([]Tombstone(nil), p.Tombstones...)
	return c
}

// Validate reports whether p is well-formed: a valid name, valid and
// distinct sources, valid and distinct tombstones, and something to do.
func (p *JobPlan) Validate() error {
	if err := ident.ValidateJobName(p.Name); err != nil {
		return err
	}
	if err := ident.ValidateName("tenant", p.Tenant, true); err != nil {
		return fmt.Errorf("job %s: %w", p.Name, err)
	}
	if len(p.Sources) == 0 && len(p.Tombstones) == 0 {
		return fmt.Errorf("job %s: no sources and no tombstones: %w", p.Name, ident.ErrInconsistent)
	}
	var seen dups.Tracker[string]
	for _, id := range p.Sources {
		if err := ident.ValidateID(id); err != nil {
			return fmt.Errorf("job %s: source: %w", p.Name, err)
		}
		if seen.Seen(id) {
			return fmt.Errorf("job %s: source %s appears twice: %w", p.Name, id, ident.ErrInconsistent)
		}
	}
	var seenTomb dups.Tracker[Tombstone]
	for _, t := range p.Tombstones {
		if err := t.Validate(); err != nil {
			return fmt.Errorf("job %s: %w", p.Name, err)
		}
		if seenTomb.Seen(t) {
			return fmt.Errorf("job %s: tombstone %s appears twice: %w", p.Name, t, ident.ErrInconsistent)
		}
	}
	return nil
}

// JobState is the scheduler's record of a job.
type JobState struct {
	_ struct{} `cbor:",toarray"`
	// Name identifies the job.
	Name string
	// Tenant and Level are those of the job's plan.
	Tenant string
	Level  uint32
	// Status is the stored status.
	Status JobStatus
	// Token is the fencing token of the current (or last) assignment: the
	// log index of the entry that made it. A new job's token is the index
	// of the entry that created it.
	Token fencing.Token
	// Version is the index of the entry that last changed the job. Changes
	// carry the version they were prepared against.
	Version uint64
	// Deadline is the lease deadline (unix nanoseconds) while in progress.
	Deadline int64
	// AddedAt is the log time (unix nanoseconds) the job was created.
	AddedAt int64
	// Failures counts failed and abandoned attempts.
	Failures uint32
	// Worker is the worker holding (or that last held) the job.
	Worker string
	// LastFailure is why the last failed or abandoned attempt ended: the
	// reason its worker reported, or "lease expired". FailedAt is the log
	// time (unix nanoseconds) it was recorded, 0 if never. Both survive a
	// retry, which resets Failures.
	LastFailure string
	FailedAt    int64
	// History is what happened to the job, oldest first, at most
	// 8 events (the oldest are dropped): its attempts with
	// their tokens and workers and how they ended, exclusion, an
	// operator's retry.
	History []JobEvent
}

// JobEventKind is what happened to a job.
type JobEventKind uint8

// The event kinds. The zero value is not a kind.
const (
	// EventAssigned: an attempt started (Token and Worker are its).
	EventAssigned JobEventKind = iota + 1
	// EventFailed: the attempt's worker reported a failure (Detail is
	// the reason).
	EventFailed
	// EventLeaseExpired: the attempt's lease ran out.
	EventLeaseExpired
	// EventReleased: the attempt's worker gave the job back.
	EventReleased
	// EventExcluded: the job reached its failure limit.
	EventExcluded
	// EventRetried: an operator returned the excluded job to the queue
	// (Detail names the operator, if known).
	EventRetried
)

// String returns the kind's name.
func (k JobEventKind) String() string {
	return enum.Name("JobEventKind", k, EventAssigned, "assigned", "failed", "lease_expired", "released", "excluded", "retried")
}

// JobEvent is one event of a job's history.
type JobEvent struct {
	_ struct{} `cbor:",toarray"`
	// At is the log time of the event (unix nanoseconds).
	At int64
	// Kind is what happened.
	Kind JobEventKind
	// Token and Worker are those of the attempt the event is about (none
	// for exclusion and retry).
	Token  fencing.Token
	Worker string
	// Detail is the failure reason, or who retried the job.
	Detail string
}

// Validate reports whether e is well-formed.
func (e *JobEvent) Validate() error {
	if e.Kind < EventAssigned || e.Kind > EventRetried || e.At < 0 || !validReason(e.Detail) {
		return fmt.Errorf("job event %s at %d: %w", e.Kind, e.At, ident.ErrInconsistent)
	}
	return ident.ValidateName("job event: worker", e.Worker, true)
}

// Validate reports whether s is well-formed.
func (s *JobState) Validate() error {
	if err := ident.ValidateJobName(s.Name); err != nil {
		return err
	}
	if err := ident.CheckJobStatus(uint8(s.Status)); err != nil {
		return fmt.Errorf("job %s: %w", s.Name, err)
	}
	if !validReason(s.LastFailure) || s.FailedAt < 0 {
		return fmt.Errorf("job %s: last failure %q at %d: %w", s.Name, s.LastFailure, s.FailedAt, ident.ErrInconsistent)
	}
	if len(s.History) > ident.MaxJobHistory {
		return fmt.Errorf("job %s: %d history events, at most %d: %w", s.Name, len(s.History), ident.MaxJobHistory, ident.ErrInconsistent)
	}
	for i := range s.History {
		if err := s.History[i].Validate(); err != nil {
			return fmt.Errorf("job %s: %w", s.Name, err)
		}
	}
	if err := ident.ValidateName("worker", s.Worker, true); err != nil {
		return fmt.Errorf("job %s: %w", s.Name, err)
	}
	return nil
}
