// Package runnertest is the conformance suite of a host's [worker.Runner]:
// [Run] checks a runner, in the host's own block format, against the
// contract [worker.Runner] states, on jobs planned by a real state machine
// over source blocks the host's format writes.
//
// # What it proves
//
// Each property is a subtest of Run; the data properties run on jobs of
// two to four generated sources (rapid; -rapid.checks sets how many), the
// timing properties on three:
//
//   - Placement: every output is named under the attempt's prefix
//     (plan.Name/token/, as compactkit.OutputID names them), its objects
//     are where the format's [blockmerge.Layout] says, and the attempt
//     writes nothing outside compactkit.AttemptPrefix(plan.Name, token).
//   - Metadata: every output's metadata is valid and matches what was
//     written: as many records as its datasets count, each inside its
//     time range.
//   - Records: the outputs hold exactly the sources' records.
//   - Accepted: the state machine commits the outputs reported as a
//     success: the job completes, the outputs are live and the sources
//     are not.
//   - Failure: a job whose source cannot be read ends in an error whose
//     text is a non-empty reason, which the state machine records.
//   - Retry: a second attempt of the job (a higher token) names and writes
//     nothing of the abandoned first attempt's, and its outputs stay whole
//     when the first attempt's prefix is deleted.
//   - Cancel: Run returns an error within [Format.CancelBound] after its
//     context is cancelled mid-run.
//   - NoLateWrite: no write (Put, Create, a created object's Write or
//     Commit, Delete, DeleteByPrefix) begins after Run returned, cancelled
//     or not.
//
// # What it does not prove
//
// It runs a runner on small jobs of one dataset per source, over an
// in-memory store, one job at a time: not at scale, not under a store's
// faults, not concurrently with other attempts. It reads the records back
// only through the host's own Read, so a Read that agrees with a broken
// writer hides the fault. It checks no tombstones: the worker, not the
// runner, deletes them.
//
// It is a test-support package: it imports "testing" and
// pgregory.net/rapid, and is meant to be called from the host's tests:
//
//	func TestRunnerConformance(t *testing.T) {
//		runnertest.Run(t, runnertest.Format{Runner: myRunner, Layout: blockmerge.PrefixLayout, Write: writeBlock, Read: readBlock})
//	}
//
// A runner that writes blockmerge's blocks takes [BlockmergeFormat].
package runnertest
