// Package compactkit is the shared vocabulary of a library of
// compaction-scheduling primitives for storage engines that flush many
// small immutable blocks to object storage and merge them, in the
// background, into fewer and larger ones.
//
// # What compaction scheduling is
//
// Ingest writes a small block (a segment) every few hundred milliseconds.
// Queries must read every block that overlaps their time range, so read
// amplification and the metadata index grow until something merges the
// blocks. compactkit is that something's brain: it runs inside the host's
// replicated state machine (Raft), keeps a queue of blocks awaiting
// compaction, groups them into jobs, hands jobs to a fleet of stateless
// workers under leases, and — when a worker reports success — atomically
// replaces the source blocks in the index with the merged output and
// tombstones the sources for delayed deletion. Everything that changes state
// is deterministic, so every replica reaches byte-identical state.
//
// # Data flow
//
//	ingest ── AddBlocks ──▶ index.Add (deduplicated) ─▶ planner.Enqueue
//	worker ── Poll{worker ID, seq, status updates, free slots} ──▶ leader: Prepare
//	          (read-only, on a copy-on-write view, stamped with the leader's time)
//	          1. status updates → renewals, completions, failures, releases
//	          2. assign         → unassigned jobs first, then expired leases
//	          3. evict + create → new jobs planned, as many as the free slots
//	       ── propose one PlanUpdate entry ──▶ every replica: Apply
//	          scheduler executes each change whose job version still matches;
//	          a new job claims its sources; a completion replaces the sources
//	          by the outputs in the index and enqueues the outputs one level up;
//	          the response is recorded under (worker ID, seq)
//	       ◀── response: assignments with tokens, renewals, "completed", "no lease"
//	worker ── merge the sources' datasets ──▶ object store ── Success + outputs ──▶
//
// # Time, tokens and leases
//
// The only clock is the leader's timestamp carried by each command
// ([Entry.Time]); replicas use max(previous now, command time). The fencing
// token of an assignment is the log index of the entry that made it, so
// tokens only grow; a worker's report is accepted only if the job is in
// progress and the token matches (see package fencing). A lease lasts a
// replicated duration from the entry's time; workers renew at least every
// half lease and measure the lease on their own clock from the moment they
// sent the request (see package lease).
//
// # Job states
//
//	Unassigned ──assign──▶ InProgress ──complete──▶ (removed; outputs committed)
//	     ▲                  │  │  │
//	     └──fail/release────┘  │  └──lease expired──▶ reassigned (failures+1)
//	                           └──failures reach the limit──▶ Excluded
//	Excluded ──operator retry──▶ Unassigned;  Excluded ──queue full──▶ evicted
//	any ──operator cancel──▶ removed, sources return to the planner
//
// # Package map
//
//   - compactkit (this package): entries, block and dataset metadata, job
//     plans and states, statuses, changes, plan updates, poll messages, and
//     their validated binary encoding.
//   - fencing: fencing tokens, the ownership rule and an in-process guard.
//   - lease: lease arithmetic on log time and the worker-side keeper.
//   - planner: the queue of blocks awaiting compaction; turns ready batches
//     into job plans.
//   - scheduler: the level-partitioned job queue with assignment, leases,
//     failure limits, exclusion and eviction.
//   - index: the block metadata index with atomic replacement, tombstones
//     and retention.
//   - blockmerge: the block format, object stores and the streaming merge.
//   - raftfsm: the deterministic state machine that wires them together;
//     raftfsm/hraft (a nested module) adapts it to github.com/hashicorp/raft.
//   - worker: the worker runtime — the poll loop, lease keeping, merging
//     and cleanup — against a small Client interface.
//   - metrics/prom (a nested module): Prometheus collectors for the stats
//     of every component, compaction lag and debt included.
//   - examples (a nested module): the quickstart (one short program to
//     copy), a fuller demo and a 3-node Raft cluster, with an HTTP transport
//     between workers and the leader.
//   - internal/sim: the deterministic simulation of the whole system under
//     faults, which checks the invariants of the design after every step.
//
// All times in compactkit are unix nanoseconds (int64) unless a field says
// otherwise.
package compactkit
