package scheduler

import "fmt"

// Skip says why a change was skipped: its precondition did not hold, so
// nothing changed. A [Result] carries it with a detail naming the
// offending values.
type Skip uint8

// The skip reasons. The zero value means the change was applied.
const (
	// NotSkipped: the change was applied.
	NotSkipped Skip = iota
	// SkippedStaleEntry: the transaction skips every change of its entry,
	// one at or below the last entry begun (applied already), of index 0,
	// or whose token index is after it (see [Scheduler.Begin]).
	SkippedStaleEntry
	// SkippedInvalid: the change is malformed: nil, of an unknown kind, an
	// assign without a worker, or an add without a plan of its name.
	SkippedInvalid
	// SkippedStaleVersion: the job's version before the entry is not the
	// one the change was prepared against.
	SkippedStaleVersion
	// SkippedUnknownJob: no such job (it completed, was cancelled, evicted
	// or never added).
	SkippedUnknownJob
	// SkippedJobExists: an add of a job that exists.
	SkippedJobExists
	// SkippedCompletedRecently: an add of a job that completed recently.
	SkippedCompletedRecently
	// SkippedQueueFull: an add while the queue is at its limit
	// (Config.MaxQueueSize).
	SkippedQueueFull
	// SkippedPaused: an add or an assign of a job whose tenant or level is
	// paused.
	SkippedPaused
	// SkippedExcluded: an assign of an excluded job.
	SkippedExcluded
	// SkippedLeaseNotExpired: an assign of a job in progress whose lease
	// has not expired.
	SkippedLeaseNotExpired
	// SkippedAtFailureLimit: an assign of a job whose lease expired and
	// whose abandoned attempt reaches the failure limit: the job is to be
	// excluded instead.
	SkippedAtFailureLimit
	// SkippedTokenNotNewer: an assign whose token is not greater than the
	// job's last assignment's.
	SkippedTokenNotNewer
	// SkippedNoExpiredLease: an exclude of a job that is not in progress
	// with an expired lease.
	SkippedNoExpiredLease
	// SkippedBelowFailureLimit: an exclude of a job whose abandoned attempt
	// does not reach the failure limit.
	SkippedBelowFailureLimit
	// SkippedNoLease: a renew, complete, fail or release whose token or
	// worker is not the job's attempt in progress.
	SkippedNoLease
	// SkippedNotExcluded: an evict of a job that is not excluded.
	SkippedNotExcluded
	// SkippedQueueBelowLimit: an evict while the queue is below its limit.
	SkippedQueueBelowLimit
	// SkippedNotAdmissible: an add whose plan the planner refuses (its
	// sources are not the planner's to give). Set by the state machine
	// (raftfsm), which checks the plan before the scheduler sees it.
	SkippedNotAdmissible
	// SkippedNoTombstoneLeft: an add of a cleanup-only job none of whose
	// tombstones is left to clean. Set by the state machine (raftfsm).
	SkippedNoTombstoneLeft
	// SkippedClosed: an add or an assign of a job whose tenant's policy is
	// closed at its level: held by a run window or a not-before time
	// ([TenantPolicy].Closed, ClosedLevels).
	SkippedClosed
	// SkippedCapped: an assign of an unassigned job whose tenant is at its
	// cap of jobs in progress ([TenantPolicy].MaxInProgress).
	SkippedCapped

	// NumSkips is the number of Skip values: every reason is below it.
	NumSkips
)

var skipNames = [NumSkips]string{
	NotSkipped:               "applied",
	SkippedStaleEntry:        "stale entry",
	SkippedInvalid:           "invalid",
	SkippedStaleVersion:      "stale version",
	SkippedUnknownJob:        "unknown job",
	SkippedJobExists:         "job exists",
	SkippedCompletedRecently: "completed recently",
	SkippedQueueFull:         "queue full",
	SkippedPaused:            "paused",
	SkippedExcluded:          "excluded",
	SkippedLeaseNotExpired:   "lease not expired",
	SkippedAtFailureLimit:    "at failure limit",
	SkippedTokenNotNewer:     "token not newer",
	SkippedNoExpiredLease:    "no expired lease",
	SkippedBelowFailureLimit: "below failure limit",
	SkippedNoLease:           "no lease",
	SkippedNotExcluded:       "not excluded",
	SkippedQueueBelowLimit:   "queue below limit",
	SkippedNotAdmissible:     "not admissible",
	SkippedNoTombstoneLeft:   "no tombstone left",
	SkippedClosed:            "window closed",
	SkippedCapped:            "at cap",
}

// String returns the reason's name: a few lowercase words ("stale
// version"), "applied" for NotSkipped.
func (s Skip) String() string {
	if s < NumSkips {
		return skipNames[s]
	}
	return fmt.Sprintf("Skip(%d)", uint8(s))
}

// Explain says why a change was skipped, for people: the reason, then the
// detail if there is one ("stale version: prepared against 1, job at 2
// before entry 3"). It returns "" for NotSkipped.
func (s Skip) Explain(detail string) string {
	switch {
	case s == NotSkipped:
		return ""
	case detail == "":
		return s.String()
	default:
		return s.String() + ": " + detail
	}
}
