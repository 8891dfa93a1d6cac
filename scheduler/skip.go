package scheduler

import "fmt"

// Skip says why a change was skipped: its precondition did not hold, so
// nothing changed. A [Result] carries it with a detail naming the
// offending values, and [Result.Why] puts them in words; [Skip.String]
// names a reason ("stale version", "no lease", "queue full", ...). The
// zero Skip is an applied change's. The reasons below [NumSkips] are the
// scheduler's own and the state machine's three: [SkippedJobExists],
// [SkippedNotAdmissible] and [SkippedNoTombstoneLeft].
type Skip uint8

// The skip reasons.
const (
	// notSkipped: the change was applied.
	notSkipped Skip = iota
	// skippedStaleEntry: the transaction skips every change of its entry,
	// one at or below the last entry begun (applied already), of index 0,
	// or whose token index is after it (see [Scheduler.Begin]).
	skippedStaleEntry
	// skippedInvalid: the change is malformed: nil, of an unknown kind, an
	// assign without a worker, or an add without a plan of its name.
	skippedInvalid
	// skippedStaleVersion: the job's version before the entry is not the
	// one the change was prepared against.
	skippedStaleVersion
	// skippedUnknownJob: no such job (it completed, was cancelled, evicted
	// or never added).
	skippedUnknownJob
	// SkippedJobExists: an add of a job that exists.
	SkippedJobExists
	// skippedCompletedRecently: an add of a job that completed recently.
	skippedCompletedRecently
	// skippedQueueFull: an add while the queue is at its limit
	// (Config.MaxQueueSize).
	skippedQueueFull
	// skippedPaused: an add or an assign of a job whose tenant or level is
	// paused.
	skippedPaused
	// skippedExcluded: an assign of an excluded job.
	skippedExcluded
	// skippedLeaseNotExpired: an assign of a job in progress whose lease
	// has not expired.
	skippedLeaseNotExpired
	// skippedAtFailureLimit: an assign of a job whose lease expired and
	// whose abandoned attempt reaches the failure limit: the job is to be
	// excluded instead.
	skippedAtFailureLimit
	// skippedTokenNotNewer: an assign whose token is not greater than the
	// job's last assignment's.
	skippedTokenNotNewer
	// skippedNoExpiredLease: an exclude of a job that is not in progress
	// with an expired lease.
	skippedNoExpiredLease
	// skippedBelowFailureLimit: an exclude of a job whose abandoned attempt
	// does not reach the failure limit.
	skippedBelowFailureLimit
	// skippedNoLease: a renew, complete, fail or release whose token or
	// worker is not the job's attempt in progress.
	skippedNoLease
	// skippedNotExcluded: an evict of a job that is not excluded.
	skippedNotExcluded
	// skippedQueueBelowLimit: an evict while the queue is below its limit.
	skippedQueueBelowLimit
	// SkippedNotAdmissible: an add whose plan the planner refuses (its
	// sources are not the planner's to give). Set by the state machine
	// (raftfsm), which checks the plan before the scheduler sees it.
	SkippedNotAdmissible
	// SkippedNoTombstoneLeft: an add of a cleanup-only job none of whose
	// tombstones is left to clean. Set by the state machine (raftfsm).
	SkippedNoTombstoneLeft
	// skippedClosed: an add or an assign of a job whose tenant's policy is
	// closed at its level: held by a run window or a not-before time
	// ([Limits].Closed, ClosedLevels).
	skippedClosed
	// skippedCapped: an assign of an unassigned job whose tenant is at its
	// cap of jobs in progress ([Limits].MaxInProgress).
	skippedCapped

	// NumSkips is the number of Skip values: every reason is below it.
	NumSkips
)

var skipNames = [NumSkips]string{
	notSkipped:               "applied",
	skippedStaleEntry:        "stale entry",
	skippedInvalid:           "invalid",
	skippedStaleVersion:      "stale version",
	skippedUnknownJob:        "unknown job",
	SkippedJobExists:         "job exists",
	skippedCompletedRecently: "completed recently",
	skippedQueueFull:         "queue full",
	skippedPaused:            "paused",
	skippedExcluded:          "excluded",
	skippedLeaseNotExpired:   "lease not expired",
	skippedAtFailureLimit:    "at failure limit",
	skippedTokenNotNewer:     "token not newer",
	skippedNoExpiredLease:    "no expired lease",
	skippedBelowFailureLimit: "below failure limit",
	skippedNoLease:           "no lease",
	skippedNotExcluded:       "not excluded",
	skippedQueueBelowLimit:   "queue below limit",
	SkippedNotAdmissible:     "not admissible",
	SkippedNoTombstoneLeft:   "no tombstone left",
	skippedClosed:            "window closed",
	skippedCapped:            "at cap",
}

// String returns the reason's name: a few lowercase words ("stale
// version"), "applied" for the zero Skip.
func (s Skip) String() string {
	if s < NumSkips {
		return skipNames[s]
	}
	return fmt.Sprintf("Skip(%d)", uint8(s))
}

// explain says why a change was skipped, for people: the reason, then the
// detail if there is one ("stale version: prepared against 1, job at 2
// before entry 3"). It returns "" for notSkipped.
func (s Skip) explain(detail string) string {
	switch {
	case s == notSkipped:
		return ""
	case detail == "":
		return s.String()
	default:
		return s.String() + ": " + detail
	}
}
