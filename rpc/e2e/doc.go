// Package e2e tests package rpc with parts it does not depend on: the
// reference gRPC implementation (google.golang.org/grpc) as the client,
// and Connect's JSON made by plain net/http as curl would. It is a
// module of its own so that no user of package rpc gets grpc-go.
package e2e
