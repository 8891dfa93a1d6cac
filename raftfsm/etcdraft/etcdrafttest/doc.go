// Package etcdrafttest runs etcd-io/raft nodes hosting compactkit in one
// process, for the tests of a host built on package etcdraft: its RPC
// layer, its operator tools, its failover handling.
//
// A [Node] is the reference host: a Ready loop over a raft.MemoryStorage
// that feeds an [etcdraft.Adapter] — Observe first, then the snapshot
// received, the hard state and the entries stored, the messages sent,
// the committed entries applied in order, and Advance — with CheckQuorum,
// PreVote and no proposal forwarding, as package etcdraft requires of a
// host. A [Network] carries the messages between the nodes of one
// process. The storage outlives the node: a node started on a storage
// that holds entries restarts from it (from its snapshot, then replaying
// the entries after it). It is test code, not production storage: nothing
// is written to disk unless [Config.Persist] writes it.
//
// Invariants: a node's loop alone writes its storage and applies entries
// to its adapter; an entry is applied only after it is stored, and a
// Ready's messages are sent only after its entries and hard state are
// stored.
package etcdrafttest
