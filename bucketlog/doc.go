// Package bucketlog is a compaction log on an object store with
// conditional writes: no Raft group, only a bucket. Entry N is the object
// <prefix>/log/<N, 20 digits>, created with create-if-absent
// ([blockmerge.ConditionalPutter]); a store without it is refused. Any
// number of coordinators append to one log — there is no election — each
// with its own replica of the state machine, and serve workers through a
// [leader.Service] over their [Log].
//
// Invariants:
//   - No gaps, no fork: entry N+1 is created only by a coordinator that
//     has read and applied entries 1..N, and carries the SHA-256 of entry
//     N; of two coordinators creating N+1 one wins, the other reads it,
//     applies it and prepares again (leader.ErrConflict; the service
//     retries with backoff). A replica that reads an entry whose previous
//     hash does not match, or that it cannot decode, stops with
//     ErrCorrupt and never skips it.
//   - Whose an entry is, its nonce says: each entry carries its
//     proposer's. A create that failed in transport, and one answered
//     "exists" ([blockmerge.ErrExists]), are resolved by reading the entry
//     back: "exists" may answer the coordinator's own create, applied by
//     the store after its answer was lost (on S3, the client's retry gets
//     412). An entry with the proposer's nonce is its append, never
//     applied as another coordinator's and never appended again; so is a
//     checkpoint found written, whose header says it is the state at
//     its entry.
//   - Checkpoints: the proposer of every entry whose index is a multiple
//     of the checkpoint interval writes <prefix>/checkpoint/<N> — the
//     state machine's snapshot at N and the hash of entry N. A starting
//     coordinator restores the newest checkpoint and replays the entries
//     after it; one that cannot be read falls back to an older one (or to
//     replaying from entry 1), with a log line.
//   - Truncation is ordered ([Log.Truncate]): first the low-water mark is
//     raised (marker objects created if absent, one per 64 entries: the
//     mark only grows), then older entries and checkpoints are deleted. A
//     coordinator that finds its next entry missing checks the marker at
//     or above it (one existence check per append) and, if the mark has
//     passed it, restores the newest checkpoint instead of creating the
//     entry — a coordinator paused past a truncation never re-creates a
//     deleted index.
//   - Time is one clock's where the store keeps one: an entry's time is
//     the store's modification time of its object
//     ([blockmerge.Timestamper]: S3's Last-Modified, a file's mtime),
//     bounded to within the replicated clock step
//     (raftfsm.Config.MaxClockStep, an hour by default) of the
//     proposer's stamp, then to the state machine's rule: never back,
//     at most one clock step forward per entry. Each entry records
//     whether it is timed by the store; a replica that cannot read the
//     store's times for such an entry stops (ErrUnsupportedStore) rather
//     than fork. A step of more than one lease first extends the leases
//     in progress (a took-office command every replica derives from the
//     entry), so a coordinator outage does not charge healthy jobs a
//     failure; a worker (package worker) whose poll was answered only
//     after the outage, its assignment's lease measured from the poll's
//     first send already half gone, releases the job at once rather than
//     let it expire.
//
// What clocks can and cannot do: a proposer whose clock is within the
// clock step of the store's has no effect on time at all. One further
// ahead moves the log's time forward by its error less the step (at most
// one step per entry): leases it did not extend expire early — jobs run
// again, but no two workers hold one job with valid tokens, since tokens
// are log indexes checked at commit. One further behind cannot move time
// back; while only it appends, time stands still, leases last longer and
// a dead worker's job waits longer. The store's clock is trusted within
// that bound; WithoutStoreTime trusts the proposers' instead. Preparing
// polls is another matter: a coordinator that prepared them at its own
// clock, more than a lease off the log's, would judge leases wrongly — a
// fast one would take healthy jobs for expired and propose reassignments
// that Apply refuses, starving its workers while the error lasts (the
// simulation found it). [Log.Now] is its clock corrected by what its last
// entry measured; [OpenNode] prepares with it.
//
// Commands are batched: every command a coordinator has waiting when it
// appends goes into one entry (up to 64 commands), so a poll and the ingest
// that arrived meanwhile cost one conditional create. Each command has its
// own log index — the fencing token of the jobs it assigns — so entries
// and log indexes are numbered apart: entry N holds the indexes after
// those of entry N-1.
//
// Cost: appending an entry is one conditional create, one existence check
// of the low-water marker, and — on a store that keeps times — one
// modification-time read (a HEAD on S3); every coordinator reads every
// entry (a GET, plus that HEAD). Serve the log with
// leader.WithRetries(n, backoff): under contention a prepared poll loses
// races and is prepared again; and with leader.WithClock(log.Now), so that
// polls are prepared at the log's time (see [Log.Now]).
//
// # Serverless
//
// A [Node] is a replica and a leader service in one process: a worker
// that opens one schedules itself — nothing else to run. Its poll catches
// its replica up (reading every entry the others appended since), is
// prepared there and appended; an idle poll (nothing to report, nothing to
// take) is answered without an entry; a poll that lost two races goes in
// on whatever state it meets (Apply checks every change), so contention
// costs retries, not starvation. Cost, from BENCHMARKS.md: a worker reads
// every entry of the fleet, so its reads per poll grow with the fleet
// (about one GET and one HEAD per other active worker: 17 GETs per poll at
// 16 workers), and the fleet's reads per round of polls grow with its
// square; WithCatchUpLimit caps one catch-up at about n reads, a LIST, a
// checkpoint and the entries after it, which pays off only for small
// states (the checkpoint is the whole state). Every worker holds the whole
// state in memory: about 290 bytes per queued block (290 MB at 1M
// blocks). So: serverless for small fleets and small states; above a
// dozen workers, or for millions of blocks, run one or a few
// coordinators (a Node serving workers over RPC: 3 requests per poll
// whatever the number of workers), or Raft.
//
// It runs on blockmerge's NewMemStore and FileStore and on S3
// (blockmerge/objstore's ConditionalStore, If-None-Match: *).
package bucketlog
