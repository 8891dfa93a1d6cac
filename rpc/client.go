package rpc

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/internal/ident"
	"github.com/compactkit/compactkit/raftfsm"
	pb "github.com/compactkit/compactkit/rpc/gen/compactkit/v1"
	"github.com/compactkit/compactkit/rpc/gen/compactkit/v1/compactkitv1connect"
	"github.com/compactkit/compactkit/worker"
)

// Defaults of the client.
const (
	// defaultRetryFor is how long one call keeps looking for a leader
	// that serves it, at most (its context may end it sooner).
	defaultRetryFor = 10 * time.Second
	// defaultAttemptTimeout bounds one exchange with one node.
	defaultAttemptTimeout = 15 * time.Second
	// defaultBackoff is the first wait before trying another node; it
	// doubles up to a second.
	defaultBackoff = 25 * time.Millisecond
)

// ErrNoPeers reports a client created without a valid peer URL.
var ErrNoPeers = errors.New("rpc: no valid peer")

// ClientOption configures a [Client].
type ClientOption func(*Client)

// WithHTTPClient sets the HTTP client. The default (or nil) speaks HTTP/2
// only, plain-text (h2c) for http:// peers, as gRPC requires.
func WithHTTPClient(hc *http.Client) ClientOption { return func(c *Client) { c.hc = hc } }

// WithClientOptions passes options to the Connect clients, after the
// client's own (gRPC, the message size limits, no compressed answers):
// connect.WithInterceptors for authentication and tracing,
// connect.WithGRPCWeb, or connect.WithAcceptCompression to take gzipped
// answers over a slow network, say.
func WithClientOptions(opts ...connect.ClientOption) ClientOption {
	return func(c *Client) { c.copts = append(c.copts, opts...) }
}

// WithRetryFor sets how long one call keeps trying while no leader serves
// it (default 10 s); zero tries each peer once.
func WithRetryFor(d time.Duration) ClientOption {
	return func(c *Client) { c.retryFor = max(d, 0) }
}

// WithAttemptTimeout bounds one exchange (default 15 s).
func WithAttemptTimeout(d time.Duration) ClientOption {
	return func(c *Client) {
		if d > 0 {
			c.attemptTimeout = d
		}
	}
}

// WithBackoff sets the first wait between attempts (default 25 ms); it
// doubles up to a second.
func WithBackoff(d time.Duration) ClientOption {
	return func(c *Client) {
		if d > 0 {
			c.backoff = d
		}
	}
}

// Client calls the LeaderService of a cluster: a worker's transport (it
// implements worker.Client) and an ingester's. It sends to the node it
// believes leads, follows a NotLeader answer to the leader it names, and
// otherwise tries the other peers with backoff — sending the same request
// each time, so that a poll is retried with its sequence number — until
// the call succeeds, is refused, its retry budget ([WithRetryFor]) is
// spent or its context ends. A refusal returns an error wrapping
// ck.ErrRejected. It is safe for concurrent use.
type Client struct {
	hc             *http.Client
	copts          []connect.ClientOption
	retryFor       time.Duration
	attemptTimeout time.Duration
	backoff        time.Duration

	mu      sync.Mutex
	peers   []string
	stubs   map[string]compactkitv1connect.LeaderServiceClient
	current string // base URL believed to lead
	next    int    // next peer to try after a failure
	follows uint64
}

var _ worker.Client = (*Client)(nil)

// NewClient returns a client of the nodes at the given base URLs
// ("http://10.0.0.1:7070"); it starts with the first.
func NewClient(peers []string, opts ...ClientOption) (*Client, error) {
	c := &Client{
		retryFor:       defaultRetryFor,
		attemptTimeout: defaultAttemptTimeout,
		backoff:        defaultBackoff,
		stubs:          map[string]compactkitv1connect.LeaderServiceClient{},
	}
	for _, p := range peers {
		base, err := baseURL(p)
		if err != nil {
			return nil, err
		}
		c.peers = append(c.peers, base)
	}
	if len(c.peers) == 0 {
		return nil, ErrNoPeers
	}
	c.current = c.peers[0]
	for _, o := range opts {
		o(c)
	}
	if c.hc == nil {
		var p http.Protocols
		p.SetHTTP2(true)
		p.SetUnencryptedHTTP2(true)
		c.hc = &http.Client{Transport: &http.Transport{
			Protocols:           &p,
			MaxIdleConnsPerHost: 16,
			IdleConnTimeout:     30 * time.Second,
		}}
	}
	return c, nil
}

// baseURL checks that p is an http(s) base URL and trims its final '/'.
func baseURL(p string) (string, error) {
	u, err := url.Parse(p)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("rpc: peer %q is not an http(s) base URL: %w", p, ErrNoPeers)
	}
	return strings.TrimRight(p, "/"), nil
}

// Redirects returns how many NotLeader answers the client followed.
func (c *Client) Redirects() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.follows
}

// target returns the base URL to send to and its stub.
func (c *Client) target() (string, compactkitv1connect.LeaderServiceClient) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.stubs[c.current]
	if !ok {
		opts := append([]connect.ClientOption{
			connect.WithGRPC(),
			connect.WithReadMaxBytes(MaxMessageBytes),
			connect.WithSendMaxBytes(MaxMessageBytes),
			// Uncompressed answers: compressing a poll's answer costs the
			// leader more CPU than the bytes cost a worker's network.
			connect.WithAcceptCompression("gzip", nil, nil),
		}, c.copts...)
		s = compactkitv1connect.NewLeaderServiceClient(c.hc, c.current, opts...)
		c.stubs[c.current] = s
	}
	return c.current, s
}

// follow records the leader a NotLeader answer from `from` named.
func (c *Client) follow(from, leader string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.current == from {
		c.current = leader
		c.follows++
	}
}

// rotate moves on from a node that did not serve.
func (c *Client) rotate(from string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.current != from {
		return // another call moved on already
	}
	for range c.peers {
		p := c.peers[c.next%len(c.peers)]
		c.next++
		if p != from || len(c.peers) == 1 {
			c.current = p
			return
		}
	}
}

// retryable reports whether another attempt (at another node, perhaps)
// may serve a call that failed with code: no leader, an unknown outcome,
// an exchange cut off.
func retryable(code connect.Code) bool {
	switch code {
	case connect.CodeUnavailable, connect.CodeDeadlineExceeded, connect.CodeAborted:
		return true
	}
	return false
}

// call runs one call with the client's leader following and retries.
func call[Resp any](ctx context.Context, c *Client, op string, f func(context.Context, compactkitv1connect.LeaderServiceClient) (*connect.Response[Resp], error)) (*Resp, error) {
	deadline := time.Now().Add(c.retryFor)
	wait := c.backoff
	hops := 0
	for attempt := 0; ; attempt++ {
		base, stub := c.target()
		actx, cancel := context.WithTimeout(ctx, c.attemptTimeout)
		resp, err := f(actx, stub)
		cancel()
		if err == nil {
			return resp.Msg, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("rpc: %s: %w (last error: %w)", op, ctx.Err(), err)
		}
		code := connect.CodeOf(err)
		if ce := asConnect(err); ce != nil {
			if (code == connect.CodeInvalidArgument || code == connect.CodeFailedPrecondition) && refusalReason(ce) != "" {
				return nil, fmt.Errorf("rpc: %s at %s: %w: %w", op, base, ck.ErrRejected, err)
			}
			if nl := notLeaderDetail(ce); code == connect.CodeUnavailable && nl != nil && hops <= 2*len(c.peers) {
				if u, uerr := baseURL(nl.GetLeaderUrl()); uerr == nil && u != base {
					hops++
					c.follow(base, u)
					continue
				}
			}
		}
		if !retryable(code) {
			return nil, fmt.Errorf("rpc: %s at %s: %w", op, base, err)
		}
		c.rotate(base)
		if attempt+1 >= len(c.peers) && !time.Now().Before(deadline) {
			return nil, fmt.Errorf("rpc: %s: gave up after %d attempts: %w", op, attempt+1, err)
		}
		hops = 0
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
		wait = min(2*wait, time.Second)
	}
}

// Poll sends a worker's poll to the leader; retries send the same request
// (same sequence number). It implements worker.Client.
func (c *Client) Poll(ctx context.Context, req *ck.PollRequest) (*ck.PollResponse, error) {
	msg := pollRequestToPB(req)
	resp, err := call(ctx, c, "poll", func(ctx context.Context, s compactkitv1connect.LeaderServiceClient) (*connect.Response[pb.PollResponse], error) {
		return s.Poll(ctx, connect.NewRequest(msg))
	})
	if err != nil {
		return nil, err
	}
	return pollResponseToGo(resp), nil
}

// AddBlocks adds newly written blocks and returns what became of each, in
// order. Retrying is safe: a block already added comes back with an error
// wrapping index.ErrDuplicate.
func (c *Client) AddBlocks(ctx context.Context, blocks []ck.BlockMeta) ([]raftfsm.BlockResult, error) {
	msg := &pb.AddBlocksRequest{Blocks: blocksToPB(blocks)}
	resp, err := call(ctx, c, "add-blocks", func(ctx context.Context, s compactkitv1connect.LeaderServiceClient) (*connect.Response[pb.AddBlocksResponse], error) {
		return s.AddBlocks(ctx, connect.NewRequest(msg))
	})
	if err != nil {
		return nil, err
	}
	if len(resp.GetResults()) != len(blocks) {
		return nil, fmt.Errorf("rpc: add-blocks: %d results for %d blocks: %w", len(resp.GetResults()), len(blocks), ident.ErrInconsistent)
	}
	return blockResultsToGo(resp.GetResults()), nil
}

// SetWatermark records the start time of the oldest query still reading
// (unix nanoseconds).
func (c *Client) SetWatermark(ctx context.Context, oldestReader int64) error {
	msg := &pb.SetWatermarkRequest{OldestReader: oldestReader}
	_, err := call(ctx, c, "set-watermark", func(ctx context.Context, s compactkitv1connect.LeaderServiceClient) (*connect.Response[pb.SetWatermarkResponse], error) {
		return s.SetWatermark(ctx, connect.NewRequest(msg))
	})
	return err
}

// ListBlocks returns up to limit live blocks in ID order after the ID
// after, and the after of the next page ("" at the end). Each page is
// read on the leader; see ListBlocksRequest for the consistency of a
// listing.
func (c *Client) ListBlocks(ctx context.Context, after string, limit int) ([]ck.BlockMeta, string, error) {
	msg := &pb.ListBlocksRequest{After: after, Limit: int32(min(max(limit, 0), MaxListLimit+1))}
	resp, err := call(ctx, c, "list-blocks", func(ctx context.Context, s compactkitv1connect.LeaderServiceClient) (*connect.Response[pb.ListBlocksResponse], error) {
		return s.ListBlocks(ctx, connect.NewRequest(msg))
	})
	if err != nil {
		return nil, "", err
	}
	return blocksToGo(resp.GetBlocks()), resp.GetNextAfter(), nil
}

// Stats returns the statistics of the state machine, read on the leader.
func (c *Client) Stats(ctx context.Context) (*pb.GetStatsResponse, error) {
	return call(ctx, c, "get-stats", func(ctx context.Context, s compactkitv1connect.LeaderServiceClient) (*connect.Response[pb.GetStatsResponse], error) {
		return s.GetStats(ctx, connect.NewRequest(&pb.GetStatsRequest{}))
	})
}
