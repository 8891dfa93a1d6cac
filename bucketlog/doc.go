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
//   - An unknown outcome (a create that failed in transport) is resolved
//     by reading the entry back: each entry carries its proposer's nonce.
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
//   - Time is the proposer's: the leader service stamps every command,
//     and the state machine keeps its time monotonic, bounded by the
//     replicated clock step. A fast proposer clock moves the log's time
//     forward by at most that step per entry; a slow one cannot move it
//     back.
//
// Each entry holds one compactkit command; indexes are the log's, so they
// are the fencing tokens, as with Raft. Serve it with
// leader.WithRetries(n, backoff): under contention a prepared poll loses
// races and is prepared again.
//
// It runs on blockmerge's MemStore and FileStore and on S3
// (blockmerge/objstore's ConditionalStore, If-None-Match: *). Not yet
// built: batching several commands per entry, and entry times taken from
// the store.
package bucketlog
