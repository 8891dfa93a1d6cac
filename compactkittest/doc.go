// Package compactkittest holds rapid generators of compactkit's values for
// a host's own property tests: valid block and dataset metadata for given
// tenants, shards and levels ([Block], [Blocks], [Dataset]); poll requests
// and whole worker histories against a state machine ([Fleet],
// [History]); and the hostile variants the library's own tests use
// ([MalformedID], [ForgedPoll], [OversizedPoll]).
//
// It is a test-support package: it imports pgregory.net/rapid (and,
// through leader/leadertest, "testing"), and is meant to be imported from
// tests only. The library's own tests draw from it too.
//
// # What a generator promises
//
// A valid generator's every value passes the validation compactkit applies
// to it ([compactkit.BlockMeta.Validate], [compactkit.PollRequest.Validate],
// [raftfsm.FSM.Prepare]); a hostile generator's every value is refused by
// it. Histories are drawn against a reference state machine as they are
// applied, so every poll of a history is prepared against the state it is
// applied to.
//
// # Stability
//
// The functions' signatures and the promises above are stable: a property
// written against them keeps compiling and keeps meaning what it meant.
// The distribution of the values — which values are drawn, in which
// order, how they shrink — is not: it may change in any release, so a
// seed or a rapid failure file recorded against one release may replay a
// different value under the next. The generators are rapid's own type
// (*rapid.Generator), at the version this module requires.
//
// # In-package tests with local generators
//
// compactkittest imports compactkit, raftfsm (and through it planner,
// scheduler, index and policy), leader/leadertest and worker, so the
// in-package tests of those packages cannot import it without a cycle:
// their own generators stay local — raftfsm's internal tests, the
// planner's, scheduler's and index's models (package planner, scheduler
// and index tests), and compactkit's own block tests
// (block_internal_test.go). Their external tests (package x_test) may
// import it, and the root package's, worker's, blockmerge's and raftfsm's
// do.
package compactkittest
