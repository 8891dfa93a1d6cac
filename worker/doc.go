// Package worker is compactkit's compaction worker runtime: a poll loop that
// takes jobs from the leader, runs them (with package blockmerge, or the
// host's own [Runner]), keeps their leases alive and reports how they ended.
//
// # The poll loop
//
// A [Worker] talks to the leader through a [Client], one request at a time.
// Every request ([compactkit.PollRequest]) carries the worker's ID, a
// sequence number, a status update for every job the worker holds and the
// number of free slots: [Config.Concurrency] minus the jobs in progress
// (merges running, including cancelled ones that have not returned yet; a
// job that ended and awaits the answer to its report takes no slot). The
// worker polls every [Config.PollInterval] when it has nothing to say, at
// once when a job ends, and whenever a job's lease needs renewing.
//
// A request that fails in transport is retried with the same sequence number
// and the same content until it is answered or the worker shuts down: the
// state machine answers a retried (worker ID, sequence number) with the
// response it recorded, so a reply lost on the way back costs nothing — the
// worker learns its assignments on the retry instead of losing them to lease
// expiry. Only after an answer does the next request get the next number.
//
// A request the leader refuses as invalid without applying it — the Client
// returns an error wrapping [compactkit.ErrRejected] — is not retried, since it cannot
// succeed: its success reports (the only part of a request the leader checks
// against its state) become failure reports, and the worker sends a new
// request with the next sequence number after a backoff.
//
// The state machine's poll log is keyed by (worker ID, sequence number), and
// sequence numbers restart at 1 with every Worker. A worker ID must therefore
// be unique per process incarnation: a restarted worker that reused its
// predecessor's ID would be answered its predecessor's recorded responses.
// [NewID] makes such an ID from a readable name and a random suffix; it is
// what [New] uses when [Config.ID] is empty.
//
// # Jobs and leases
//
// Every status update renews the job's lease, and each job has a
// [lease.Keeper], started with the lease of its assignment measured from the
// moment the request that got it was first sent. The keeper's renewals ride
// on polls: when a renewal is due (every half lease), the keeper asks the
// loop for a poll sent after its request and waits for that poll's answer
// about the job. "Renewed" extends the local lease; "no lease" loses it; a
// transport failure is a transient error that the keeper retries until the
// locally measured lease runs out. Because a poll renews every job the
// worker holds, each held job is renewed at least every half lease.
//
// An assignment that arrives too late to run — its first renewal already
// due when the answer comes, as when the request that got it was retried
// through an outage of the leader — is not run: the worker reports it
// released at once, in the next poll, so that the job goes back to the
// queue without a failure instead of running out its lease at the leader
// and being charged "lease expired". The leader measured that lease from
// when it applied the request, later than the worker's first send, so the
// release reaches it while the lease holds; it is the one report sent
// for a job whose lease may have run out locally (answered "no lease" if
// the leader's has too). Jobs assigned beyond the free slots, or during
// shutdown, are released the same way.
//
// When a job's lease is lost — the leader answers "no lease", or the lease
// runs out locally — its context is cancelled, so its merge stops, and the
// job is dropped: it is never reported again, and never reported successful.
// The decision is taken under the worker's lock both when a job ends and when
// a request is built, so a merge that completes at the moment its lease goes
// is not reported either. One exception is inherent in retrying: a request
// built while the lease held is retried unchanged, even after the lease ran
// out locally, because the leader may have applied it already and answers
// the retry with what it recorded. Whether such a late report counts is the
// leader's decision: the state machine's commit-time token check is the real
// guarantee; the worker's checks only keep an honest worker from trying.
//
// # Running a job
//
// A job first deletes the objects its tombstones name
// ([blockmerge.Layout.DeleteTombstones] in [Config.Layout], bounded by
// [Config.CleanupTimeout]), then merges its sources with the [Runner]
// ([blockmerge.Merge] by default; a host plugs in its own block format)
// into outputs under the attempt's prefix — outputs outside it are refused
// and the job reported failed. Both go through a store of [blockmerge.NewFencedStore] sharing one
// [fencing.Guard] per worker, so a stale attempt of a job in this process
// cannot write after a newer one started. The job's report is then sent
// until the leader answers about it:
//
//   - success, with the outputs' metadata: it also confirms the tombstones.
//     A cleanup-only job (no sources) reports success without outputs;
//   - failure, with the error as reason, when the merge or a deletion
//     failed: the tombstones stay attached to the job and are deleted again
//     by the next attempt (deletion is idempotent).
//
// # Shutdown
//
// [Worker.Run] returns once its context is cancelled: the jobs in progress
// are cancelled and, after they stopped (bounded by
// [Config.ShutdownTimeout]), a final poll with no free slots reports them
// released — reassigned without counting a failure — along with the reports
// of jobs that had ended. A request left unanswered when the context ended is
// first retried, so the jobs it may have been assigned are released too.
package worker
