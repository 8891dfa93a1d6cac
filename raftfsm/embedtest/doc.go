// Package embedtest checks a host's embedding of compactkit's state
// machine in its own: a replicated state machine that holds a
// [raftfsm.FSM] beside its own state, routes compactkit's entries to it
// and writes compactkit's snapshot as one section of its own.
//
// The host supplies a [Host]: how to make a replica, the envelope its log
// puts around compactkit's commands, a generator of its own entries and an
// equality of its own state. [History] generates a history — compactkit's
// commands (from compactkittest.History) interleaved with the host's own
// entries, snapshots of the replica at random points, and restores of the
// latest snapshot into a fresh replica, which is then delivered the
// entries after it again, and a few at or below it, as a log replaying
// from an earlier index does. [Replay] drives the history through the
// host's replica and through a reference raftfsm.FSM; [Check] does both
// in a rapid property.
//
// # What it proves
//
//   - Section: after every entry, compactkit's state in the replica
//     writes the same snapshot bytes as the reference's: the host routes
//     every compactkit command, at its log index, term and time.
//   - Own state: a replica restored from the host's snapshot, and
//     delivered the entries after it, holds own state equal (by the host's
//     equality) to the replica that applied everything — which catches a
//     snapshot that leaves the host's state out, and a restore whose
//     buffered reader reads past compactkit's section into the host's.
//   - Restored section: the restored replica's compactkit state writes
//     the reference's bytes too.
//   - Replay: entries at or below the restored snapshot's index, delivered
//     again, change nothing.
//
// # What it does not prove
//
// It runs one replica at a time, sequentially: not the host's
// concurrency (Apply racing Snapshot), not its log's replication or
// durability (see leader/leadertest), not the service in front of it. It
// compares the host's own state only by the host's equality. compactkit
// commands are applied as the leader encoded them; a host that rewrites
// them is checked only through the resulting state.
//
// Its API carries rapid's types (*rapid.T, *rapid.Generator) at the version
// this module requires. Host, Replica, Replay and Check are stable; which
// histories Histories draws, and how they shrink, may change in any
// release (as compactkittest's generators may).
//
// It is a test-support package: it imports pgregory.net/rapid, and is meant
// to be called from the host's tests:
//
//	func TestEmbedding(t *testing.T) {
//		rapid.Check(t, func(t *rapid.T) { embedtest.Check(t, host) })
//	}
package embedtest
