// Package demo is the code the runnable examples share: synthetic ingest of
// level-0 segments, the run loop (workers over the worker protocol, a
// sampler, progress bars), the verification of the final state, the
// summary table and the chart, and the examples' main (Main) and their
// tests' small runs (SmallConfig, RunVerified).
//
// A run ingests segments written with blockmerge.WriteBlock into an object
// store, adds them through the leader's endpoints (package rpc), lets workers
// compact them until nothing is left to do (every queue empty, no job, no
// tombstone), then checks that every ingested record is present exactly
// once in the live blocks, that no object is left but the live blocks',
// and that the index and the object store agree.
package demo
