package rpc

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/raftfsm"
)

// node is a leader.Service served by the handler over plain-text HTTP/2.
type node struct {
	svc *leader.Service
	fsm *raftfsm.FSM
	log *leadertest.MemLog
	srv *httptest.Server
}

// newNode starts a single-node leader (the in-memory log) whose planner
// makes a job of every two level-0 blocks.
func newNode(t *testing.T, sopts []leader.Option, hopts ...HandlerOption) *node {
	t.Helper()
	cfg := raftfsm.DefaultConfig()
	cfg.Planner.Levels[0].MaxBlocks = 2
	fsm, err := raftfsm.New(cfg)
	require.NoError(t, err)
	log := leadertest.NewMemLog(fsm)
	svc := leader.New(log, fsm, sopts...)
	t.Cleanup(func() { _ = svc.Close() })
	return &node{svc: svc, fsm: fsm, log: log, srv: serve(t, NewHandler(svc, hopts...))}
}

// serve starts h on a loopback listener with NewServer's protocols.
func serve(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Config = NewServer(h)
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// client returns a client of the given nodes' URLs with short retries.
func client(t *testing.T, urls []string, opts ...ClientOption) *Client {
	t.Helper()
	c, err := NewClient(urls, append([]ClientOption{WithRetryFor(200 * time.Millisecond), WithBackoff(time.Millisecond)}, opts...)...)
	require.NoError(t, err)
	return c
}

// addTwo adds two level-0 blocks of tenant acme: a job's worth.
func addTwo(t *testing.T, c *Client, a, b string) {
	t.Helper()
	res, err := c.AddBlocks(context.Background(), []ck.BlockMeta{leadertest.Block(a, "acme", 0, 0), leadertest.Block(b, "acme", 0, 1e9)})
	require.NoError(t, err)
	require.Len(t, res, 2)
	for _, r := range res {
		require.NoError(t, r.Err)
	}
}

// followerLog is the log of a node that does not lead: it names the
// leader, and appends nothing.
type followerLog struct{ id, addr string }

func (l followerLog) Propose(context.Context, []byte, uint64) (leader.Applied, error) {
	return leader.Applied{}, &leader.NotLeaderError{LeaderID: l.id, LeaderAddr: l.addr}
}

func (l followerLog) Leader() leader.Leadership {
	return leader.Leadership{Term: 1, LeaderID: l.id, LeaderAddr: l.addr}
}

func (followerLog) Barrier(context.Context) error { return nil }
