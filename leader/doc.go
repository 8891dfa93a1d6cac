// Package leader serves compactkit on the leader of any replicated log: a
// [Service] turns worker polls, new blocks, operator commands and
// consistent reads into proposals to a [Log] the host implements over its
// own log — hashicorp/raft, etcd-io/raft, a bucket with conditional
// writes — whose entries the host's FSM routes to [raftfsm.FSM.Apply].
//
// # What the host provides
//
// A [Log]: propose compactkit's command bytes (wrapped in the host's own
// envelope: a tag byte, a request ID) and wait for the applied result;
// whether this node leads, in which term and who does; a barrier. A log
// that learns an entry's index only when applying it, or may drop a
// proposal silently, matches results to proposals with [Requests], by a
// request ID carried in its envelope.
//
// # What the service guarantees
//
//   - Time. Every command is stamped with the leader's clock when it is
//     encoded ([raftfsm.FSM.Encode]); a time set by a caller is
//     overwritten.
//   - Office. In every term, before serving anything, the leader waits
//     until everything committed before is applied locally (a barrier),
//     proposes its configuration if the log is new, then proposes
//     [raftfsm.TookOffice], which extends the leases in progress so that an
//     election costs no healthy job its lease. [Service.Read] does it at
//     once; every call does it first.
//   - Polls are serialised — all of them, not per worker — so each is
//     prepared on the state that includes the previous one. A retried poll
//     (the worker's latest sequence number) is answered from the poll log.
//     A poll whose proposal conflicted ([ErrConflict]) or whose outcome is
//     unknown ([ErrOutcomeUnknown]) is resolved here: after a barrier, the
//     poll log answers if it was applied; otherwise it is prepared again
//     under the same sequence number, which the state machine acts on at
//     most once. Single- and two-commit polls ([WithTwoCommit]).
//   - Errors a worker recognises: a *[NotLeaderError] naming the leader
//     when this node does not lead (the worker retries elsewhere with the
//     same request); an error wrapping [compactkit.ErrRejected] for a request
//     the state machine refused without applying it (the worker must not
//     retry it); anything else is worth retrying with the same request.
//   - Every wait honours its context; a proposal is bounded by the
//     propose timeout, so nothing waits forever.
//
// Operator, policy and configuration commands are proposed like any other
// write, with [Service.Propose]; reads are linearizable through
// [Service.Read], which returns the state machine once the node has taken
// office in its term and a barrier confirms it still leads.
package leader
