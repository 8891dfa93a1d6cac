// Package compactkittest holds rapid generators of compactkit's values for
// a host's own property tests: valid block and dataset metadata for given
// tenants, shards and levels ([Block], [Blocks], [Dataset]); poll requests
// and whole worker histories against a state machine ([Fleet],
// [History]); and the hostile variants the library's own tests use
// ([MalformedID], [ForgedPoll], [OversizedPoll]).
//
// It is a test-support package, named as the standard library names its
// own (httptest, fstest): compactkit's values, for tests. It imports
// pgregory.net/rapid (and, through leader/leadertest, "testing"), and is
// meant to be imported from tests only; no package of compactkit that is
// not a kit imports it.
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
// # Where the library's own tests draw from it
//
// raftfsm's model (TestFSMModel) draws its blocks and its workers' polls
// from Blocks and a Fleet, its hostile test (TestHostileAfterHistories)
// tries MalformedID, ForgedPoll and OversizedPoll against the states
// histories reach, and compactkit's own tests draw names and IDs from
// Name and ID; worker/runnertest and raftfsm/embedtest build on Blocks
// and History.
//
// # Tests that keep local generators
//
// compactkittest imports compactkit, fencing, lease, planner, scheduler,
// index, policy, raftfsm, blockmerge, worker, leader and leader/leadertest,
// so the in-package tests (package x, not x_test) of those packages cannot
// import it without an import cycle, and keep their own generators: the
// models of planner, scheduler and index, raftfsm's internal tests,
// blockmerge's internal fuzz tests, and compactkit's block_internal_test.go.
// Others keep their own for what they generate beyond these values:
// compactkit's encoding tests draw blocks, plans and updates from the
// whole valid domain (negative times, multi-tenant segments, any shard),
// wider than Block's; blockmerge's property tests draw records, not
// metadata; and internal/sim draws from its own seeded source, so that a
// violation replays from its seed over millions of steps.
package compactkittest
