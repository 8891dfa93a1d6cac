package hraftnode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/raftfsm/hraft"
)

// joinTimeout bounds adding a voter when the caller's context has no
// earlier deadline.
const joinTimeout = 10 * time.Second

// Config describes a raft node built by [New]: a state machine, a raft
// instance over it, its stores and transport, and a [hraft.Service].
type Config struct {
	// ID is the node's raft server ID (required).
	ID string
	// Dir holds the node's durable state: a BoltDB log and stable store
	// (raft.db) and a file snapshot store (snapshots/). Empty means
	// in-memory stores and snapshots: the node forgets everything when
	// shut down.
	Dir string
	// NoSync skips fsync in the BoltDB store: for tests and benchmarks only.
	NoSync bool
	// BindAddr is the TCP address to listen on (default "127.0.0.1:0": a
	// free loopback port). To restart a node, pass the address it had.
	BindAddr string
	// Transport, if set, is used instead of a TCP transport (for instance
	// one from raft.NewInmemTransport); BindAddr is then ignored. The node
	// closes it on shutdown if it implements io.Closer.
	Transport raft.Transport
	// State is the initial replicated configuration of the state machine
	// (nil: raftfsm.DefaultConfig()). Every node of a cluster must start
	// from the same one.
	State *raftfsm.Config
	// FSMOptions tune the local state machine (logging, Prepare).
	FSMOptions []raftfsm.Option
	// Raft is the raft configuration (nil: [hraft.FastConfig]). LocalID is set
	// to ID; a nil Logger is replaced by a silent one.
	Raft *raft.Config
	// Service configures the node's service.
	Service []hraft.Option
	// Logger receives the adapter's logs (nil: discard).
	Logger *slog.Logger
}

// Node is a raft node running compactkit: the state machine, its raft
// adapter, the raft instance and the leader-side service.
type Node struct {
	// ID and Addr identify the node in the raft configuration.
	ID   raft.ServerID
	Addr raft.ServerAddress
	// Raft is the raft instance.
	Raft *raft.Raft
	// State is the local state machine (reads on it may be stale on a
	// follower; use Service on the leader for consistent reads).
	State *raftfsm.FSM
	// FSM is the raft adapter over State.
	FSM *hraft.FSM
	// Service serves polls, writes and queries on the leader.
	Service *hraft.Service

	closers []io.Closer
}

// New builds and starts a node. A node whose Dir holds raft state resumes
// from it (restore of the latest snapshot, replay of the log); a new node
// waits for [Node.Bootstrap] or to be added to a cluster.
func New(cfg Config) (*Node, error) {
	if cfg.ID == "" {
		return nil, errors.New("hraftnode: node: empty ID")
	}
	n := &Node{ID: raft.ServerID(cfg.ID)}
	if err := n.start(cfg); err != nil {
		_ = n.closeAll() // the error says what failed
		return nil, err
	}
	return n, nil
}

// start builds the node; on error what it opened is in n.closers.
func (n *Node) start(cfg Config) error {
	rc := cfg.Raft
	if rc == nil {
		rc = hraft.FastConfig(cfg.ID)
	} else {
		c := *rc
		rc = &c
	}
	rc.LocalID = n.ID
	if rc.Logger == nil {
		rc.Logger = hclog.NewNullLogger()
	}
	state := raftfsm.DefaultConfig()
	if cfg.State != nil {
		state = *cfg.State
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f, err := raftfsm.New(state, cfg.FSMOptions...)
	if err != nil {
		return fmt.Errorf("hraftnode: node %s: %w", cfg.ID, err)
	}
	n.State = f
	n.FSM = hraft.NewFSM(f, log)

	var (
		logs   raft.LogStore
		stable raft.StableStore
		snaps  raft.SnapshotStore
	)
	if cfg.Dir == "" {
		mem := raft.NewInmemStore()
		logs, stable, snaps = mem, mem, raft.NewInmemSnapshotStore()
	} else {
		if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
			return fmt.Errorf("hraftnode: node %s: %w", cfg.ID, err)
		}
		bolt, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(cfg.Dir, "raft.db"), NoSync: cfg.NoSync})
		if err != nil {
			return fmt.Errorf("hraftnode: node %s: bolt store: %w", cfg.ID, err)
		}
		guard := &stableGuard{s: bolt}
		n.closers = append(n.closers, closerFunc(func() error { return guard.close(bolt.Close) }))
		cached, err := raft.NewLogCache(512, bolt)
		if err != nil {
			return fmt.Errorf("hraftnode: node %s: %w", cfg.ID, err)
		}
		logs, stable = cached, guard
		fs, err := raft.NewFileSnapshotStoreWithLogger(filepath.Join(cfg.Dir, "snapshots"), 2, rc.Logger)
		if err != nil {
			return fmt.Errorf("hraftnode: node %s: snapshot store: %w", cfg.ID, err)
		}
		snaps = fs
	}

	trans := cfg.Transport
	if trans == nil {
		bind := cfg.BindAddr
		if bind == "" {
			bind = "127.0.0.1:0"
		}
		tcp, err := newTCPTransport(bind, rc.Logger)
		if err != nil {
			return fmt.Errorf("hraftnode: node %s: transport: %w", cfg.ID, err)
		}
		trans = tcp
	}
	if c, ok := trans.(io.Closer); ok {
		// Closed before the stores, after raft (closeAll runs in reverse).
		n.closers = append(n.closers, c)
	}
	n.Addr = trans.LocalAddr()

	r, err := raft.NewRaft(rc, n.FSM, logs, stable, snaps, trans)
	if err != nil {
		return fmt.Errorf("hraftnode: node %s: %w", cfg.ID, err)
	}
	n.Raft = r
	n.closers = append(n.closers, closerFunc(func() error { return r.Shutdown().Error() }))
	n.Service = hraft.NewService(r, f, append([]hraft.Option{hraft.WithLogger(log)}, cfg.Service...)...)
	n.closers = append(n.closers, n.Service)
	return nil
}

// stableGuard works around a shutdown race in hashicorp/raft (issue 717,
// in v1.7.3 and v1.8.0): the transport's heartbeat fast path
// (Raft.processHeartbeat) checks for shutdown, then may save the current
// term after Shutdown returned — and raft panics when that save fails on a
// closed store. The guard waits for
// writes in progress before closing the store and drops later ones (the
// node is shut down: a term it no longer records is harmless, as it cast no
// vote in it).
type stableGuard struct {
	mu     sync.RWMutex
	closed bool
	s      raft.StableStore
}

func (g *stableGuard) Set(k, v []byte) error {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed {
		return nil
	}
	return g.s.Set(k, v)
}

func (g *stableGuard) Get(k []byte) ([]byte, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed {
		return nil, leader.ErrClosed
	}
	return g.s.Get(k)
}

func (g *stableGuard) SetUint64(k []byte, v uint64) error {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed {
		return nil
	}
	return g.s.SetUint64(k, v)
}

func (g *stableGuard) GetUint64(k []byte) (uint64, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed {
		return 0, leader.ErrClosed
	}
	return g.s.GetUint64(k)
}

func (g *stableGuard) close(closeStore func() error) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	g.closed = true
	return closeStore()
}

// newTCPTransport is the node's TCP transport, with pipelined
// replication off (MaxRPCsInFlight 1): with raft's default of 2 its
// pipeline can deadlock after a follower refuses an append, leaving the
// follower without new entries and Raft.Shutdown waiting forever for the
// replication goroutine (the pipeline's channels are unbuffered at 2).
// Every append then waits for the previous one's answer, which costs
// little on a loopback or LAN.
func newTCPTransport(bind string, logger hclog.Logger) (*raft.NetworkTransport, error) {
	return raft.NewTCPTransportWithConfig(bind, nil, &raft.NetworkTransportConfig{
		MaxPool: 3, Timeout: 2 * time.Second, Logger: logger, MaxRPCsInFlight: 1,
	})
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// Server returns the node's entry in a raft configuration (a voter).
func (n *Node) Server() raft.Server {
	return raft.Server{Suffrage: raft.Voter, ID: n.ID, Address: n.Addr}
}

// Bootstrap starts a new cluster whose voters are this node and peers.
// Call it on one node only, once; the others learn the configuration from
// the leader. It fails with an error wrapping raft.ErrCantBootstrap on a
// node that already has state.
func (n *Node) Bootstrap(peers ...raft.Server) error {
	servers := append([]raft.Server{n.Server()}, peers...)
	if err := n.Raft.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil {
		return fmt.Errorf("hraftnode: node %s: bootstrap: %w", n.ID, err)
	}
	return nil
}

// Join adds a voter to the cluster (raft.AddVoter); call it on the
// leader. The new node, started without Bootstrap, catches up from the
// leader's log or snapshot. On a follower it fails with a
// *[leader.NotLeaderError] that names the leader.
func (n *Node) Join(ctx context.Context, id raft.ServerID, addr raft.ServerAddress) error {
	timeout := joinTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	fut := n.Raft.AddVoter(id, addr, 0, timeout)
	done := make(chan error, 1)
	go func() { done <- fut.Error() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		err = fmt.Errorf("%w: %w", leader.ErrOutcomeUnknown, ctx.Err())
	}
	if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
		laddr, lid := n.Raft.LeaderWithID()
		err = &leader.NotLeaderError{LeaderID: string(lid), LeaderAddr: string(laddr), Cause: err}
	}
	if err != nil {
		return fmt.Errorf("hraftnode: node %s: join %s: %w", n.ID, id, err)
	}
	return nil
}

// WaitLeader waits until this node knows a leader, and returns it.
func (n *Node) WaitLeader(ctx context.Context) (raft.ServerAddress, raft.ServerID, error) {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		if addr, id := n.Raft.LeaderWithID(); id != "" {
			return addr, id, nil
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return "", "", ctx.Err()
		}
	}
}

// WaitServing waits until this node is the leader and serves calls (its
// lease-extension command applied). On a follower it waits until ctx ends.
func (n *Node) WaitServing(ctx context.Context) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for !n.Service.IsLeader() {
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Shutdown stops the service and raft, and closes the transport and the
// stores. The node's Dir keeps its state for a restart.
func (n *Node) Shutdown() error {
	return n.closeAll()
}

func (n *Node) closeAll() error {
	var errs []error
	for i := len(n.closers) - 1; i >= 0; i-- {
		if err := n.closers[i].Close(); err != nil {
			errs = append(errs, err)
		}
	}
	n.closers = nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("hraftnode: node %s: shutdown: %w", n.ID, err)
	}
	return nil
}
