// Package blockmerge is what a compaction worker runs: the block format,
// the object-store interface with its stores, and the streaming merge of
// the matching datasets of a job's source blocks.
//
// # Object stores
//
// [Store] is a small, context-aware object-store interface: Get, GetRange,
// Size, Exists, an atomic Put, an idempotent Delete, List in lexical key
// order, and DeleteByPrefix for the outputs of abandoned attempts. Absent
// objects are errors wrapping [ErrNotFound] that name the object; keys are
// checked by [ValidateKey] and can never escape a store's root.
//
//   - [NewMemStore] keeps objects in memory (tests, examples).
//   - [FileStore] is the embedded default: a directory on the local
//     filesystem, written with temporary file, fsync, rename and directory
//     fsync, through an [os.Root].
//   - The nested module github.com/compactkit/compactkit/blockmerge/objstore
//     adapts any github.com/thanos-io/objstore bucket (S3, GCS, Azure, ...)
//     without pulling cloud SDKs into this module.
//   - [NewFencedStore] wraps a store for one attempt and refuses writes
//     from a stale fencing token within one process (deleting the
//     attempt's own outputs excepted); the state machine's commit-time
//     token check remains the real guarantee.
//
// The package storetest holds the conformance suite every store passes.
//
// # Block format v1
//
// A block is one immutable object: a header (magic "CKBK", version), the
// dataset sections, a footer and a fixed 16-byte trailer giving the
// footer's length and checksum. A dataset is a sequence of records (key
// bytes, timestamp, value bytes) sorted by key, then timestamp (then
// value), in pages of bounded size, each with its own CRC-32C. The footer
// (encoded with compactkit's deterministic CBOR codec) holds the block's
// metadata and the dataset index: tenant, name, offset, length, record
// count, min and max timestamp and CRC-32C of each dataset. A [Reader]
// fetches the end of the object with one range read (trailer and, usually,
// footer), then streams only the datasets asked for with one range read
// each. See format.go for the byte layout.
//
// [WriteBlock] writes a block from datasets held in memory (what ingest
// uses for a level-0 segment, possibly of several tenants), one page at a
// time.
//
// # Merge
//
// [Merge] runs a compaction job: for each tenant, the datasets with the
// same name in the source blocks are merged by a [DatasetMerger] — by
// default [MergeRecords], a streaming k-way merge in which identical
// records collapse — into one output block one level up, named by
// compactkit.OutputID under the attempt's prefix. Memory is one page per
// source plus one, independent of block size. The outputs are
// deterministic, byte for byte. Given the index's metadata of the sources
// ([WithSources]), Merge first checks each source's footer against it, so
// a source lacking a dataset the index lists fails the job. On failure (a
// missing or corrupt source, a stale token, a cancelled context) the error
// names the object and dataset, and nothing of the attempt is left in the
// store.
//
// [Layout.DeleteTombstones] deletes what the state machine's tombstones
// name, idempotently, for blocks of one object ([ObjectLayout], as
// blockmerge writes them) or of several under a prefix ([PrefixLayout]).
//
// # Testing
//
// Every decoder is fuzzed, with seed corpora in testdata/fuzz: FuzzReader
// (whole blocks), FuzzFooter (footers behind a valid checksum), FuzzPages
// (page payloads behind a valid frame) and FuzzFileStoreKey (object keys
// against the filesystem store's root). BenchmarkMerge reports the merge's
// MB/s and x-copy, its time relative to copying the same bytes through the
// same store.
package blockmerge
