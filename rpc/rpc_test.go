package rpc

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/index"
	"github.com/compactkit/compactkit/internal/codec"
	"github.com/compactkit/compactkit/internal/ident"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/raftfsm"
	pb "github.com/compactkit/compactkit/rpc/gen/compactkit/v1"
	"github.com/compactkit/compactkit/rpc/gen/compactkit/v1/compactkitv1connect"
	"github.com/compactkit/compactkit/rpc/internal/rpctest"
)

func TestMaxMessageBytesIsTheDecodeLimit(t *testing.T) {
	require.Equal(t, codec.DefaultLimits.MaxBytes, MaxMessageBytes)
}

// A worker's life through the protocol: blocks added, a job assigned,
// renewed and completed, the output in the index.
func TestPollAddBlocksComplete(t *testing.T) {
	n := newNode(t, nil)
	c := client(t, []string{n.srv.URL})
	ctx := context.Background()
	addTwo(t, c, "seg-1", "seg-2")

	resp, err := c.Poll(ctx, &ck.PollRequest{WorkerID: "w-1", Seq: 1, FreeSlots: 1})
	require.NoError(t, err)
	require.Len(t, resp.Jobs, 1)
	job := resp.Jobs[0]
	require.Equal(t, ck.OutcomeAssigned, job.Outcome)
	require.Equal(t, []string{"seg-1", "seg-2"}, job.Plan.Sources)
	require.Positive(t, job.Lease)

	resp, err = c.Poll(ctx, &ck.PollRequest{WorkerID: "w-1", Seq: 2, Updates: []ck.StatusUpdate{{Job: job.Job, Token: job.Token, Status: ck.ReportInProgress}}})
	require.NoError(t, err)
	require.Equal(t, ck.OutcomeRenewed, resp.Jobs[0].Outcome)

	outs, ok := leadertest.Outputs(n.FSM, &job)
	require.True(t, ok)
	resp, err = c.Poll(ctx, &ck.PollRequest{WorkerID: "w-1", Seq: 3, Updates: []ck.StatusUpdate{{Job: job.Job, Token: job.Token, Status: ck.ReportSuccess, Outputs: outs}}})
	require.NoError(t, err)
	require.Equal(t, ck.OutcomeCompleted, resp.Jobs[0].Outcome)

	blocks, next, err := c.ListBlocks(ctx, "", 10)
	require.NoError(t, err)
	require.Empty(t, next)
	require.Len(t, blocks, 1)
	require.Equal(t, outs[0].ID, blocks[0].ID)

	st, err := c.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, st.GetBlocks())
	require.EqualValues(t, 1, st.GetWorkers())
	require.Equal(t, uint64(n.Entries()), st.GetLastApplied())

	require.NoError(t, c.SetWatermark(ctx, 5e9))
	view := n.FSM.Index()
	wm, set := view.Watermark()
	view.Close()
	require.True(t, set)
	require.EqualValues(t, 5e9, wm)
}

// A block added twice comes back a duplicate, wrapping index.ErrDuplicate.
func TestAddBlocksDuplicate(t *testing.T) {
	n := newNode(t, nil)
	c := client(t, []string{n.srv.URL})
	addTwo(t, c, "seg-1", "seg-2")
	res, err := c.AddBlocks(context.Background(), []ck.BlockMeta{leadertest.Block("seg-1", "acme", 0, 0), leadertest.Block("seg-3", "acme", 0, 2e9)})
	require.NoError(t, err)
	require.ErrorIs(t, res[0].Err, index.ErrDuplicate)
	require.NoError(t, res[1].Err)
	require.True(t, res[1].Queued)
}

// A page at a time, in ID order, to the end.
func TestListBlocksPages(t *testing.T) {
	n := newNode(t, nil)
	c := client(t, []string{n.srv.URL})
	addTwo(t, c, "a", "b")
	addTwo(t, c, "c", "d")
	var ids []string
	after := ""
	for {
		page, next, err := c.ListBlocks(context.Background(), after, 3)
		require.NoError(t, err)
		for _, b := range page {
			ids = append(ids, b.ID)
		}
		if next == "" {
			break
		}
		after = next
	}
	require.Equal(t, []string{"a", "b", "c", "d"}, ids)
	_, _, err := c.ListBlocks(context.Background(), "", 0)
	require.ErrorIs(t, err, ck.ErrRejected)
}

// A retried poll (same sequence number) is answered from the poll log and
// appends nothing.
func TestPollRetrySameSeq(t *testing.T) {
	n := newNode(t, nil)
	c := client(t, []string{n.srv.URL})
	addTwo(t, c, "seg-1", "seg-2")
	req := &ck.PollRequest{WorkerID: "w-1", Seq: 1, FreeSlots: 1}
	first, err := c.Poll(context.Background(), req)
	require.NoError(t, err)
	entries := n.Entries()
	again, err := c.Poll(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, first, again)
	require.Equal(t, entries, n.Entries())
}

// A follower names the leader's RPC URL; the client follows it.
func TestNotLeaderRedirect(t *testing.T) {
	lead := newNode(t, nil)
	urls := func(id, addr string) string {
		if id == "n1" && addr == "10.0.0.1:7000" { // the Raft address, not the RPC endpoint
			return lead.srv.URL
		}
		return ""
	}
	follower := rpctest.NewFollower(t, lead.FSM, "n1", "10.0.0.1:7000")
	fsrv := serve(t, NewHandler(follower, WithLeaderURL(urls)))

	c := client(t, []string{fsrv.URL})
	addTwo(t, c, "seg-1", "seg-2")
	require.Equal(t, lead.srv.URL, sendsTo(c))
	require.EqualValues(t, 1, c.Redirects())
	resp, err := c.Poll(context.Background(), &ck.PollRequest{WorkerID: "w-1", Seq: 1, FreeSlots: 1})
	require.NoError(t, err)
	require.Len(t, resp.Jobs, 1)

	// The answer itself: UNAVAILABLE with the NotLeader detail.
	stub := compactkitv1connect.NewLeaderServiceClient(http.DefaultClient, fsrv.URL)
	_, err = stub.GetStats(context.Background(), connect.NewRequest(&pb.GetStatsRequest{}))
	require.Equal(t, connect.CodeUnavailable, connect.CodeOf(err))
	nl := notLeaderDetail(asConnect(err))
	require.NotNil(t, nl)
	require.Equal(t, "n1", nl.GetLeaderId())
	require.Equal(t, lead.srv.URL, nl.GetLeaderUrl())
}

// Without a URL for the leader, the client tries its other peers.
func TestNotLeaderWithoutURLTriesPeers(t *testing.T) {
	lead := newNode(t, nil)
	follower := rpctest.NewFollower(t, lead.FSM, "n1", "10.0.0.1:7000")
	fsrv := serve(t, NewHandler(follower))
	c := client(t, []string{fsrv.URL, lead.srv.URL})
	addTwo(t, c, "seg-1", "seg-2")
	require.Equal(t, lead.srv.URL, sendsTo(c))
	require.Zero(t, c.Redirects())

	// With only the follower, the call gives up within its budget.
	only := client(t, []string{fsrv.URL})
	_, err := only.Poll(context.Background(), &ck.PollRequest{WorkerID: "w-1", Seq: 1})
	require.Equal(t, connect.CodeUnavailable, connect.CodeOf(err))
	require.NotErrorIs(t, err, ck.ErrRejected)
}

// Refusals come back as ck.ErrRejected with their code, and change
// nothing.
func TestRefusals(t *testing.T) {
	n := newNode(t, nil)
	c := client(t, []string{n.srv.URL})
	ctx := context.Background()
	addTwo(t, c, "seg-1", "seg-2")
	entries := n.Entries()

	for name, req := range map[string]*ck.PollRequest{
		"no worker ID":   {Seq: 1},
		"sequence 0":     {WorkerID: "w-1"},
		"negative slots": {WorkerID: "w-1", Seq: 1, FreeSlots: -1},
		"token 0":        {WorkerID: "w-1", Seq: 1, Updates: []ck.StatusUpdate{{Job: "j", Status: ck.ReportInProgress}}},
		"bad job name":   {WorkerID: "w-1", Seq: 1, Updates: []ck.StatusUpdate{{Job: "a/b", Token: 3, Status: ck.ReportInProgress}}},
	} {
		_, err := c.Poll(ctx, req)
		require.ErrorIs(t, err, ck.ErrRejected, name)
		require.Equal(t, connect.CodeInvalidArgument, connect.CodeOf(err), name)
		require.Equal(t, ReasonInvalid, refusalReason(asConnect(err)), name)
	}
	_, err := c.AddBlocks(ctx, []ck.BlockMeta{{ID: "../escape", Tenant: "acme"}})
	require.ErrorIs(t, err, ck.ErrRejected)
	require.Equal(t, connect.CodeInvalidArgument, connect.CodeOf(err))
	_, err = c.AddBlocks(ctx, nil)
	require.ErrorIs(t, err, ck.ErrRejected)
	require.Equal(t, entries, n.Entries(), "nothing appended")

	// A poll older than the worker's latest: the leader refuses it as
	// the worker's fault (leader.Classify: ck.ErrRejected).
	_, err = c.Poll(ctx, &ck.PollRequest{WorkerID: "w-1", Seq: 5})
	require.NoError(t, err)
	entries = n.Entries()
	_, err = c.Poll(ctx, &ck.PollRequest{WorkerID: "w-1", Seq: 4})
	require.ErrorIs(t, err, ck.ErrRejected)
	require.Equal(t, connect.CodeInvalidArgument, connect.CodeOf(err))
	require.Equal(t, entries, n.Entries())
}

// Signed tokens pass through both ways; a wrong signature or a token
// borrowed by another worker is answered "no lease" and takes nothing.
func TestSignedTokens(t *testing.T) {
	key := leader.TokenKey{ID: "k1", Secret: bytes.Repeat([]byte{7}, 32)}
	n := newNode(t, []leader.Option{leader.WithTokenKeys(key)})
	c := client(t, []string{n.srv.URL})
	ctx := context.Background()
	addTwo(t, c, "seg-1", "seg-2")

	resp, err := c.Poll(ctx, &ck.PollRequest{WorkerID: "w-1", Seq: 1, FreeSlots: 1})
	require.NoError(t, err)
	job := resp.Jobs[0]
	require.NotEmpty(t, job.Signature)

	report := func(workerID string, seq uint64, sig []byte) ck.Outcome {
		t.Helper()
		r, err := c.Poll(ctx, &ck.PollRequest{WorkerID: workerID, Seq: seq, Updates: []ck.StatusUpdate{{Job: job.Job, Token: job.Token, Status: ck.ReportInProgress, Signature: sig}}})
		require.NoError(t, err)
		require.Len(t, r.Jobs, 1)
		return r.Jobs[0].Outcome
	}
	wrong := bytes.Clone(job.Signature)
	wrong[len(wrong)-1] ^= 1
	require.Equal(t, ck.OutcomeNoLease, report("w-1", 2, wrong), "wrong signature")
	require.Equal(t, ck.OutcomeNoLease, report("w-2", 1, job.Signature), "borrowed token")
	require.Equal(t, ck.OutcomeRenewed, report("w-1", 3, job.Signature), "the holder still holds it")
	js, _, ok := n.FSM.Job(job.Job)
	require.True(t, ok)
	require.Equal(t, ck.StatusInProgress, js.Status)
	require.Equal(t, ck.PublicWorkerName("w-1"), js.Worker)
}

// rawPost sends body to method over plain HTTP/1.1 with the given
// headers, as curl would, and returns the status and body.
func rawPost(t *testing.T, url, method, contentType string, body []byte, hdr map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/"+compactkitv1connect.LeaderServiceName+"/"+method, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", contentType)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(data)
}

// A request with a browser's headers is refused unless its origin is
// allowed; a worker's (no such headers) is served whatever name it used.
func TestBrowserHeadersRefused(t *testing.T) {
	n := newNode(t, nil, WithAllowedOrigins("https://ops.example"))
	blocks := `{"blocks":[{"id":"seg-1","tenant":"acme","minTime":"0","maxTime":"1000","datasets":[{"name":"ds","minTime":"0","maxTime":"1000"}]}]}`
	for _, hdr := range []map[string]string{
		{"Origin": "http://evil.example:8080"},
		{"Sec-Fetch-Site": "same-origin"},
		{"Origin": "http://evil.example:8080", "Sec-Fetch-Site": "same-origin"},
	} {
		status, body := rawPost(t, n.srv.URL, "AddBlocks", "application/json", []byte(blocks), hdr)
		require.Equal(t, http.StatusForbidden, status, body)
		require.Contains(t, body, "permission_denied")
	}
	f, err := n.Svc.Read(context.Background())
	require.NoError(t, err)
	require.Zero(t, f.Stats().Index.Blocks, "nothing added")

	status, body := rawPost(t, n.srv.URL, "AddBlocks", "application/json", []byte(blocks), map[string]string{"Origin": "https://ops.example"})
	require.Equal(t, http.StatusOK, status, body)
	// A Connect-JSON call as curl makes it: no browser headers, any Host.
	status, body = rawPost(t, n.srv.URL, "Poll", "application/json", []byte(`{"workerId":"w-1","seq":"1","freeSlots":1}`), map[string]string{"Host": "leader.internal"})
	require.Equal(t, http.StatusOK, status, body)
}

// Hostile input is answered with the right code and changes nothing.
func TestHostileInput(t *testing.T) {
	n := newNode(t, nil)
	c := client(t, []string{n.srv.URL})
	addTwo(t, c, "seg-1", "seg-2")
	entries := n.Entries()

	status, body := rawPost(t, n.srv.URL, "Poll", "application/proto", []byte{0xff, 0xff, 0xff}, nil)
	require.Equal(t, http.StatusBadRequest, status, body)
	require.Contains(t, body, "invalid_argument")
	status, body = rawPost(t, n.srv.URL, "Poll", "application/json", []byte(`{"workerId":`), nil)
	require.Equal(t, http.StatusBadRequest, status, body)
	status, body = rawPost(t, n.srv.URL, "AddBlocks", "application/proto", make([]byte, MaxMessageBytes+1), nil)
	require.Equal(t, http.StatusTooManyRequests, status, body) // Connect's resource_exhausted
	require.Contains(t, body, "resource_exhausted")

	// Unknown enum values, including one a uint8 would truncate into a
	// known status.
	stub := compactkitv1connect.NewLeaderServiceClient(http.DefaultClient, n.srv.URL)
	for _, s := range []pb.ReportStatus{0, 5, 257, -1} {
		_, err := stub.Poll(context.Background(), connect.NewRequest(&pb.PollRequest{WorkerId: "w-1", Seq: 1,
			Updates: []*pb.StatusUpdate{{Job: "j", Token: 3, Status: s}}}))
		require.Equal(t, connect.CodeInvalidArgument, connect.CodeOf(err), "status %d", s)
	}
	_, err := stub.AddBlocks(context.Background(), connect.NewRequest(&pb.AddBlocksRequest{Blocks: []*pb.BlockMeta{{Id: "x", Tenant: "t", MinTime: 2, MaxTime: 1}}}))
	require.Equal(t, connect.CodeInvalidArgument, connect.CodeOf(err))
	require.Equal(t, entries, n.Entries(), "nothing appended")
}

// The same handler speaks gRPC (the client's default), gRPC-Web and
// Connect.
func TestProtocols(t *testing.T) {
	n := newNode(t, nil)
	for name, opts := range map[string][]connect.ClientOption{
		"connect":  nil,
		"grpc-web": {connect.WithGRPCWeb()},
		"grpc":     {connect.WithGRPC()},
	} {
		hc := client(t, []string{n.srv.URL}).hc // HTTP/2 without TLS
		stub := compactkitv1connect.NewLeaderServiceClient(hc, n.srv.URL, opts...)
		resp, err := stub.GetStats(context.Background(), connect.NewRequest(&pb.GetStatsRequest{}))
		require.NoError(t, err, name)
		require.NotZero(t, resp.Msg.GetLastApplied(), name)
	}
}

// Interceptors of the host see every call: here, an authentication
// check that refuses calls without a key.
func TestInterceptors(t *testing.T) {
	auth := connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			if req.Header().Get("Authorization") != "Bearer s3cret" {
				return nil, connect.NewError(connect.CodeUnauthenticated, errors.New("no key"))
			}
			return next(ctx, req)
		}
	})
	n := newNode(t, nil, WithHandlerOptions(connect.WithInterceptors(auth)))
	_, err := client(t, []string{n.srv.URL}).Stats(context.Background())
	require.Equal(t, connect.CodeUnauthenticated, connect.CodeOf(err))
	key := connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			req.Header().Set("Authorization", "Bearer s3cret")
			return next(ctx, req)
		}
	})
	_, err = client(t, []string{n.srv.URL}, WithClientOptions(connect.WithInterceptors(key))).Stats(context.Background())
	require.NoError(t, err)
}

// Every class has its code; only the refusals carry a reason.
func TestCodeTable(t *testing.T) {
	h := &handler{o: handlerOptions{log: slog.New(slog.DiscardHandler)}}
	for _, c := range []struct {
		err    error
		code   connect.Code
		reason string
	}{
		{ident.ErrInvalidID, connect.CodeInvalidArgument, ReasonInvalid},
		{ck.ErrRejected, connect.CodeInvalidArgument, ReasonInvalid},
		{raftfsm.ErrStaleRequest, connect.CodeFailedPrecondition, ReasonConflict},
		{raftfsm.ErrOperator, connect.CodeFailedPrecondition, ReasonConflict},
		{context.DeadlineExceeded, connect.CodeUnavailable, ""},
		{leader.ErrOutcomeUnknown, connect.CodeUnavailable, ""},
		{&leader.NotLeaderError{Cause: leader.ErrClosed}, connect.CodeUnavailable, ""},
		{errors.New("disk on fire"), connect.CodeInternal, ""},
	} {
		ce := asConnect(h.toConnect(context.Background(), "test", c.err))
		require.Equal(t, c.code, ce.Code(), "%v", c.err)
		require.Equal(t, c.reason, refusalReason(ce), "%v", c.err)
		require.Nil(t, notLeaderDetail(ce))
	}
	require.True(t, strings.HasPrefix(h.toConnect(context.Background(), "test", errors.New("x")).Error(), "internal"))
}

// conflictHandler refuses every poll as a conflict.
type conflictHandler struct {
	compactkitv1connect.UnimplementedLeaderServiceHandler
}

func (conflictHandler) Poll(context.Context, *connect.Request[pb.PollRequest]) (*connect.Response[pb.PollResponse], error) {
	return nil, refusal(connect.CodeFailedPrecondition, ReasonConflict, errors.New("state says no"))
}

// The client turns a refusal with its ErrorInfo into ck.ErrRejected,
// and does not retry it; a bare FAILED_PRECONDITION (from a proxy, say)
// is not a refusal of the leader's.
func TestClientRefusal(t *testing.T) {
	calls := 0
	count := connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			calls++
			return next(ctx, req)
		}
	})
	_, h := compactkitv1connect.NewLeaderServiceHandler(conflictHandler{}, connect.WithInterceptors(count))
	srv := serve(t, h)
	_, err := client(t, []string{srv.URL}).Poll(context.Background(), &ck.PollRequest{WorkerID: "w", Seq: 1})
	require.ErrorIs(t, err, ck.ErrRejected)
	require.Equal(t, connect.CodeFailedPrecondition, connect.CodeOf(err))
	require.Equal(t, 1, calls)

	_, h = compactkitv1connect.NewLeaderServiceHandler(compactkitv1connect.UnimplementedLeaderServiceHandler{})
	srv = serve(t, h)
	_, err = client(t, []string{srv.URL}).Poll(context.Background(), &ck.PollRequest{WorkerID: "w", Seq: 1})
	require.Equal(t, connect.CodeUnimplemented, connect.CodeOf(err))
	require.NotErrorIs(t, err, ck.ErrRejected)
}

// An answer lost after the poll was applied: the client sends the same
// request (same sequence number) again, and the leader answers it from
// the poll log without a second entry.
func TestClientRetriesLostAnswer(t *testing.T) {
	lost := 0
	loseFirst := connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			resp, err := next(ctx, req)
			if p, ok := req.Any().(*pb.PollRequest); ok && err == nil && lost == 0 {
				lost++
				require.EqualValues(t, 1, p.GetSeq())
				return nil, connect.NewError(connect.CodeUnavailable, errors.New("connection reset"))
			}
			return resp, err
		}
	})
	n := newNode(t, nil, WithHandlerOptions(connect.WithInterceptors(loseFirst)))
	c := client(t, []string{n.srv.URL})
	addTwo(t, c, "seg-1", "seg-2")
	entries := n.Entries()
	resp, err := c.Poll(context.Background(), &ck.PollRequest{WorkerID: "w-1", Seq: 1, FreeSlots: 1})
	require.NoError(t, err)
	require.Equal(t, 1, lost)
	require.Len(t, resp.Jobs, 1)
	require.Equal(t, ck.OutcomeAssigned, resp.Jobs[0].Outcome)
	require.Equal(t, entries+1, n.Entries(), "one entry for the poll")
}

// The client asks for uncompressed answers, so that the leader spends no
// CPU compressing them; one that asks for gzip gets it.
func TestClientAnswersUncompressed(t *testing.T) {
	l := rpctest.NewLeader(t)
	h := NewHandler(l.Svc)
	var mu sync.Mutex
	var encodings []string
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		mu.Lock()
		encodings = append(encodings, w.Header().Get("Grpc-Encoding"))
		mu.Unlock()
	}))
	ctx := context.Background()
	addTwo(t, client(t, []string{srv.URL}), "seg-1", "seg-2")
	gz := client(t, []string{srv.URL}, WithClientOptions(connect.WithAcceptCompression("gzip",
		func() connect.Decompressor { return &gzip.Reader{} }, func() connect.Compressor { return gzip.NewWriter(nil) })))
	_, err := gz.Poll(ctx, &ck.PollRequest{WorkerID: "w-1", Seq: 1, FreeSlots: 1})
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"", "gzip"}, encodings)
}
