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
	"github.com/compactkit/compactkit/rpc/internal/rpctest"
)

// node is a leader served by the handler over plain-text HTTP/2.
type node struct {
	*rpctest.Leader
	srv *httptest.Server
}

// newNode starts a single-node leader (see rpctest.NewLeader) behind the
// handler.
func newNode(t *testing.T, sopts []leader.Option, hopts ...HandlerOption) *node {
	t.Helper()
	l := rpctest.NewLeader(t, sopts...)
	return &node{Leader: l, srv: serve(t, NewHandler(l.Svc, hopts...))}
}

// serve starts h on a loopback listener with NewServer's protocols.
func serve(t *testing.T, h http.Handler) *httptest.Server {
	return rpctest.Serve(t, NewServer(h))
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

// sendsTo returns the base URL the client currently sends to.
func sendsTo(c *Client) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.current
}
