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
// replicated log (hashicorp/raft, etcd-io/raft, a bucket with conditional
// writes, or any log implementing leader.Log), keeps a queue of blocks awaiting
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
// progress and both its token and its worker match (see package fencing).
// A lease lasts a replicated duration from the entry's time; workers renew
// at least every half lease and measure the lease on their own clock from
// the moment they sent the request (see package lease).
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
// # Invariants
//
//   - State changes only in Apply, as a function of (state, entry,
//     command): replicas that applied the same entries hold byte-identical
//     state and snapshots.
//   - Every block added is at any time exactly one of: queued, claimed by
//     one job, quarantined, at the final level, replaced by an output that
//     holds its data, or removed by retention.
//   - Tokens only grow, and a report counts only from the job's current
//     holder with its current token.
//   - The values of this package are validated when decoded and before use:
//     bad input is an error wrapping one of its sentinels ([ErrInvalid],
//     [ErrMalformed], ...), never a panic.
//
// ARCHITECTURE.md in the repository states the full contracts.
//
// # Package map
//
// The core module (github.com/compactkit/compactkit) depends at run time
// only on github.com/google/btree and the CBOR codec:
//
//   - compactkit (this package): entries, block and dataset metadata, job
//     plans and states, statuses, changes, plan updates, poll messages, and
//     their validated, versioned binary encoding.
//   - fencing: fencing tokens, the ownership rule and an in-process guard.
//   - lease: lease arithmetic on log time and the worker-side keeper.
//   - policy: scheduling policies judged in log time — priority classes,
//     caps, run windows, not-before times, backpressure, staleness — which
//     the state machine replicates and applies.
//   - planner: the queue of blocks awaiting compaction; turns ready batches
//     into job plans.
//   - scheduler: the level-partitioned job queue with assignment, leases,
//     failure limits, exclusion and eviction.
//   - index: the block metadata index with atomic replacement, tombstones
//     and retention.
//   - raftfsm: the deterministic state machine that wires planner,
//     scheduler and index: commands, Prepare and Apply, the poll log,
//     snapshots and cluster versions.
//   - leader: the leader service over any log (a leader.Log): serialised
//     polls, took-office, retries, errors a worker recognises;
//     leader/leadertest is the scenario a host runs over its log.
//   - bucketlog: a log on an object store with conditional writes, for
//     coordinators without an election or serverless workers.
//   - worker: the worker runtime — the poll loop, lease keeping, merging
//     and cleanup — against a small Client interface.
//   - blockmerge: the block format, object stores (memory, filesystem) and
//     the streaming merge.
//   - admin: the operator API and status page, an http.Handler;
//     cmd/compactctl is its command line.
//
// Nested modules hold the heavier integrations:
//
//   - raftfsm/hraft: the state machine on github.com/hashicorp/raft.
//   - raftfsm/etcdraft: the state machine on go.etcd.io/raft/v3.
//   - blockmerge/objstore: thanos-io/objstore buckets (S3, GCS, Azure) as
//     stores, with conditional writes on S3 for the bucket log.
//   - metrics/prom: Prometheus collectors for every component's stats,
//     alert rules and a dashboard.
//   - examples: the quickstart, a demo at scale, a 3-node Raft cluster and
//     a bucket-only deployment, with an HTTP transport between workers and
//     the leader.
//
// internal/sim is the deterministic simulation of the whole system under
// faults, which checks the invariants of the design after every step.
//
// All times in compactkit are unix nanoseconds (int64) unless a field says
// otherwise.
package compactkit
