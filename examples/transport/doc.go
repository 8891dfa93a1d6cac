// Package transport carries compactkit's leader-side calls over HTTP and
// JSON (net/http), for the examples: worker polls, new blocks, operator
// commands and read-only queries.
//
// It is an example, not a supported API: copy it into your host and adapt
// it (authentication, your RPC framework). The supported operator API is
// package admin (status, jobs, commands, the status page); workers reach
// the leader through whatever RPC your host has, mapping refusals to
// compactkit.ErrRejected as this package's client does.
//
// # Server
//
// [NewHandler] serves a [Backend] — a [github.com/compactkit/compactkit/raftfsm/hraft.Service]
// satisfies it — on these endpoints:
//
//	POST /v1/poll       a compactkit.PollRequest        → compactkit.PollResponse
//	POST /v1/blocks     {"blocks": [BlockMeta...]}      → {"results": [BlockResult...]}
//	POST /v1/operator   a raftfsm.Operator              → OperatorResult
//	GET  /v1/stats                                       → raftfsm.Stats
//	GET  /v1/query?tenant=T&from=NS&to=NS[&shard=S]      → QueryResult
//	GET  /v1/index?after=ID&limit=N                      → IndexPage
//
// Requests are validated before they reach the backend: a malformed body,
// unknown field, trailing data, oversized body or invalid value is answered
// 400 with a JSON [ErrorBody] that says what is wrong, and nothing is
// proposed. Errors of the backend map to status codes: 421 on a follower
// that knows the leader (the body names the leader's URL), 503 when no
// leader is known, 400 for a request the state machine refused as invalid,
// 409 for a stale poll, 422 for a refused operator command, 504 when the
// request's context ended, 500 otherwise. A panic in the backend is
// recovered and answered 500: nothing crashes the server.
//
// # Client
//
// [Client] talks to a set of peers. It sends to the peer it believes leads,
// follows a 421's leader URL at once, and on a 503, a timeout or a
// connection error moves on to the next peer after a backoff, until the
// call succeeds, fails for good (a 4xx other than 421) or its retry budget
// ([WithRetryFor]) or context runs out. A retried poll carries the same
// request, so the state machine answers it from its poll log when the
// first attempt was applied: retrying across a leader change is safe.
// A retried AddBlocks may find some blocks already added: they come back
// as duplicates (errors.Is(err, index.ErrDuplicate)).
//
// Client implements [github.com/compactkit/compactkit/worker.Client].
// A poll refused as invalid (400) returns an error wrapping
// [github.com/compactkit/compactkit.ErrRejected], so the worker
// does not retry it; every other failure is left to the worker to retry
// with the same sequence number.
package transport
