// Package hraft runs compactkit's state machine ([raftfsm.FSM]) on
// github.com/hashicorp/raft.
//
// It is a nested module (github.com/compactkit/compactkit/raftfsm/hraft)
// so that the core module never depends on raft. The package imports
// hashicorp/raft and nothing of its stores: it builds against the raft a
// host already uses (v1.7 and v1.8). The module requires raft v1.7.3; a
// host's newer requirement wins.
//
// # The FSM
//
// [FSM] is a raft.FSM and raft.BatchingFSM over a [raftfsm.FSM]. A command
// entry's Index and Term become the compactkit entry's, and its AppendedAt
// (the leader's timestamp) the entry's time, which only commands without a
// time of their own use; entries of other types are skipped. Snapshot
// captures the state in O(jobs) ([raftfsm.FSM.Capture]) and raft persists
// it in the background while entries keep being applied; Restore replaces
// the state, leaving it intact on a corrupt snapshot.
//
// # The Service
//
// [Service] is what a host's RPC layer calls on the leader:
// [Service.Poll] for workers (its signature is worker.Client's),
// [Service.AddBlocks] for ingest, [Service.Propose] for operator
// commands, configuration, retention and watermarks, and [Service.Read]
// for consistent queries. It stamps commands with
// the leader's clock, proposes them with raft.Apply, waits for them to be
// applied and returns what the state machine answered. A new leader first
// commits a [raftfsm.TookOffice] command, which extends every lease in
// progress so that an election costs no healthy job its lease, and serves
// nothing before it is applied. On a follower every method returns a
// *[leader.NotLeaderError] that names the leader (it wraps
// [leader.ErrNotLeader]).
//
// Polls go through the log as one entry each (the default) or as a
// prepare entry followed by the plan update (leader.WithTwoCommit, through
// [WithLeader]). A retried poll whose entry was applied is answered from
// the state machine's poll log without proposing anything, also after a
// leader change.
//
// # Nodes
//
// Package [github.com/compactkit/compactkit/raftfsm/hraft/hraftnode]
// assembles a whole node (BoltDB stores, TCP transport, the Service) for
// tests, examples and simple hosts; [FastConfig] is the raft configuration
// it starts from. A host that builds its own TCP transport should turn
// raft's pipelined replication off (raft.NetworkTransportConfig's
// MaxRPCsInFlight set to 1), as hraftnode does: at raft v1.7's default of
// 2, a follower's refused append can deadlock the pipeline, which stops
// that follower's replication and makes Raft.Shutdown wait forever.
package hraft
