// Package admin is compactkit's operator API: an [http.Handler] a host
// mounts beside its own endpoints (as net/http/pprof is mounted), serving
// JSON — names, not numeric codes; durations and times as strings — and a
// status page, over a [leader.Service].
//
// Reads (status, jobs, one job, tenants, quarantined blocks, scheduling
// policies, a dry run of the next poll) are GET requests; operator
// commands (pause, resume, retry, cancel, requeue, mark "do not compact",
// failure limit, and the policy commands) are POST requests with a JSON
// body ([Command]); pause and resume name a tenant ("tenant", where ""
// is the empty tenant of multi-tenant segments) or every tenant ("all":
// true), and a body naming neither is refused with 400. Every request
// is answered by the node that leads: elsewhere the answer is 421
// Misdirected Request with the leader's ID and address, for the caller to
// go there (503 while no leader is known). Tables show the empty tenant
// as "(multi-tenant)" ([TenantName]) and durations to the millisecond.
//
// # Scheduling policies
//
// GET api/policies shows the default policy, the tenants' own — each with
// whether it lets the tenant's new jobs start at the log's time ("open")
// — and the compact-now requests in force; ?limit=N pages through the
// tenants' policies by name, ?cursor= taking the page's "next". A policy
// is policy.Tenant's JSON form (policy.Tenant.MarshalJSON), with names:
// class "high", "medium" or "low"; max_in_progress and
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
//   - Every request, read or command, names in Host a host the handler
//     serves ([WithAllowedHosts]; by default "localhost" and an IP literal
//     equal to the address the request arrived on), or is refused with
//     403 and the error code "WithAllowedHosts": a hostile page on a DNS
//     name rebound to the node's address reaches the handler under its
//     own name and is refused, so an authorizer that trusts the network
//     (loopback, a private subnet) is not trusting that page.
//   - Commands are POST with a body of media type application/json and,
//     when the browser sends an Origin, one of the handler's own scheme,
//     host and port. What this protects: a page of another origin cannot
//     make a browser issue a command (a cross-site form cannot send JSON,
//     and a cross-origin fetch of JSON sends its Origin). What it does not:
//     clients that are not browsers (they send any Origin they like; the
//     [Authorizer] judges them), a page of the handler's own origin (do
//     not serve untrusted pages there), and a rebound name, which is the
//     host check's.
//   - Every response forbids framing (X-Frame-Options DENY) and content
//     sniffing (X-Content-Type-Options nosniff); the status page carries a
//     Content-Security-Policy that runs only its own inline script and
//     style (by hash), connects only to the handler and may not be
//     framed (frame-ancestors 'none').
//   - Bodies are limited ([WithMaxBody]); malformed JSON, unknown fields,
//     an unknown action, a bad cursor or filter, a malformed policy are 400
//     and change nothing.
//   - A command the state machine refuses — a job that does not exist, a
//     block a job holds, a policy under which work could never start, a
//     policy command below cluster version 5 — is 409 and changes nothing;
//     a malformed name (job, block, tenant) in a command is 400. Status
//     codes follow leader.Classify: the caller's fault 400, a conflict
//     409, not the leader 421 with the leader's ID and address (503 while
//     none is known), unavailable 503, anything else 500.
//   - The JSON of a policy converts to policy.Tenant in one place, the
//     policy package (policy.Tenant.UnmarshalJSON); the command-line
//     client sends the same JSON.
//   - Worker IDs are shown only by their public names
//     (compactkit.PublicWorkerName); token signatures never.
//   - POST api/fsck/remove checks every key it is given before removing
//     any: a key that is not a valid key of the store under the blocks
//     prefix refuses the whole request (400, nothing removed). It removes
//     only the keys that a fresh check lists as orphans — any other key,
//     live or never listed, is kept — and its answer names exactly the
//     objects removed, also when the store fails part way (500).
//   - A dry run prepares a poll on copy-on-write views and proposes
//     nothing: the state is unchanged.
//
// Errors are JSON: {"error": "...", "code": ..., "leader_id": ...,
// "leader_addr": ...}; code, when present, names what the caller must
// change to be served.
package admin
