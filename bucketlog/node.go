package bucketlog

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/raftfsm"
)

// Node is one process's own replica of a bucket log and the leader
// service over it: in a serverless deployment, every worker runs one and
// schedules itself — it catches up, prepares its poll on its replica,
// appends it and answers itself with the applied response — and an ingest
// process runs one to append blocks. The embedded Service's Poll makes a
// Node a worker.Client; its AddBlocks is the ingest call.
type Node struct {
	*leader.Service
	// Log is the node's view of the bucket log.
	Log *Log
}

// A node's poll retries: nodeRetries after lost races, with jittered
// exponential backoff from 1 ms to nodeMaxBackoff, the poll prepared again
// for the first nodeStaleAfter of them.
const (
	nodeRetries    = 64
	nodeStaleAfter = 2
	nodeMaxBackoff = 200 * time.Millisecond
)

// NodeConfig configures a [Node].
type NodeConfig struct {
	// State is the replicated configuration the log starts with if it is
	// new (else the log's own wins); FSMOptions are the replica's local
	// options.
	State      raftfsm.Config
	FSMOptions []raftfsm.Option
	// LogOptions configure the node's [Log]; by default a node far behind
	// restores a checkpoint rather than read every entry it missed
	// (WithCatchUpLimit(1024), four checkpoint intervals).
	LogOptions []Option
	// ServiceOptions configure its [leader.Service]. By default it
	// retries a poll up to 64 times after losing a race, with
	// jittered backoff (1 ms to 200 ms), prepared again the first 2 times and
	// then appended on whatever state it meets (leader.WithStaleAfter);
	// it answers idle polls without an entry
	// (leader.WithSkipIdlePolls); and it prepares polls at the log's time
	// as this node can tell it (leader.WithClock(Log.Now)).
	ServiceOptions []leader.Option
}

// OpenNode opens the log under prefix in store with a new replica and a
// leader service over it. id names this process uniquely among the log's
// writers and across restarts (a name and a start time, say). Close it
// with Close.
func OpenNode(ctx context.Context, store blockmerge.Store, prefix, id string, cfg NodeConfig) (*Node, error) {
	fsm, err := raftfsm.New(cfg.State, cfg.FSMOptions...)
	if err != nil {
		return nil, fmt.Errorf("bucketlog: node %s: %w", id, err)
	}
	l, err := Open(ctx, store, prefix, fsm, id, append([]Option{WithCatchUpLimit(4 * defaultCheckpointEvery)}, cfg.LogOptions...)...)
	if err != nil {
		return nil, err
	}
	svc := leader.New(l, fsm, append([]leader.Option{leader.WithRetries(nodeRetries, jittered),
		leader.WithStaleAfter(nodeStaleAfter), leader.WithSkipIdlePolls(), leader.WithClock(l.Now)}, cfg.ServiceOptions...)...)
	return &Node{Service: svc, Log: l}, nil
}

// jittered is the backoff of a node's retry: uniformly random up to an
// exponentially growing bound, so that contenders spread out.
func jittered(attempt int) time.Duration {
	bound := min(time.Millisecond<<min(attempt, 20), nodeMaxBackoff)
	return time.Duration(1 + rand.Int64N(int64(bound)))
}
