package worker

// Stats are a worker's counters since it was created, and two gauges.
//
// Every job assigned to the worker ends in exactly one of completed,
// failed, released and lost, or is still held:
// JobsAssigned = JobsCompleted + JobsFailed + JobsReleased + JobsLost + JobsHeld.
type Stats struct {
	// Polls counts the requests answered by the leader.
	Polls uint64
	// PollRetries counts the requests that failed in transport and were
	// sent again (with the same sequence number).
	PollRetries uint64
	// BadResponses counts answers that failed validation and were
	// ignored.
	BadResponses uint64
	// Rejections counts the requests the leader rejected as invalid (see
	// [compactkit.ErrRejected]).
	Rejections uint64
	// Renewals counts the leases the leader renewed on a renewal the
	// worker's lease keepers asked for.
	Renewals uint64

	// JobsAssigned counts the jobs the leader assigned to the worker.
	JobsAssigned uint64
	// JobsStarted counts the jobs the worker started running (jobs
	// assigned during shutdown, beyond the free slots or too late to run
	// are released without being started).
	JobsStarted uint64
	// JobsCompleted counts the jobs whose success the leader committed.
	JobsCompleted uint64
	// JobsFailed counts the jobs whose failure report the leader
	// accepted.
	JobsFailed uint64
	// JobsReleased counts the jobs whose release the leader accepted.
	JobsReleased uint64
	// JobsLost counts the jobs dropped without the leader accepting a
	// report: the leader answered "no lease", the lease ran out locally,
	// or the final poll of a shutdown went unanswered.
	JobsLost uint64

	// TombstonesDeleted counts the tombstones whose objects were deleted.
	TombstonesDeleted uint64
	// BlocksWritten and BytesWritten count the output blocks, and their
	// bytes, written by merges that succeeded (including merges whose
	// lease was lost afterwards: their outputs are orphans the leader
	// tombstones).
	BlocksWritten uint64
	BytesWritten  uint64

	// JobsHeld is the number of jobs the worker holds now: running, or
	// ended with a report not yet answered.
	JobsHeld int
	// JobsRunning is the number of jobs running now (including jobs
	// dropped whose cancelled merge has not returned yet).
	JobsRunning int
}
