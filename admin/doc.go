// Package admin is compactkit's operator API: an [http.Handler] a host
// mounts beside its own endpoints (as net/http/pprof is mounted), serving
// JSON — names, not numeric codes; durations and times as strings — and a
// status page, over a [leader.Service].
//
// Reads (status, jobs, one job, tenants, quarantined blocks, a dry run of
// the next poll) are GET requests; operator commands (pause, resume,
// retry, cancel, requeue, mark "do not compact", failure limit) are POST
// requests with a JSON body. Every request is answered by the node that
// leads: elsewhere the answer is 421 Misdirected Request with the leader's
// ID and address, for the caller to go there.
//
// Invariants:
//   - Without an [Authorizer] the handler is read-only: every command is
//     refused with 403. With one, every request — read or command — is
//     authorized first, by action name.
//   - Commands are POST with Content-Type application/json and, when the
//     browser sends an Origin, one of the handler's own host: a page on
//     another site cannot make a browser issue them.
//   - Bodies are limited ([WithMaxBody]); malformed JSON, unknown fields,
//     an unknown action, a bad cursor or filter are 400 and change nothing.
//   - Worker IDs are shown only by their public names
//     (compactkit.PublicWorkerName); token signatures never.
//   - A dry run prepares a poll on copy-on-write views and proposes
//     nothing: the state is unchanged.
//
// Errors are JSON: {"error": "...", "leader_id": ..., "leader_addr": ...}.
package admin
