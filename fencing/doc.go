// Package fencing defines compactkit's fencing tokens and the rule that
// decides whether a worker still owns a job.
//
// # Tokens
//
// A [Token] is the Raft log index of the entry whose Apply made an
// assignment: the PlanUpdate entry in single-commit mode, the prepare entry
// in two-commit mode. A new job gets the index of the entry that created it.
// Log indexes only grow, so tokens only grow: a later assignment of the same
// job always carries a larger token than every earlier one.
//
// # Ownership
//
// [Owns] is the ownership rule the state machine applies at commit time: a
// worker's update (renew, complete, fail, release) is accepted only if the job
// is in progress and the token the worker presents equals the job's current
// token. Otherwise the worker has no lease and must stop working.
//
// The classic fencing rule accepts any token "not older than" the current
// one. compactkit makes it strict. Tokens are only ever issued by the
// scheduler, so an honest worker can hold the current token or an older one,
// never a newer one: for honest workers "equal" and "not older than" accept
// exactly the same updates. Equality additionally rejects a forged (or
// corrupted) token that is larger than any the scheduler has issued, which
// "not older than" would accept.
//
// # Guard
//
// [Guard] is an optional, in-process guard that a host's storage layer can
// call before writing on behalf of an attempt: it remembers the highest token
// seen per resource and rejects older ones with [ErrStaleToken]. It only sees
// the writes that pass through one process, so it is defence in depth, not a
// guarantee. The guarantee is the commit-time token check in the replicated
// state machine: an attempt whose token is no longer current can never commit
// its outputs, whatever it managed to write.
package fencing
