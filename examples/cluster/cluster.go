package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/compactkit/compactkit/examples/internal/demo"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/metrics/prom"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/raftfsm/hraft/hraftnode"
	"github.com/compactkit/compactkit/rpc"
)

// member is one node of the cluster: raft node and HTTP endpoints. Its
// addresses stay the same across restarts.
type member struct {
	id       string
	dir      string
	raftAddr string
	httpAddr string
	node     *hraftnode.Node
	srv      *demo.HTTPServer
}

// cluster is three hraft nodes on loopback TCP with BoltDB stores.
type cluster struct {
	dir    string
	state  raftfsm.Config
	noSync bool
	start  time.Time

	mu      sync.Mutex
	members []*member
	urls    map[raft.ServerID]string

	// leader history, from the watcher
	leaders []string
	events  []string
	marks   []float64
	stopW   chan struct{}
	doneW   chan struct{}
}

func newCluster(dir string, n int, noSync bool) (*cluster, error) {
	c := &cluster{dir: dir, state: demo.StateConfig(), noSync: noSync, urls: map[raft.ServerID]string{},
		stopW: make(chan struct{}), doneW: make(chan struct{}), start: time.Now()}
	for i := range n {
		m := &member{id: fmt.Sprintf("node-%d", i+1), dir: filepath.Join(dir, fmt.Sprintf("node-%d", i+1)),
			raftAddr: "127.0.0.1:0", httpAddr: "127.0.0.1:0"}
		if err := c.startMember(m); err != nil {
			c.shutdown()
			return nil, err
		}
		c.members = append(c.members, m)
	}
	var peers []raft.Server
	for _, m := range c.members[1:] {
		peers = append(peers, m.node.Server())
	}
	if err := c.members[0].node.Bootstrap(peers...); err != nil {
		c.shutdown()
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if _, err := c.waitLeader(ctx, ""); err != nil {
		c.shutdown()
		return nil, err
	}
	go c.watch()
	return c, nil
}

// startMember starts (or restarts) a member's raft node and HTTP server on
// its addresses.
func (c *cluster) startMember(m *member) error {
	node, err := hraftnode.New(hraftnode.Config{
		ID: m.id, Dir: m.dir, NoSync: c.noSync, BindAddr: m.raftAddr,
		State: &c.state, FSMOptions: demo.FSMOptions(),
	})
	if err != nil {
		return fmt.Errorf("starting %s: %w", m.id, err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(prom.NewFSMCollector(node.State.Stats, prom.WithClock(time.Now),
		prom.WithConstLabels(prometheus.Labels{"node": m.id})))
	srv, err := demo.Serve(m.httpAddr, node.Service.Service, reg, rpc.WithLeaderURL(c.leaderURL))
	if err != nil {
		_ = node.Shutdown()
		return fmt.Errorf("serving %s: %w", m.id, err)
	}
	c.mu.Lock()
	m.node, m.srv = node, srv
	m.raftAddr, m.httpAddr = string(node.Addr), srv.Addr
	c.urls[raft.ServerID(m.id)] = srv.URL
	c.mu.Unlock()
	return nil
}

func (c *cluster) leaderURL(id, _ string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.urls[raft.ServerID(id)]
}

// peers returns the members' base URLs.
func (c *cluster) peers() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, m := range c.members {
		out = append(out, c.urls[raft.ServerID(m.id)])
	}
	return out
}

// services returns the services of the members that run.
func (c *cluster) services() []*leader.Service {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*leader.Service
	for _, m := range c.members {
		if m.node != nil {
			out = append(out, m.node.Service.Service)
		}
	}
	return out
}

// leader returns the member that leads and serves, if any.
func (c *cluster) leader() *member {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.members {
		if m.node != nil && m.node.Service.IsLeader() {
			return m
		}
	}
	return nil
}

// waitLeader waits for a serving leader other than not.
func (c *cluster) waitLeader(ctx context.Context, not string) (*member, error) {
	for {
		if m := c.leader(); m != nil && m.id != not {
			return m, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("no leader elected: %w", ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// watch records every change of leader.
func (c *cluster) watch() {
	defer close(c.doneW)
	for {
		if m := c.leader(); m != nil {
			c.mu.Lock()
			if n := len(c.leaders); n == 0 || c.leaders[n-1] != m.id {
				c.leaders = append(c.leaders, m.id)
			}
			c.mu.Unlock()
		}
		select {
		case <-c.stopW:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (c *cluster) logf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, fmt.Sprintf("%6.2fs  ", time.Since(c.start).Seconds())+fmt.Sprintf(format, args...))
}

// killLeader shuts the leader down, waits for another to be elected,
// keeps the old one down for a while and restarts it on the same
// directory and addresses.
func (c *cluster) killLeader(ctx context.Context, down time.Duration) error {
	old := c.leader()
	if old == nil {
		var err error
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		old, err = c.waitLeader(wctx, "")
		cancel()
		if err != nil {
			return err
		}
	}
	t0 := time.Now()
	c.mu.Lock()
	c.marks = append(c.marks, time.Since(c.start).Seconds())
	node, srv := old.node, old.srv
	old.node, old.srv = nil, nil
	c.mu.Unlock()
	c.logf("leader %s shut down", old.id)
	_ = srv.Close()
	if err := node.Shutdown(); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	nl, err := c.waitLeader(wctx, old.id)
	cancel()
	if err != nil {
		return err
	}
	c.logf("%s leads and serves, %s after the shutdown", nl.id, time.Since(t0).Round(time.Millisecond))
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(down):
	}
	if err := c.startMember(old); err != nil {
		return err
	}
	c.logf("%s restarted as a follower on %s", old.id, old.raftAddr)
	return nil
}

// compareSnapshots waits until every replica has applied the leader's
// last entry, then snapshots each and compares the bytes.
func (c *cluster) compareSnapshots(ctx context.Context) (ok bool, detail string, err error) {
	l, err := c.waitLeader(ctx, "")
	if err != nil {
		return false, "", err
	}
	if err := l.node.Raft.Barrier(10 * time.Second).Error(); err != nil {
		return false, "", fmt.Errorf("barrier: %w", err)
	}
	want, _, _ := l.node.State.LastApplied()
	for {
		all := true
		c.mu.Lock()
		for _, m := range c.members {
			if idx, _, _ := m.node.State.LastApplied(); idx != want {
				all = false
			}
		}
		c.mu.Unlock()
		if all {
			break
		}
		select {
		case <-ctx.Done():
			return false, "", fmt.Errorf("replicas did not catch up with index %d: %w", want, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	var snaps [][]byte
	detail = fmt.Sprintf("at index %d:", want)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.members {
		var buf bytes.Buffer
		if err := m.node.State.Snapshot(&buf); err != nil {
			return false, "", fmt.Errorf("snapshot of %s: %w", m.id, err)
		}
		snaps = append(snaps, buf.Bytes())
		sum := sha256.Sum256(buf.Bytes())
		detail += fmt.Sprintf(" %s sha256:%x", m.id, sum[:6])
	}
	ok = true
	for _, s := range snaps[1:] {
		ok = ok && bytes.Equal(s, snaps[0])
	}
	detail = fmt.Sprintf("%d bytes each %s", len(snaps[0]), detail)
	if !ok {
		detail = "snapshots differ " + detail
	}
	return ok, detail, nil
}

func (c *cluster) shutdown() error {
	select {
	case <-c.stopW:
	default:
		close(c.stopW)
	}
	var errs []error
	c.mu.Lock()
	members := append([]*member(nil), c.members...)
	c.mu.Unlock()
	for _, m := range members {
		if m.srv != nil {
			_ = m.srv.Close()
		}
		if m.node != nil {
			if err := m.node.Shutdown(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
