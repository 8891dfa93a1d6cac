// Package hraft runs compactkit's state machine ([raftfsm.FSM]) on
// github.com/hashicorp/raft.
//
// It is a nested module (github.com/compactkit/compactkit/raftfsm/hraft)
// so that the core module never depends on raft. It pins raft v1.7.3 and
// raft-boltdb/v2 v2.3.1, which build together (raft v1.8.0 does not with
// raft-boltdb/v2 v2.3.1).
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
// [Service.AddBlocks] for ingest, operator commands, configuration,
// retention and watermarks, and consistent queries. It stamps commands with
// the leader's clock, proposes them with raft.Apply, waits for them to be
// applied and returns what the state machine answered. A new leader first
// commits a [raftfsm.TookOffice] command, which extends every lease in
// progress so that an election costs no healthy job its lease, and serves
// nothing before it is applied. On a follower every method returns a
// *[NotLeaderError] that names the leader.
//
// Polls go through the log as one entry each ([SingleCommit], the
// default) or as a prepare entry followed by the plan update
// ([TwoCommit]), chosen with [WithMode]. A retried poll whose entry was
// applied is answered from the state machine's poll log without proposing
// anything, also after a leader change.
//
// # Nodes
//
// [NewNode] assembles a node for tests, examples and simple hosts: the
// state machine, the adapter, a raft instance tuned by [FastConfig], BoltDB
// or in-memory stores, a file snapshot store, a TCP transport on loopback
// (or any raft.Transport), and the Service. [Node.Bootstrap] starts a
// cluster, [Node.Join] adds a voter, [Node.Shutdown] stops the node; a node
// restarted on the same directory and address resumes its state.
package hraft
