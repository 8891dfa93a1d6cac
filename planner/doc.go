// Package planner holds the blocks waiting for compaction and proposes
// which of them form the next compaction jobs.
//
// It is a deterministic component of the replicated state machine (see
// package raftfsm): every method that changes it is called from Apply with
// the values of a log entry, and two planners that apply the same calls are
// identical, snapshot bytes included. Planning itself is read-only: it runs
// on a copy-on-write [View] during Prepare.
//
// # Queue
//
// Blocks are queued by compaction key (tenant, shard, level), in arrival
// order: [Planner.Enqueue]. A level-0 segment that holds several tenants is
// keyed under the empty tenant; a level configured as CrossShard keys with
// [compactkit.AnyShard]. Blocks at or beyond the final level are not queued.
//
// Duplicates: the planner keeps no per-block ID map (it would cost more
// memory than the queue itself), so it relies on the index, which refuses
// an ID it has seen before the state machine enqueues a block; the state
// machine enqueues only the blocks the index added. Nothing inside the
// planner queues a block twice: Return and Requeue put back only blocks
// taken out of the queue, at their arrival numbers, and skip any whose
// arrival is already queued (counted in [Counters].Duplicates).
//
// Jobs take the oldest blocks of a key. When a job is created, the state
// machine claims its sources ([Planner.Claim]) in the entry that creates
// it, after checking the plan is still admissible ([Planner.Admissible]).
// A claim ends in one of four ways: the job completes ([Planner.Complete]);
// it is cancelled, refused by the index, or hit by retention, and the
// sources still live go back to their original arrival positions
// ([Planner.Return]); or it is evicted and its sources are quarantined for
// operators ([Planner.Quarantine], [Planner.Quarantined],
// [Planner.Requeue]). Retention removes dropped blocks ([Planner.Drop]).
//
// # Planning
//
// [View.Next] yields job plans one at a time. A batch is ready when it is
// full or when its oldest block has waited longer than the level's max age
// at the planning time — so a quiet key is planned without waiting for
// another block. Lower levels are served first, except that a batch ready
// for longer than its level's aging threshold competes as level 0; within a
// level, the tenants of the lowest rank go first (see Ranks below), tenants
// of one rank take turns after a replicated rotation cursor, and a tenant's
// oldest batch goes first. Paused tenants and levels are skipped:
// the paused set is replicated state of the scheduler, which passes it to
// planning as [PlanOptions].Skip; their blocks stay queued. See [View.Next]
// for the policy and [LevelConfig] for the batching rules.
//
// The indexes planning searches order the keys by their head batch. A
// partial batch becomes ready by age at a time, and a ready batch that ages
// is aged at a later time; once the planner's clock (the time of the
// latest entry applied) has passed that time, Apply indexes the batch with
// the full ones (an aged one at level 0), so that a view does not gather
// every batch ready by age or aged: only those that became so between the
// clock and its planning time.
//
// Held tenants, and held levels of a tenant ([Planner.SetHold]), are left
// out of planning altogether: their
// keys are taken out of the indexes planning searches, so a poll costs
// nothing per held tenant, where Skip costs a B-tree seek per skipped
// tenant and call. Their blocks stay queued and counted in the statistics.
// The held set is derived state the state machine installs from its
// policies (a tenant at its cap of jobs, or closed by a run window, say),
// not part of snapshots: it sets the holds again after a restore. A view
// may lift a tenant's hold of every level for its own planning
// ([PlanOptions].Release): a poll that ends a capped tenant's job plans the
// tenant again.
//
// An operator's "compact now" is passed per call as [PlanOptions].Force
// ([Force]): a tenant's batches (of one level or all) whose first block
// arrived by a given log time are ready whatever their size and age, and
// compete at their own level like batches ready by age. Held tenants and
// skipped keys are never forced. The planner stores no forcing.
//
// # Copy-on-write
//
// A view is opened on demand, once per Prepare ([Planner.View]), in O(1),
// and closed when done ([View.Close]). Its trees follow the copy-on-write
// rule of internal/cow, stated there once: a tree of the state, and the
// queues its nodes point to, belong to the planner, which changes them in
// place, until they are frozen for a view that is still open when the
// planner first changes them, or that writes a snapshot; then the view
// keeps them as they were when it was opened, and the planner copies a
// tree node or a queue header the first time it changes one. Planning
// reads the trees in place, under a mutex the planner takes before it
// changes a tree. So a view closed before the next Apply costs it no copy,
// and Apply, which opens no view, pays nothing for an ingest burst.
//
// # Terms: ranks and batching
//
// Tenants have terms ([Terms]: a rank and level overrides), their own
// ([Planner.SetTerms]) or the default ones ([Planner.SetDefaultTerms]).
// Ranks are the
// state machine's priority classes, rank 0 first. Within a competing
// level, the ready batches of the lowest rank are planned first; the
// fairness rotation takes turns among the tenants of that rank. Aging
// lifts the rank too: a batch ready for longer than its level's aging
// threshold competes at level 0 and rank 0, whatever its level and its
// tenant's rank (a level-0 batch of a rank above 0 ages like the others,
// and stays at level 0). So a tenant of a high rank still progresses:
// once a batch of it has been ready for its level's aging threshold, it
// takes its turn in the fairness rotation among the rank-0 batches of
// level 0 — with one job planned per poll, after at most one poll per
// other tenant with such batches ahead of it in the rotation. A level-0
// batch of rank 0 does not age: it competes there anyway. Forced batches
// compete at their tenant's rank (until they age like any ready batch),
// skipped keys are passed over at any rank, and held tenants stay out at
// any rank. Like the held set, ranks are derived state the state machine
// installs from its policies, not part of snapshots, and views keep the
// ranks they were opened with. Every tenant has rank 0 until terms are
// set, and with every tenant at one rank planning is the same as
// without ranks.
//
// # Configuration
//
// [Config] is replicated state: the state machine passes it to [New] and
// [Planner.SetConfig] as a value from its log (the planner keeps its own
// copy and never reads local settings). [DefaultConfig] holds Pyroscope's
// values. Per level it sets the batch size in blocks and bytes, the max
// age, the max time span of a job, the aging threshold and whether the
// level is compacted across shards; it also sets the final level and the
// tombstones per job.
//
// A tenant's blocks may be batched otherwise: the Levels of its [Terms]
// are the state machine's per-tenant overrides of a level's batch size, bytes, max age and cross-shard
// setting (package policy), re-batching the tenant's queued blocks. Like
// ranks they are derived state, not part of snapshots, and views keep the
// batching they were opened with.
//
// # Job names
//
// A job name is <tenant>.s<shard>.l<level>.<seq>.<hash>: the tenant mapped
// onto the job-name alphabet and truncated ("_" for multi-tenant segments),
// the shard ("sx" across shards), the level, the job's sequence number and
// 16 hex digits of a 64-bit hash of the key, the sequence number and the
// ordered source IDs (XXH64).
// Names are deterministic: a view numbers its plans from the planner's next
// sequence number. They are unique: Claim admits a plan only if its number
// is not below the planner's next one and then moves the next one past it,
// so claimed numbers only grow and no name is ever claimed twice — not even
// when the same sources are planned again after a cancel, so a name is
// never reused while the scheduler may remember it. The hash binds the name
// to its key and sources: Admissible recomputes it. The claims are kept by
// name, which also keeps a key's claims among those whose names start with
// the key's prefix (<tenant>.s<shard>.l<level>.): retention and marks find
// a key's claims there, and restore refuses a claim whose name does not
// start with its key's prefix.
//
// A cleanup-only job ([CleanupPlan]) is named cleanup.<time>.<hash>: the
// planning time in base 36 and, in hex, a 64-bit FNV-1a hash of its
// tombstones (each one's kind byte, target and a zero byte). Such names
// never recur either: time only moves forward, and a set of tombstones is
// held by one job at a time. The state machine admits a tombstone into one
// job only, so two polls that prepare the same cleanup create one job.
//
// # Data structures
//
// Each key's queue is a list of chunks of compact 56-byte items (the block
// ID string is shared with the caller, not copied), growing from 8 to 256
// items per chunk, each an exact allocation size class. Appends write past
// the end that any view can see, and claims advance a start offset, so
// neither copies a chunk; only Return, Requeue and Drop rebuild the chunks
// they touch. Queues hang off a B-tree of keys, and three B-tree indexes of
// the keys' head batches (full ones by tenant; partial ones by age; full
// ones that age by the time they became ready, for aging; the first
// ordered by rank, the others carrying it) let a view find the next job in
// O(log n); the keys of held tenants have no index entries (a B-tree
// of held tenants, shared with views like the rest, says which), and
// holding or releasing a tenant with k keys moves its entries in
// O(k log n). Opening a view clones the B-trees (O(1)) and bumps a
// generation number: a queue made in an earlier generation may be shared,
// and the planner copies it before changing it.
//
// # Snapshots
//
// [View.Snapshot] writes a columnar, framed codec stream; [Restore]
// reads it back. The state is a function of the queued blocks with their
// arrival numbers and times, the claims, the quarantine, the fairness
// cursor, the sequence counters and the configuration, so a restored
// planner re-snapshots to identical bytes and plans exactly like the
// original once the same tenants are held, ranked and given the same
// level overrides again (the held set, the ranks and the overrides are not
// part of the state: see [Planner.SetHold] and [Terms]).
//
// # Observability
//
// [Planner.Stats] reports per level the queued blocks, ready batches, keys,
// the oldest queued block (compaction lag in log time), the compaction debt
// and the claimed and quarantined blocks, and counters of what the planner
// did.
package planner
