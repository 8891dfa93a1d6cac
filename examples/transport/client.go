package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/worker"
)

// Defaults of the client.
const (
	// DefaultRetryFor is how long a call keeps looking for a leader.
	DefaultRetryFor = 10 * time.Second
	// DefaultAttemptTimeout bounds one HTTP exchange.
	DefaultAttemptTimeout = 15 * time.Second
	// DefaultBackoff is the first wait before trying another peer; it
	// doubles up to 8 times.
	DefaultBackoff = 25 * time.Millisecond
)

// ClientOption configures a [Client].
type ClientOption func(*Client)

// WithHTTPClient sets the HTTP client (default: a client of its own with
// keep-alive connections).
func WithHTTPClient(hc *http.Client) ClientOption {
	return func(c *Client) {
		if hc != nil {
			c.hc = hc
		}
	}
}

// WithRetryFor sets how long one call keeps trying peers while no leader
// answers (default [DefaultRetryFor]). Zero makes one attempt per peer.
func WithRetryFor(d time.Duration) ClientOption {
	return func(c *Client) { c.retryFor = max(d, 0) }
}

// WithAttemptTimeout bounds one HTTP exchange (default
// [DefaultAttemptTimeout]).
func WithAttemptTimeout(d time.Duration) ClientOption {
	return func(c *Client) {
		if d > 0 {
			c.attemptTimeout = d
		}
	}
}

// WithBackoff sets the first wait between attempts at other peers
// (default [DefaultBackoff]).
func WithBackoff(d time.Duration) ClientOption {
	return func(c *Client) {
		if d > 0 {
			c.backoff = d
		}
	}
}

// Client calls the leader's endpoints, following redirects to the leader
// and retrying across leader changes (see the package documentation).
// It is safe for concurrent use.
type Client struct {
	hc             *http.Client
	retryFor       time.Duration
	attemptTimeout time.Duration
	backoff        time.Duration

	mu      sync.Mutex
	peers   []string
	current string // base URL believed to lead
	next    int    // next peer to try after a failure
	follows uint64
}

var _ worker.Client = (*Client)(nil)

// NewClient returns a client for the peers' base URLs
// ("http://127.0.0.1:8080"); it starts with the first.
func NewClient(peers []string, opts ...ClientOption) (*Client, error) {
	if len(peers) == 0 {
		return nil, fmt.Errorf("transport: no peers: %w", ErrBadRequest)
	}
	c := &Client{
		retryFor:       DefaultRetryFor,
		attemptTimeout: DefaultAttemptTimeout,
		backoff:        DefaultBackoff,
	}
	for _, p := range peers {
		u, err := url.Parse(p)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("transport: peer %q is not an http(s) base URL: %w", p, ErrBadRequest)
		}
		c.peers = append(c.peers, strings.TrimRight(p, "/"))
	}
	c.current = c.peers[0]
	for _, o := range opts {
		o(c)
	}
	if c.hc == nil {
		c.hc = &http.Client{Transport: &http.Transport{
			MaxIdleConnsPerHost: 16,
			IdleConnTimeout:     30 * time.Second,
		}}
	}
	return c, nil
}

// Leader returns the base URL the client currently sends to.
func (c *Client) Leader() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.current
}

// Redirects returns how many leader redirects (421) the client followed.
func (c *Client) Redirects() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.follows
}

func (c *Client) target() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.current
}

// follow records the leader named by a 421.
func (c *Client) follow(from, leader string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.current == from {
		c.current = strings.TrimRight(leader, "/")
		c.follows++
	}
}

// rotate moves on from a peer that did not serve.
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

// do runs one call: method on path with body (nil for GET), decoding a
// 200 answer into out. It follows 421s and retries unavailability until
// the retry budget or ctx ends.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body []byte, out any) error {
	deadline := time.Now().Add(c.retryFor)
	wait := c.backoff
	var last error
	hops := 0
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			if last != nil {
				return fmt.Errorf("transport: %s: %w (last error: %w)", path, err, last)
			}
			return fmt.Errorf("transport: %s: %w", path, err)
		}
		base := c.target()
		retry, err := c.once(ctx, base, method, path, query, body, out)
		if err == nil {
			return nil
		}
		last = err
		var te *Error
		if errors.As(err, &te) && te.Code == CodeNotLeader && te.Leader != "" && te.Leader != base && hops < 2*len(c.peers)+2 {
			hops++
			c.follow(base, te.Leader)
			continue
		}
		if !retry {
			return err
		}
		c.rotate(base)
		if attempt+1 >= len(c.peers) && !time.Now().Before(deadline) {
			return fmt.Errorf("transport: %s: gave up after %d attempts: %w: %w", path, attempt+1, ErrUnavailable, last)
		}
		hops = 0
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
		wait = min(2*wait, c.backoff<<8, time.Second)
	}
}

// once sends one request. retry reports whether another peer may serve it.
func (c *Client) once(ctx context.Context, base, method, path string, query url.Values, body []byte, out any) (retry bool, err error) {
	actx, cancel := context.WithTimeout(ctx, c.attemptTimeout)
	defer cancel()
	u := base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(actx, method, u, rd)
	if err != nil {
		return false, fmt.Errorf("transport: %s: %w", path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return true, fmt.Errorf("transport: %s at %s: %w", path, base, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<30))
	if err != nil {
		return true, fmt.Errorf("transport: %s at %s: reading answer: %w", path, base, err)
	}
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(data, out); err != nil {
			return false, fmt.Errorf("transport: %s at %s: decoding answer: %w: %w", path, base, ErrServer, err)
		}
		return false, nil
	}
	e := &Error{Status: resp.StatusCode, Op: path}
	if json.Unmarshal(data, &e.ErrorBody) != nil || e.Code == "" {
		e.Code = CodeInternal
		if resp.StatusCode == http.StatusBadRequest {
			e.Code = CodeBadRequest
		}
		e.ErrorBody.Error = strings.TrimSpace(string(data))
	}
	switch {
	case resp.StatusCode == http.StatusMisdirectedRequest,
		resp.StatusCode == http.StatusServiceUnavailable,
		resp.StatusCode == http.StatusGatewayTimeout,
		resp.StatusCode == http.StatusBadGateway:
		return true, e
	default:
		return false, e
	}
}

// Poll sends a worker's poll request to the leader. It implements
// worker.Client: a request refused as invalid returns an error wrapping
// compactkit.ErrRejected; any other error leaves the worker to retry.
func (c *Client) Poll(ctx context.Context, req *ck.PollRequest) (*ck.PollResponse, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("transport: encoding poll: %w", err)
	}
	var resp ck.PollResponse
	if err := c.do(ctx, http.MethodPost, PathPoll, nil, body, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// AddBlocks adds newly written blocks and returns what became of each, in
// order. A block already added (by an earlier attempt whose answer was
// lost, say) comes back with an error wrapping index.ErrDuplicate.
func (c *Client) AddBlocks(ctx context.Context, blocks []ck.BlockMeta) ([]BlockResult, error) {
	body, err := json.Marshal(BlocksRequest{Blocks: blocks})
	if err != nil {
		return nil, fmt.Errorf("transport: encoding blocks: %w", err)
	}
	var resp BlocksResponse
	if err := c.do(ctx, http.MethodPost, PathBlocks, nil, body, &resp); err != nil {
		return nil, err
	}
	if len(resp.Results) != len(blocks) {
		return nil, fmt.Errorf("transport: %d results for %d blocks: %w", len(resp.Results), len(blocks), ErrServer)
	}
	return resp.Results, nil
}

// Operator sends an operator command; a refusal returns an error wrapping
// raftfsm.ErrOperator.
func (c *Client) Operator(ctx context.Context, op raftfsm.Operator) (*OperatorResult, error) {
	body, err := json.Marshal(op)
	if err != nil {
		return nil, fmt.Errorf("transport: encoding operator command: %w", err)
	}
	var resp OperatorResult
	if err := c.do(ctx, http.MethodPost, PathOperator, nil, body, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// Stats returns the state machine's statistics, read on the leader.
func (c *Client) Stats(ctx context.Context) (raftfsm.Stats, error) {
	var s raftfsm.Stats
	err := c.do(ctx, http.MethodGet, PathStats, nil, nil, &s)
	return s, err
}

// Query returns the live blocks a query of tenant over [from, to] (unix
// nanoseconds) reads, of one shard if shard is not nil.
func (c *Client) Query(ctx context.Context, tenant string, from, to int64, shard *uint32) (*QueryResult, error) {
	q := url.Values{"tenant": {tenant}, "from": {strconv.FormatInt(from, 10)}, "to": {strconv.FormatInt(to, 10)}}
	if shard != nil {
		q.Set("shard", strconv.FormatUint(uint64(*shard), 10))
	}
	var r QueryResult
	if err := c.do(ctx, http.MethodGet, PathQuery, q, nil, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Index returns up to limit live blocks in ID order after the ID after,
// and the after of the next page ("" at the end).
func (c *Client) Index(ctx context.Context, after string, limit int) ([]ck.BlockMeta, string, error) {
	q := url.Values{"limit": {strconv.Itoa(limit)}}
	if after != "" {
		q.Set("after", after)
	}
	var p IndexPage
	if err := c.do(ctx, http.MethodGet, PathIndex, q, nil, &p); err != nil {
		return nil, "", err
	}
	return p.Blocks, p.Next, nil
}

// AllBlocks returns every live block, reading the index a page at a time
// (pages may come from different leaders' views during a leader change).
func (c *Client) AllBlocks(ctx context.Context) ([]ck.BlockMeta, error) {
	var all []ck.BlockMeta
	after := ""
	for {
		page, next, err := c.Index(ctx, after, MaxIndexPage)
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		if next == "" {
			return all, nil
		}
		after = next
	}
}
