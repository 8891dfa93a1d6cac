package rpc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"connectrpc.com/connect"

	"github.com/compactkit/compactkit/internal/ident"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/raftfsm"
	pb "github.com/compactkit/compactkit/rpc/gen/compactkit/v1"
	"github.com/compactkit/compactkit/rpc/gen/compactkit/v1/compactkitv1connect"
)

// MaxMessageBytes bounds every message the handler and the client read or
// send, encoded: the vocabulary's own decode limit for commands and poll
// messages. A poll response near it (many assignments of large plans)
// exceeds grpc-go's default receive limit of 4 MiB: a grpc-go client sets
// grpc.MaxCallRecvMsgSize(MaxMessageBytes).
const MaxMessageBytes = 32 << 20

// MaxListLimit bounds the limit of a ListBlocks page.
const MaxListLimit = 10000

// ErrorDomain is the domain of the ErrorInfo detail the handler attaches to
// a refusal (google.rpc.ErrorInfo, whose reason is one of the Reason*
// constants).
const ErrorDomain = "compactkit.v1"

// The reasons of the ErrorInfo detail of a refusal.
const (
	// ReasonInvalid: the request breaks a rule of the vocabulary and
	// sending it again cannot succeed (INVALID_ARGUMENT).
	ReasonInvalid = "INVALID"
	// ReasonConflict: the current state refuses the well-formed request;
	// a poll older than the worker's latest, say (FAILED_PRECONDITION).
	ReasonConflict = "CONFLICT"
	// ReasonBrowser: the request carries a browser's headers and the host
	// allows no browser (PERMISSION_DENIED).
	ReasonBrowser = "BROWSER"
)

// HandlerOption configures [NewHandler].
type HandlerOption func(*handlerOptions)

type handlerOptions struct {
	leaderURL func(id, addr string) string
	origins   []string
	log       *slog.Logger
	connect   []connect.HandlerOption
}

// WithLeaderURL sets how a node that does not lead names the leader to
// its callers: the base URL of the RPC endpoint of the log's server with
// the given ID and address (a [leader.NotLeaderError]'s; hashicorp/raft's
// address is its Raft port, not this endpoint). Without it, or when it
// returns "", the answer names the leader's ID only and clients try their
// other peers.
func WithLeaderURL(f func(id, addr string) string) HandlerOption {
	return func(o *handlerOptions) { o.leaderURL = f }
}

// WithAllowedOrigins lets browser pages of the given origins
// ("https://ops.example.com") call the handler. A request that carries a
// browser's headers (Origin or Sec-Fetch-Site) is otherwise refused with
// PERMISSION_DENIED: workers and ingesters are not browsers, and a page on
// a name rebound to the leader's address must not add blocks.
func WithAllowedOrigins(origins ...string) HandlerOption {
	return func(o *handlerOptions) { o.origins = append(o.origins, origins...) }
}

// WithHandlerLogger sets the handler's logger (default: discard).
func WithHandlerLogger(l *slog.Logger) HandlerOption {
	return func(o *handlerOptions) {
		if l != nil {
			o.log = l
		}
	}
}

// WithHandlerOptions passes options to the Connect handler, after the
// handler's own: connect.WithInterceptors for the host's authentication
// and tracing, say. Interceptors see every call after the browser check.
func WithHandlerOptions(opts ...connect.HandlerOption) HandlerOption {
	return func(o *handlerOptions) { o.connect = append(o.connect, opts...) }
}

// handler serves a [leader.Service] as the LeaderService.
type handler struct {
	svc *leader.Service
	o   handlerOptions
}

var _ compactkitv1connect.LeaderServiceHandler = (*handler)(nil)

// NewHandler returns an http.Handler serving svc as the protocol's
// LeaderService over gRPC, gRPC-Web and Connect (binary and JSON), on the
// paths "/compactkit.v1.LeaderService/<Method>". Serve it over HTTP/2 —
// plain-text HTTP/2 is what gRPC clients speak without TLS: see
// [NewServer].
func NewHandler(svc *leader.Service, opts ...HandlerOption) http.Handler {
	h := &handler{svc: svc, o: handlerOptions{log: slog.New(slog.DiscardHandler)}}
	for _, opt := range opts {
		opt(&h.o)
	}
	hopts := append([]connect.HandlerOption{
		connect.WithReadMaxBytes(MaxMessageBytes),
		connect.WithSendMaxBytes(MaxMessageBytes),
		connect.WithInterceptors(browserCheck(h.o.origins)),
	}, h.o.connect...)
	path, served := compactkitv1connect.NewLeaderServiceHandler(h, hopts...)
	mux := http.NewServeMux()
	mux.Handle(path, served)
	return mux
}

// NewServer returns an http.Server for h that speaks HTTP/1.1 and HTTP/2,
// plain-text HTTP/2 included (gRPC without TLS), reads a request's
// headers (at most 64 KiB) within 5 s and closes connections idle for two
// minutes. A call itself is bounded by the leader's propose timeout, not
// by the server.
func NewServer(h http.Handler) *http.Server {
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetHTTP2(true)
	p.SetUnencryptedHTTP2(true)
	return &http.Server{
		Handler:           h,
		Protocols:         &p,
		ReadHeaderTimeout: 5 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
}

// browserCheck refuses the calls that carry a browser's headers, unless
// their origin is allowed.
func browserCheck(origins []string) connect.Interceptor {
	return connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			h := req.Header()
			origin := h.Get("Origin")
			if (origin != "" || h.Get("Sec-Fetch-Site") != "") && !slices.Contains(origins, origin) {
				return nil, refusal(connect.CodePermissionDenied, ReasonBrowser,
					fmt.Errorf("rpc: a browser request (origin %q) is not allowed", origin))
			}
			return next(ctx, req)
		}
	})
}

// codes maps each class of error to its code and, for a refusal, the
// reason of its ErrorInfo: the one table of what an outcome means on the
// wire. Not-the-leader also carries a NotLeader detail.
var codes = [...]struct {
	code   connect.Code
	reason string
}{
	leader.Internal:    {connect.CodeInternal, ""},
	leader.Invalid:     {connect.CodeInvalidArgument, ReasonInvalid},
	leader.Conflict:    {connect.CodeFailedPrecondition, ReasonConflict},
	leader.NotLeader:   {connect.CodeUnavailable, ""},
	leader.Unavailable: {connect.CodeUnavailable, ""},
}

// refusal returns a Connect error of code with an ErrorInfo of reason.
func refusal(code connect.Code, reason string, err error) *connect.Error {
	ce := connect.NewError(code, err)
	if d, derr := connect.NewErrorDetail(errorInfo(reason)); derr == nil {
		ce.AddDetail(d)
	}
	return ce
}

// toConnect maps a service error to the Connect error the caller gets.
func (h *handler) toConnect(ctx context.Context, op string, err error) error {
	class := leader.Classify(err)
	c := codes[class]
	if class == leader.Unavailable {
		// The caller's own deadline or cancellation says so.
		switch {
		case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
			c.code = connect.CodeDeadlineExceeded
		case errors.Is(err, context.Canceled) && ctx.Err() != nil:
			c.code = connect.CodeCanceled
		}
	}
	if class == leader.Internal {
		h.o.log.Warn("rpc: call failed", "op", op, "err", err)
	} else {
		h.o.log.Debug("rpc: call refused", "op", op, "class", class.String(), "err", err)
	}
	if c.reason != "" {
		return refusal(c.code, c.reason, err)
	}
	ce := connect.NewError(c.code, err)
	var nl *leader.NotLeaderError
	if class == leader.NotLeader && errors.As(err, &nl) && !errors.Is(err, leader.ErrClosed) && nl.LeaderID != "" {
		d := &pb.NotLeader{LeaderId: nl.LeaderID}
		if h.o.leaderURL != nil {
			d.LeaderUrl = h.o.leaderURL(nl.LeaderID, nl.LeaderAddr)
		}
		if detail, derr := connect.NewErrorDetail(d); derr == nil {
			ce.AddDetail(detail)
		}
	}
	return ce
}

// Poll serves a worker's poll.
func (h *handler) Poll(ctx context.Context, req *connect.Request[pb.PollRequest]) (*connect.Response[pb.PollResponse], error) {
	resp, err := h.svc.Poll(ctx, pollRequestToGo(req.Msg))
	if err != nil {
		return nil, h.toConnect(ctx, "poll", err)
	}
	return connect.NewResponse(pollResponseToPB(resp)), nil
}

// AddBlocks serves an ingester's new blocks.
func (h *handler) AddBlocks(ctx context.Context, req *connect.Request[pb.AddBlocksRequest]) (*connect.Response[pb.AddBlocksResponse], error) {
	blocks := blocksToGo(req.Msg.GetBlocks())
	if len(blocks) == 0 {
		return nil, refusal(connect.CodeInvalidArgument, ReasonInvalid, fmt.Errorf("rpc: add blocks: no blocks: %w", ident.ErrInconsistent))
	}
	res, err := h.svc.AddBlocks(ctx, blocks)
	if err != nil {
		return nil, h.toConnect(ctx, "add-blocks", err)
	}
	return connect.NewResponse(&pb.AddBlocksResponse{Results: blockResultsToPB(res)}), nil
}

// SetWatermark serves the oldest reader's start time.
func (h *handler) SetWatermark(ctx context.Context, req *connect.Request[pb.SetWatermarkRequest]) (*connect.Response[pb.SetWatermarkResponse], error) {
	if _, err := h.svc.Propose(ctx, &raftfsm.Command{Watermark: &raftfsm.Watermark{OldestReader: req.Msg.GetOldestReader()}}); err != nil {
		return nil, h.toConnect(ctx, "set-watermark", err)
	}
	return connect.NewResponse(&pb.SetWatermarkResponse{}), nil
}

// ListBlocks serves a page of the index.
func (h *handler) ListBlocks(ctx context.Context, req *connect.Request[pb.ListBlocksRequest]) (*connect.Response[pb.ListBlocksResponse], error) {
	limit := int(req.Msg.GetLimit())
	if limit < 1 || limit > MaxListLimit {
		return nil, refusal(connect.CodeInvalidArgument, ReasonInvalid, fmt.Errorf("rpc: list blocks: limit %d, want 1 to %d: %w", limit, MaxListLimit, ident.ErrInconsistent))
	}
	after := req.Msg.GetAfter()
	if after != "" {
		if err := ident.ValidateID(after); err != nil {
			return nil, h.toConnect(ctx, "list-blocks", fmt.Errorf("rpc: list blocks: after: %w", err))
		}
	}
	fsm, err := h.svc.Read(ctx)
	if err != nil {
		return nil, h.toConnect(ctx, "list-blocks", err)
	}
	view := fsm.Index()
	defer view.Close()
	blocks := view.Blocks(after, limit+1)
	out := &pb.ListBlocksResponse{}
	if len(blocks) > limit {
		blocks = blocks[:limit]
		out.NextAfter = blocks[limit-1].ID
	}
	out.Blocks = blocksToPB(blocks)
	return connect.NewResponse(out), nil
}

// GetStats serves the statistics.
func (h *handler) GetStats(ctx context.Context, _ *connect.Request[pb.GetStatsRequest]) (*connect.Response[pb.GetStatsResponse], error) {
	fsm, err := h.svc.Read(ctx)
	if err != nil {
		return nil, h.toConnect(ctx, "get-stats", err)
	}
	s := fsm.Stats()
	return connect.NewResponse(statsToPB(&s)), nil
}
