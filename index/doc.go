// Package index is the replicated catalogue of live blocks that queries
// read from: block metadata, atomic exactly-once replacement of compacted
// blocks, tombstones for the objects to delete, deduplication of ingest
// retries, and retention.
//
// It is a deterministic component of the replicated state machine (see
// package raftfsm): every method that changes an [Index] is called from
// Apply with the values of a log entry (its [compactkit.Entry] and its
// effective log time now), and two indexes that receive the same calls are
// identical, snapshot bytes included. The index keeps the largest now it
// has seen ([View.Now]), so its time never goes backwards. It uses no
// wall clock, no randomness, no map iteration order and no goroutines.
//
// An [Index] is written to; every read goes through a copy-on-write
// [View], opened in O(1) with [Index.View], on the Apply goroutine as on
// any other (queries, the leader's Prepare, a background snapshot). Its
// trees follow the copy-on-write rule of internal/cow, stated there once:
// each belongs to the index, which mutates it in place, until it is frozen
// for a view that reads it or that is still open when the index is about
// to mutate it. Closing a view that is done ([View.Close]) spares the index
// copying the trees the view never read. The state keeps the first entry of
// the unattached tombstones' release order beside the trees, so a view that
// finds nothing releasable ([View.Releasable],
// [View.OldestUnattachedReleasable]) reads none of them.
//
// # Blocks
//
// [Index.Add] adds a block. It is idempotent: an ID that is live,
// tombstoned, deleted less than [Config.DedupHorizon] ago (default 24 h of
// log time), or under an orphaned attempt prefix is refused with an error
// wrapping [ErrDuplicate], so a delayed ingest retry cannot resurrect a
// deleted block. Malformed metadata is refused with the error of
// [compactkit.BlockMeta.Validate].
//
// Queries run on a view. [View.Query] returns the blocks of a tenant that
// overlap [from, to], optionally of one shard, in time order (MinTime, then
// ID). Level-0 segments that hold several tenants (empty block tenant) are
// found through their datasets' tenants. [View.ReadAmplification] counts
// the objects such a query must read, the figure compaction exists to
// reduce. [Index.Stats] counts blocks and bytes per tenant and level.
//
// Blocks are stored twice, in ordered sets of sorted leaves under a
// github.com/google/btree tree: by ID, and in a time index of runs, one
// per (tenant, span class), where the span class of a block is the bit
// length of MaxTime-MinTime. A run is ordered by MinTime, so a query
// scans, in each run of the tenant, only the blocks that start at most one
// class span before from: it touches the matching range and near misses of
// the same class, never the whole tenant. Restore builds the sets' leaves
// from sorted input instead of inserting the blocks one by one.
//
// # Replacement
//
// [Index.Replace] commits a job attempt's completion, identified by (job,
// fencing token). It is atomic and exactly-once:
//
//   - every source live, outputs valid and new: the sources leave the index
//     and become block tombstones, the outputs enter it;
//   - otherwise nothing enters or leaves the index: the [ReplaceResult]
//     lists the missing and the surviving sources and says why
//     ([Refusal]), and the attempt's output prefix
//     ([compactkit.AttemptPrefix]) becomes an orphan tombstone, so a
//     completion can never resurrect data that retention removed;
//   - the same (job, token) again, within [Config.CompletedRetention]:
//     no change, the recorded result with Replayed set.
//
// # Tombstones and cleanup
//
// A tombstone ([compactkit.Tombstone]) names objects to delete: a block, or
// an attempt's output prefix. It becomes releasable once the cleanup delay
// ([Config.CleanupDelay], default 15 min) has passed since its creation
// and, if the hosts report a reader watermark ([Index.SetWatermark]), once
// every read that started before its creation has finished (bounded by
// [Config.ReaderTimeout]).
//
// Tombstones ride on jobs. [View.Releasable] lists the releasable,
// unattached tombstones in a stable order (release time, creation time,
// kind, target) and [Index.Attach] records which job holds each, when the
// job is created. The holder's success
// confirms them ([Index.Confirm]): they are removed, and a deletion record
// keeps their IDs from re-entering the index for the deduplication horizon.
// Eviction or cancellation of the holder detaches them ([Index.Detach]) for
// the next job. A tombstone is never dropped before confirmation, is held
// by at most one job, and confirming twice is harmless.
// [View.OldestUnattachedReleasable] tells the state machine when
// releasable tombstones have waited too long for a compaction job to carry
// them, so that it creates a cleanup-only job. [Index.AddOrphan] tombstones
// the output prefix of an attempt that ended without commit (reassigned,
// evicted, cancelled).
//
// # Records
//
// Once the state machine turns records on ([Index.SetRecords], from
// cluster version 6), an applied replacement writes one tombstone record
// listing its sources, instead of one tombstone per source. A record is
// released, attached, detached and confirmed as a unit; its sources share
// its creation time, release time and entry. Orphan prefixes and
// retention's tombstones stand alone, as do the tombstones made before
// records were turned on: both kinds are pending side by side until they
// are confirmed, and a tombstone that stands alone behaves as a record of
// one object.
//
//   - Order. The pool orders records and tombstones that stand alone by
//     release time, creation time, then the key of a record's first source
//     (its sources sorted by kind and target). [View.Releasable] expands a
//     record at its place into its sources, one after the other in that
//     order: a worker sees objects to delete, in the form it always has.
//   - Batch limits count objects. A job takes the objects the state
//     machine pulls (up to the planner's TombstonesPerJob, or a cleanup-only
//     job's batch), and [Index.Attach] attaches a record whole when any of
//     its sources is listed: the job's plan gets every source of the
//     record, in order, at the place of the first one listed, so a job may
//     carry up to one record's sources minus one beyond its limit. A record
//     is never split between jobs; sources listed again for another job
//     while the record is held are not accepted.
//   - Attach, Confirm and Detach act on whole records: the holder is
//     recorded once per record, Confirm removes the record and writes a
//     deletion record for each source, Detach returns the record to the
//     pool. Their counts are of objects.
//   - Operators ask about objects: [View.Tombstone] and [View.Tombstones]
//     answer for each source of a record, with the record's times, entry and
//     holder in its [TombstoneInfo], and [Stats] counts objects.
//
// # Retention
//
// [Index.DropBefore] turns the live blocks of a tenant (or of every tenant)
// that end before a time into tombstones and returns them, so that the
// state machine can drop them from the planner and cancel the jobs that
// claim them. [Index.Expire] forgets deletion records and replacement
// results past their horizons; it only frees memory and changes no
// decision.
//
// # Snapshots
//
// [View.Snapshot] writes the index, on any goroutine, as one framed,
// checksummed, columnar stream; [Restore] reads it back, validating
// everything, and rejects malformed input with an error
// wrapping one of the root package's decoding errors
// ([compactkit.ErrMalformed], [compactkit.ErrTruncated], ...). The bytes are
// a function of the logical state only: Restore(Snapshot(x)) behaves
// exactly like x and re-snapshots to identical bytes. A snapshot is written
// at version 1 while no record is pending, and at version 2, which adds a
// records section, otherwise. Both are recorded in testdata/golden, and
// every later release must restore them. Whether records are on is not in
// the snapshot: the state machine sets it before every replacement.
//
// # Configuration
//
// [Config] is replicated state: it affects Apply, so it changes only
// through [Index.SetConfig] when a configuration command is applied, and it
// is part of the snapshot.
package index
