// Package admin is compactkit's operator API: an [http.Handler] a host
// mounts beside its own endpoints (as net/http/pprof is mounted), serving
// JSON — names, not numeric codes; durations and times as strings — and a
// status page, over a [leader.Service].
//
// Reads (status, jobs, one job, tenants, quarantined blocks, scheduling
// policies, a dry run of the next poll) are GET requests; operator
// commands (pause, resume, retry, cancel, requeue, mark "do not compact",
// failure limit, and the policy commands) are POST requests with a JSON
// body. Every request is answered by the node that leads: elsewhere the
// answer is 421 Misdirected Request with the leader's ID and address, for
// the caller to go there.
//
// # Scheduling policies
//
// GET api/policies shows the default policy, the tenants' own — each with
// whether it lets the tenant's new jobs start at the log's time ("open")
// — and the compact-now requests in force; ?limit=N pages through the
// tenants' policies by name, ?cursor= taking the page's "next". A policy
// is JSON with names
// ([Policy]): class "high", "medium" or "low"; max_in_progress and
// max_in_progress_per_shard (caps on the tenant's jobs in progress, and
// on those of each of its shards); run
// {"mode": "only-in" | "never-in", "windows": [{"days": ["Mon", "Tue"],
// "start": "22:00", "end": "06:00", "offset_minutes": 60}]}; not_before in
// RFC 3339; pressure {"slow_blocks": {"on": 1000, "off": 800},
// "stop_blocks", "slow_ready_batches", "stop_ready_batches"} (blocks
// queued; ready batches, the jobs that could be planned now: the former
// keys slow_debt and stop_debt are refused); shard_pressure, the same
// thresholds for each shard of the tenant; stale_after as a Go duration
// ("1h"); levels [{"level": 0, "max_blocks": 40, "max_bytes": 0,
// "max_age": "2m", "cross_shard": "on" | "off"}], overriding the cluster's
// batching of those levels for the tenant (absent or zero fields keep the
// cluster's); level_runs [{"level": 1, "run": {...}}], run windows for
// some levels on top of the tenant's. Absent fields take the zero policy's
// value. The commands:
//
//	POST api/commands/policy-set    {"tenant": "acme", "policy": {...}} or {"all": true, "policy": {...}}
//	POST api/commands/policy-clear  {"tenant": "acme"} or {"all": true}
//	POST api/commands/compact-now   {"tenant": "acme", "level": 0} or {"all": true} (level optional)
//
// policy-set replaces the whole policy of the tenant (of the default with
// "all"); policy-clear returns a tenant to the default (the default to
// the zero policy). "tenant": "" names the empty tenant (multi-tenant
// segments), so exactly one of tenant and all is required. api/status
// lists the tenants' and shards' backpressure grades that are not ok and
// the staleness alarms in force; the status page shows them, and the
// policies, and (with an [Authorizer]) has a form that sends policy-set
// and policy-clear with the policy in the same JSON.
//
// Invariants:
//   - Without an [Authorizer] the handler is read-only: every command is
//     refused with 403. With one, every request — read or command — is
//     authorized first, by action name.
//   - Commands are POST with Content-Type application/json and, when the
//     browser sends an Origin, one of the handler's own host: a page on
//     another site cannot make a browser issue them.
//   - Bodies are limited ([WithMaxBody]); malformed JSON, unknown fields,
//     an unknown action, a bad cursor or filter, a malformed policy are 400
//     and change nothing.
//   - A command the state machine refuses — a job that does not exist, a
//     block a job holds, a policy under which work could never start, a
//     policy command below cluster version 5 — is 409 and changes nothing.
//   - The JSON of a policy converts to policy.Tenant in one place
//     ([Policy.Tenant], [PolicyOf]); the command-line client sends the
//     same JSON.
//   - Worker IDs are shown only by their public names
//     (compactkit.PublicWorkerName); token signatures never.
//   - A dry run prepares a poll on copy-on-write views and proposes
//     nothing: the state is unchanged.
//
// Errors are JSON: {"error": "...", "leader_id": ..., "leader_addr": ...}.
package admin
