// Package rpc serves a leader to workers and ingesters over the network,
// in the protocol defined by proto/compactkit/v1 (LeaderService): gRPC,
// gRPC-Web and Connect on one http.Handler, and a client that implements
// worker.Client. docs/worker-protocol.md is the contract for a worker
// written in another language.
//
// The handler ([NewHandler]) serves a *leader.Service of any host
// (hashicorp/raft, etcd-io/raft, the bucket log) and maps what a call's
// error means ([leader.Classify]) to a status code with one table:
//
//   - a request the vocabulary refuses (a poll older than the worker's
//     latest included) → INVALID_ARGUMENT, and a well-formed one the
//     current state refuses → FAILED_PRECONDITION, both with a
//     google.rpc.ErrorInfo of
//     [ErrorDomain] whose reason says which ([ReasonInvalid],
//     [ReasonConflict]); nothing changed, and sending the request again
//     cannot succeed;
//   - not the leader → UNAVAILABLE with a compactkit.v1.NotLeader detail
//     naming the leader's ID and the base URL of its RPC endpoint (the
//     host maps the one to the other: [WithLeaderURL]);
//   - an unknown outcome, no leader, a closed service → UNAVAILABLE, or
//     the caller's own DEADLINE_EXCEEDED or CANCELED: retrying the same
//     request is safe;
//   - anything else → INTERNAL.
//
// Invariants:
//
//   - Validation happens once, on the Go types, in the leader: the
//     conversions between messages and the vocabulary's types check
//     nothing and lose nothing — a valid Go value converted to its
//     message and back encodes to the same bytes — and an enum value a
//     Go type cannot hold becomes that type's zero value, which no
//     validation accepts.
//   - Every message read or sent is at most [MaxMessageBytes], the
//     vocabulary's own decode limit.
//   - A request carrying a browser's headers (Origin, Sec-Fetch-Site) is
//     refused with PERMISSION_DENIED unless its origin is allowed
//     ([WithAllowedOrigins]): workers are not browsers.
//   - Token signatures (leader.WithTokenKeys) pass through unchanged in
//     both directions.
//
// The [Client] follows NotLeader answers, retries the other codes above
// that allow it with the same request (a poll keeps its sequence number)
// within its context and retry budget, and turns a refusal into an error
// wrapping compactkit.ErrRejected. It asks for uncompressed answers: the
// handler compresses only for a caller that asks, and compressing a poll's
// answer costs the leader, which serialises every poll, more than the
// bytes cost the network.
//
// The generated messages and the Connect stubs are the packages
// gen/compactkit/v1 and gen/compactkit/v1/compactkitv1connect;
// .ci/proto.sh regenerates them.
package rpc
