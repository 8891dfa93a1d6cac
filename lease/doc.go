// Package lease provides compactkit's lease arithmetic on log time and the
// worker-side [Keeper] that renews a lease and cancels work when it is lost.
//
// # Leases on log time
//
// The scheduler judges leases on log time: int64 Unix nanoseconds taken from
// the leader's clock and carried by log entries, so that every replica
// reaches the same verdict. A lease's deadline is the last instant on that
// clock at which it holds; [Grant] and [Extend] compute deadlines with
// saturating arithmetic, so a huge duration can never wrap a deadline
// into the past, and a renewal never shortens a lease. A lease holds up to
// and including its deadline: it has expired only once log time is strictly
// past it.
//
// # Keeping a lease on the worker
//
// A worker must never compare the leader's absolute deadline with its own
// clock: the two clocks differ by an unknown offset, and the worker would
// keep working after the leader has given the job to someone else. The
// [Keeper] instead measures the lease on the worker's clock, starting from
// the moment the worker sent the request that granted or renewed it. That
// is conservative: the leader granted the lease at or after that moment, so
// the leader's lease ends no earlier than the locally measured one (assuming
// the two clocks run at about the same rate).
//
// The Keeper renews the lease every fraction of a lease (half, by default),
// retries transient failures with a bounded backoff, and cancels the context
// it hands out — the context the worker runs the job under — as soon as the
// leader answers that the lease is gone ([ErrLeaseLost]), the locally measured
// lease runs out, the parent context is cancelled, or [Keeper.Stop] is
// called.
//
// Cancelling the worker's context is best effort: a worker that misses it
// still cannot commit, because the state machine checks the fencing token at
// commit time (see package fencing).
package lease
