// Package e2e tests package rpc with parts it does not depend on: the
// reference gRPC implementation (google.golang.org/grpc) as the client,
// Connect's JSON made by plain net/http as curl would, a Python worker on
// grpcio, and worker processes against three-node hashicorp/raft and
// etcd-io/raft clusters and three bucket-log coordinators whose nodes are
// shut down and brought back. It is a module of its own so that no user
// of package rpc gets grpc-go, hashicorp/raft or etcd-io/raft.
package e2e
