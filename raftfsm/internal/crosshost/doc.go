// Package crosshost holds the tests that run one workload on both Raft
// hosts, [github.com/compactkit/compactkit/raftfsm/hraft] (hashicorp/raft)
// and [github.com/compactkit/compactkit/raftfsm/etcdraft] (etcd-io/raft),
// and compare their state machines byte for byte.
//
// It is a test-only module of its own, so that neither host's module
// requires the other host's dependencies: a user of etcdraft never fetches
// hashicorp/raft or BoltDB, and a user of hraft never fetches etcd-io/raft.
// It has no API.
package crosshost
