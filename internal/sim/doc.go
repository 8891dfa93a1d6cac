// Package sim is compactkit's deterministic simulation: the whole system —
// several replicas of the state machine (package raftfsm), a modelled Raft
// log with a leader that changes, many workers, ingest, an operator and a
// simulated clock — run from a seed under crashes, message chaos and
// leader changes, with the contracts of ARCHITECTURE.md checked after every
// step.
//
// # The system
//
// The log is modelled as Raft behaves: the leader appends entries to an
// uncommitted tail, which commits a few entries at a time; on a leader
// change the tail is either dropped or committed later by the new leader,
// whose first command is TookOffice. Replicas apply committed entries at
// their own pace; the reference replica (0) is always caught up. Replies
// come from the leader's replica when it applies an entry it proposed,
// and can be lost even when the entry commits.
//
// Workers poll through a network that loses, duplicates, delays and
// reorders requests and responses; they retry a request (same sequence),
// keep their leases on their local clock, merge (with blockmerge over a
// memory store when Options.Data is set, else by computing the outputs'
// metadata), delete the tombstones their jobs carry, crash mid-job, stall
// past their lease and report late with a stale token, fail and shut down.
// The leader prepares polls in single-commit or two-commit mode (or
// both), sometimes holding a prepared command back so that it is applied
// after conflicting changes, and answers retries from the poll log.
// Replicas are snapshotted and restored, handed corrupt snapshots,
// rebuilt from another replica's snapshot plus the log tail, and handed
// entries they already applied. The leader's clock jumps back, and
// forward within what the cleanup delay covers (forwardBudget). Ingest
// comes in bursts and is duplicated; the operator pauses, resumes, retries,
// cancels, requeues, changes the failure limit, sets retention and reader
// watermarks.
//
// # The invariants
//
// After every step: replicas at the same position agree (the observable
// state of the reference replica and of one other drawn at random every
// step, of every replica at the end; their snapshot bytes periodically,
// after every restore and at the end; Restore(Snapshot(s)) re-snapshots
// identically; a refused
// snapshot changes nothing; a re-applied entry is skipped and changes
// nothing); the results of every entry are identical on every replica; a
// model built from the committed commands and results agrees with the
// reference replica: every block ever added is live (queued, claimed by
// exactly one job, quarantined with a reason, or at the final level —
// checked against the planner's counts) or was replaced by an output or
// removed by retention (the live sets compared for the blocks that changed
// every step, in full every 25 steps and at the end); no block is in two jobs or compacted twice; tokens
// only grow; at most one worker holds a token the state machine accepts
// for a job, and only that token is renewed, completed or accepted;
// a tombstone is attached to at most one job, and only once its removal
// committed, its cleanup delay passed and the reader watermark allows it;
// a worker never deletes a live block; with Options.Data, every record
// ingested is in exactly one live block — the one its data went to — and
// at the end the store holds exactly the live blocks (no orphan). Nothing
// panics.
//
// Once faults stop, the system must reach its fixed point — no job, every
// tombstone confirmed, every live block at the final level, quarantined,
// or queued in a batch that will never be ready — within a bound that
// grows with the work left (Options.LivenessSteps: by default 2,000 steps
// plus 40 per block awaiting compaction per worker slot), and it must
// never go Options.StallSteps (1,500) steps without progress on the way.
//
// The harness's own tests break the system on purpose (a follower that
// skips an entry, a stale restore, a second token holder, a lost block, a
// lost object, a stalled fleet) and require the matching violation.
//
// Run it with `go test ./internal/sim/` (a CI-sized number of seeds);
// see the flags in sim_test.go, and COMPACTKIT_SIM_SEEDS, for long runs.
//
// # The summary
//
// A run of a seed range ends with one summary line: its counts (steps,
// entries, blocks, completions, …) and its digest, a chained SHA-256 over
// every seed's Report.Digest in seed order, itself chained over the
// result of every committed entry and every replica's final snapshot.
// The digest is what makes "unchanged" mean something: a change whose
// summary is identical to its parent's, over a range of seeds, applied
// the same commands with the same results and ended in the same states
// on every seed — it changed no behaviour, whatever it changed inside.
// The summary of seeds S to S+N-1 is printed by
//
//	go test ./internal/sim/ -run 'TestSimulation$' -v -sim.seeds=N -sim.start=S -timeout 0
package sim
