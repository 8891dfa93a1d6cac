package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/hashicorp/raft"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/index"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/raftfsm/hraft"
)

// Backend is what the server serves: the leader-side calls. A
// *leader.Service (so a *hraft.Service) satisfies it. On a node that does
// not lead, its methods return an error wrapping a *leader.NotLeaderError.
type Backend interface {
	Poll(ctx context.Context, req *ck.PollRequest) (*ck.PollResponse, error)
	AddBlocks(ctx context.Context, blocks []ck.BlockMeta) ([]raftfsm.BlockResult, error)
	Operator(ctx context.Context, op raftfsm.Operator) (*raftfsm.Result, error)
	Stats(ctx context.Context) (raftfsm.Stats, error)
	Index(ctx context.Context) (*raftfsm.IndexView, error)
}

var (
	_ Backend = (*leader.Service)(nil)
	_ Backend = (*hraft.Service)(nil)
)

// DefaultMaxBody bounds a request body (an add-blocks call of tens of
// thousands of blocks fits).
const DefaultMaxBody = 32 << 20

// ServerOption configures a handler built by [NewHandler].
type ServerOption func(*server)

// WithLeaderURL sets how a follower names the leader to its clients: the
// base URL ("http://host:port") of the HTTP endpoint of the log's server
// with the given ID and address (leader.NotLeaderError's). Without it, or
// when it returns "", a follower answers 503 and clients try their other
// peers.
func WithLeaderURL(f func(id, addr string) string) ServerOption {
	return func(s *server) { s.leaderURL = f }
}

// WithServerLogger sets the logger of the handler (default: discard).
func WithServerLogger(l *slog.Logger) ServerOption {
	return func(s *server) {
		if l != nil {
			s.log = l
		}
	}
}

// WithMaxBody sets the largest request body accepted (default
// [DefaultMaxBody]); a larger one is answered 400.
func WithMaxBody(n int64) ServerOption {
	return func(s *server) {
		if n > 0 {
			s.maxBody = n
		}
	}
}

type server struct {
	b         Backend
	leaderURL func(id, addr string) string
	log       *slog.Logger
	maxBody   int64
}

// NewHandler returns an http.Handler serving b on the endpoints listed in
// the package documentation.
func NewHandler(b Backend, opts ...ServerOption) http.Handler {
	s := &server{b: b, log: slog.New(slog.DiscardHandler), maxBody: DefaultMaxBody}
	for _, o := range opts {
		o(s)
	}
	mux := http.NewServeMux()
	mux.HandleFunc(PathPoll, s.post(s.poll))
	mux.HandleFunc(PathBlocks, s.post(s.blocks))
	mux.HandleFunc(PathOperator, s.post(s.operator))
	mux.HandleFunc(PathStats, s.get(s.stats))
	mux.HandleFunc(PathQuery, s.get(s.query))
	mux.HandleFunc(PathIndex, s.get(s.index))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, ErrorBody{Code: CodeNotFound, Error: "no such endpoint: " + r.URL.Path})
	})
	return s.recover(mux)
}

// Server timeouts of [NewServer].
const (
	// DefaultReadTimeout bounds reading a whole request, body included: a
	// client that announces a large body and sends it slowly is cut off.
	DefaultReadTimeout = 30 * time.Second
	// DefaultWriteTimeout bounds a request from the end of its headers to
	// the end of its response; a poll takes at most the leader's propose
	// timeout (10 s by default) twice in two-commit mode.
	DefaultWriteTimeout = time.Minute
	// DefaultIdleTimeout bounds a keep-alive connection waiting for the
	// next request.
	DefaultIdleTimeout = 2 * time.Minute
)

// NewServer returns an http.Server for h with every timeout set: headers
// within 5 s, the whole request within [DefaultReadTimeout], the response
// within [DefaultWriteTimeout], idle connections closed after
// [DefaultIdleTimeout], and headers of at most 64 KiB. With the handler's
// body limit, a slow or oversized request holds neither a connection nor
// a goroutine for long. Serve it with srv.Serve(listener).
func NewServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       DefaultReadTimeout,
		WriteTimeout:      DefaultWriteTimeout,
		IdleTimeout:       DefaultIdleTimeout,
		MaxHeaderBytes:    64 << 10,
	}
}

// badRequest marks an error as the caller's fault (400).
type badRequest struct{ err error }

func (e badRequest) Error() string { return e.err.Error() }
func (e badRequest) Unwrap() error { return e.err }

func bad(format string, args ...any) error { return badRequest{fmt.Errorf(format, args...)} }

type handlerFunc func(ctx context.Context, r *http.Request, body []byte) (any, error)

func (s *server) recover(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("panic serving request", "path", r.URL.Path, "panic", v)
				writeError(w, http.StatusInternalServerError, ErrorBody{Code: CodeInternal, Error: fmt.Sprint("internal error: ", v)})
			}
		}()
		h.ServeHTTP(w, r)
	})
}

func (s *server) post(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeError(w, http.StatusMethodNotAllowed, ErrorBody{Code: CodeMethod, Error: "use POST"})
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
		if err != nil {
			s.fail(w, r, bad("reading body: %w", err))
			return
		}
		s.serve(w, r, h, body)
	}
}

func (s *server) get(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", http.MethodGet)
			writeError(w, http.StatusMethodNotAllowed, ErrorBody{Code: CodeMethod, Error: "use GET"})
			return
		}
		s.serve(w, r, h, nil)
	}
}

func (s *server) serve(w http.ResponseWriter, r *http.Request, h handlerFunc, body []byte) {
	out, err := h(r.Context(), r, body)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	data, err := json.Marshal(out)
	if err != nil {
		s.fail(w, r, fmt.Errorf("encoding response: %w", err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
}

// fail answers err with the status code and body it maps to.
func (s *server) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, body := s.classify(r.Context(), err)
	if status >= 500 && body.Code != CodeNoLeader {
		s.log.Warn("request failed", "path", r.URL.Path, "status", status, "err", err)
	} else {
		s.log.Debug("request refused", "path", r.URL.Path, "status", status, "err", err)
	}
	writeError(w, status, body)
}

func (s *server) classify(ctx context.Context, err error) (int, ErrorBody) {
	var nl *leader.NotLeaderError
	var br badRequest
	switch {
	case errors.As(err, &br):
		return http.StatusBadRequest, ErrorBody{Code: CodeBadRequest, Error: err.Error()}
	case errors.As(err, &nl):
		if s.leaderURL != nil && (nl.LeaderID != "" || nl.LeaderAddr != "") && !errors.Is(err, leader.ErrClosed) {
			if u := s.leaderURL(nl.LeaderID, nl.LeaderAddr); u != "" {
				return http.StatusMisdirectedRequest, ErrorBody{Code: CodeNotLeader, Error: err.Error(), Leader: u}
			}
		}
		return http.StatusServiceUnavailable, ErrorBody{Code: CodeNoLeader, Error: err.Error()}
	case errors.Is(err, leader.ErrNotLeader), errors.Is(err, leader.ErrClosed), errors.Is(err, raft.ErrNotLeader),
		errors.Is(err, raft.ErrLeadershipLost), errors.Is(err, raft.ErrRaftShutdown):
		return http.StatusServiceUnavailable, ErrorBody{Code: CodeNoLeader, Error: err.Error()}
	case errors.Is(err, raftfsm.ErrInvalidRequest), errors.Is(err, raftfsm.ErrLimit):
		return http.StatusBadRequest, ErrorBody{Code: CodeInvalidRequest, Error: err.Error()}
	case errors.Is(err, raftfsm.ErrStaleRequest):
		return http.StatusConflict, ErrorBody{Code: CodeStale, Error: err.Error()}
	case errors.Is(err, raftfsm.ErrOperator):
		return http.StatusUnprocessableEntity, ErrorBody{Code: CodeOperator, Error: err.Error()}
	case errors.Is(err, raftfsm.ErrInvalidCommand):
		return http.StatusBadRequest, ErrorBody{Code: CodeBadRequest, Error: err.Error()}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), ctx.Err() != nil:
		return http.StatusGatewayTimeout, ErrorBody{Code: CodeTimeout, Error: err.Error()}
	default:
		return http.StatusInternalServerError, ErrorBody{Code: CodeInternal, Error: err.Error()}
	}
}

func writeError(w http.ResponseWriter, status int, body ErrorBody) {
	data, _ := json.Marshal(body)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

// decode reads exactly one JSON value into v, refusing unknown fields and
// trailing data.
func decode(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return bad("empty body")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return bad("decoding body: %w", err)
	}
	if dec.More() {
		return bad("decoding body: trailing data after the JSON value")
	}
	var rest json.RawMessage
	if err := dec.Decode(&rest); err != io.EOF {
		return bad("decoding body: trailing data after the JSON value")
	}
	return nil
}

func (s *server) poll(ctx context.Context, _ *http.Request, body []byte) (any, error) {
	var req ck.PollRequest
	if err := decode(body, &req); err != nil {
		return nil, err
	}
	if err := req.Validate(); err != nil {
		return nil, bad("poll request: %w", err)
	}
	return s.b.Poll(ctx, &req)
}

func (s *server) blocks(ctx context.Context, _ *http.Request, body []byte) (any, error) {
	var req BlocksRequest
	if err := decode(body, &req); err != nil {
		return nil, err
	}
	if len(req.Blocks) == 0 {
		return nil, bad("no blocks")
	}
	for i := range req.Blocks {
		if err := req.Blocks[i].Validate(); err != nil {
			return nil, bad("block %d: %w", i, err)
		}
	}
	res, err := s.b.AddBlocks(ctx, req.Blocks)
	if err != nil {
		return nil, err
	}
	out := BlocksResponse{Results: make([]BlockResult, len(res))}
	for i, r := range res {
		out.Results[i] = BlockResult{ID: r.ID, Queued: r.Queued}
		if r.Err != nil {
			out.Results[i].Error = r.Err.Error()
			out.Results[i].Duplicate = errors.Is(r.Err, index.ErrDuplicate)
		}
	}
	return out, nil
}

func (s *server) operator(ctx context.Context, _ *http.Request, body []byte) (any, error) {
	var op raftfsm.Operator
	if err := decode(body, &op); err != nil {
		return nil, err
	}
	if err := (&raftfsm.Command{Operator: &op}).Validate(); err != nil {
		return nil, bad("operator command: %w", err)
	}
	res, err := s.b.Operator(ctx, op)
	if err != nil {
		return nil, err
	}
	if res == nil {
		return nil, errors.New("backend returned no result")
	}
	return OperatorResult{Index: res.Index, Count: res.Count, Cancelled: res.Cancelled}, nil
}

func (s *server) stats(ctx context.Context, _ *http.Request, _ []byte) (any, error) {
	return s.b.Stats(ctx)
}

func intParam(r *http.Request, name string, def int64) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, bad("parameter %s: %w", name, err)
	}
	return n, nil
}

func (s *server) query(ctx context.Context, r *http.Request, _ []byte) (any, error) {
	q := r.URL.Query()
	tenant := q.Get("tenant")
	if err := ck.ValidateTenant(tenant); err != nil {
		return nil, bad("parameter tenant: %w", err)
	}
	if tenant == "" {
		return nil, bad("parameter tenant is required")
	}
	from, err := intParam(r, "from", 0)
	if err != nil {
		return nil, err
	}
	to, err := intParam(r, "to", 0)
	if err != nil {
		return nil, err
	}
	if !q.Has("to") || !q.Has("from") || from > to {
		return nil, bad("parameters from and to are required, from <= to (unix nanoseconds)")
	}
	var shard *uint32
	if q.Has("shard") {
		n, err := strconv.ParseUint(q.Get("shard"), 10, 32)
		if err != nil {
			return nil, bad("parameter shard: %w", err)
		}
		v := uint32(n)
		shard = &v
	}
	view, err := s.b.Index(ctx)
	if err != nil {
		return nil, err
	}
	out := QueryResult{Blocks: []ck.BlockMeta{}}
	for b := range view.Query(tenant, from, to, shard) {
		out.Blocks = append(out.Blocks, b)
	}
	out.ReadAmplification = len(out.Blocks)
	return out, nil
}

func (s *server) index(ctx context.Context, r *http.Request, _ []byte) (any, error) {
	limit, err := intParam(r, "limit", 1000)
	if err != nil {
		return nil, err
	}
	if limit <= 0 || limit > MaxIndexPage {
		return nil, bad("parameter limit: %d, want 1 to %d", limit, MaxIndexPage)
	}
	view, err := s.b.Index(ctx)
	if err != nil {
		return nil, err
	}
	blocks := view.Blocks(r.URL.Query().Get("after"), int(limit)+1)
	page := IndexPage{Blocks: blocks}
	if len(blocks) > int(limit) {
		page.Blocks = blocks[:limit]
		page.Next = blocks[limit-1].ID
	}
	if page.Blocks == nil {
		page.Blocks = []ck.BlockMeta{}
	}
	return page, nil
}
