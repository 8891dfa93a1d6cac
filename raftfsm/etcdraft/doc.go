// Package etcdraft hosts compactkit's state machine on an etcd-io/raft
// node (go.etcd.io/raft/v3) that the host drives itself.
//
// etcd-io/raft has no FSM interface, no transport and no storage beyond
// MemoryStorage: the host runs the Ready loop — persist Ready.Entries and
// HardState, send Ready.Messages, apply Ready.CommittedEntries, Advance.
// An [Adapter] is what that loop calls for compactkit:
//
//   - [Adapter.Observe] with every Ready, first: it learns leadership and
//     term from SoftState and HardState and the answers to read-index
//     requests from ReadStates;
//   - [Adapter.Apply] with every committed entry, in order: compactkit's
//     entries (normal entries in its envelope: a tag byte, 'c' unless
//     [WithTag] says otherwise, the proposer's raft ID and a request ID as
//     uvarints, then the command) go to
//     [raftfsm.FSM.Apply]; every other entry — the host's own, conf
//     changes, the empty entry of a new term — only advances the applied
//     index, after the host applied it;
//   - [Adapter.Snapshot] and [Adapter.Restore] for raftpb.Snapshot.Data
//     (compactkit's section; a host with state of its own writes it beside
//     its own).
//
// The adapter implements [leader.Log], so [leader.New] serves polls, blocks
// and operator commands over it: proposals are matched to the entries that
// apply them by a request ID in the envelope ([leader.Requests]), since
// etcd-io/raft learns an entry's index only when it applies it and may drop
// a proposal silently; the barrier is a ReadIndex request, and the
// reference node runs with CheckQuorum and PreVote so that a read index is
// linearizable.
//
// # Time
//
// etcd-io/raft entries carry no timestamp. compactkit's command time is
// the only clock: the leader service stamps every command it proposes, and
// the state machine keeps its time monotonic (raftfsm documents the
// bounds). Entries are applied with a zero entry time.
//
// # Followers
//
// A follower never prepares a poll: the leader service answers every call
// on a node that does not lead with a *[leader.NotLeaderError] naming the
// leader (its raft ID and, with [WithPeerAddr], its address), for the
// worker's transport to redirect. Proposals forwarded by etcd-io/raft from
// a follower would carry no time of their own and bypass the service:
// hosts set Config.DisableProposalForwarding, as the reference node of
// package etcdrafttest does.
package etcdraft
