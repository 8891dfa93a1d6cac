// Package hraftnode assembles a hashicorp/raft node running compactkit, for
// tests, examples and simple hosts: the state machine, the adapter
// ([hraft.FSM]), a raft instance tuned by [hraft.FastConfig], BoltDB or
// in-memory stores, a file snapshot store, a TCP transport on loopback (or
// any raft.Transport), and the leader-side [hraft.Service].
//
// [New] builds and starts a [Node]; [Node.Bootstrap] starts a cluster,
// [Node.Join] adds a voter, [Node.Shutdown] stops the node. A node
// restarted on the same directory and address resumes its state.
//
// The package is apart from [github.com/compactkit/compactkit/raftfsm/hraft]
// because of its stores: raft-boltdb/v2 v2.3.1 builds with hashicorp/raft
// v1.7 but not with v1.8, so a host that assembles its own node imports
// hraft alone and keeps the raft it has. This package pins raft v1.7.3.
//
// Invariants: a node owns what it opens — [Node.Shutdown] (and a failed
// [New]) closes the service, raft, the transport and the stores, in that
// order; the stable store drops term writes that arrive after it closed
// (hashicorp/raft issue 717) instead of failing them; the TCP transport
// replicates without pipelining (MaxRPCsInFlight 1), whose unbuffered
// channels can deadlock a follower's replication and Raft.Shutdown.
package hraftnode
