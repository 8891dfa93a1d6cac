package e2e

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/rpc"
	pb "github.com/compactkit/compactkit/rpc/gen/compactkit/v1"
	"github.com/compactkit/compactkit/rpc/internal/rpctest"
)

const service = "/compactkit.v1.LeaderService/"

// dial returns a grpc-go connection to the server at base ("http://…"),
// reading messages up to the protocol's limit.
func dial(t *testing.T, base string) *grpc.ClientConn {
	t.Helper()
	u, err := url.Parse(base)
	require.NoError(t, err)
	conn, err := grpc.NewClient(u.Host,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(rpc.MaxMessageBytes), grpc.MaxCallSendMsgSize(rpc.MaxMessageBytes)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func invoke(t *testing.T, conn *grpc.ClientConn, method string, req, resp proto.Message) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return conn.Invoke(ctx, service+method, req, resp)
}

func blocks(ids ...string) []*pb.BlockMeta {
	var out []*pb.BlockMeta
	for i, id := range ids {
		b := leadertest.Block(id, "acme", 0, int64(i)*1e9)
		out = append(out, &pb.BlockMeta{Id: b.ID, Tenant: b.Tenant, MinTime: b.MinTime, MaxTime: b.MaxTime, Size: b.Size,
			Datasets: []*pb.DatasetMeta{{Name: "ds", Size: b.Size, Records: 10, MinTime: b.MinTime, MaxTime: b.MaxTime}}})
	}
	return out
}

// A worker on grpc-go: blocks added, a job assigned and completed.
func TestGRPCWorker(t *testing.T) {
	l := rpctest.NewLeader(t)
	srv := rpctest.Serve(t, rpc.NewServer(rpc.NewHandler(l.Svc)))
	conn := dial(t, srv.URL)

	var added pb.AddBlocksResponse
	require.NoError(t, invoke(t, conn, "AddBlocks", &pb.AddBlocksRequest{Blocks: blocks("seg-1", "seg-2")}, &added))
	require.Len(t, added.GetResults(), 2)
	require.Equal(t, pb.BlockDisposition_BLOCK_DISPOSITION_ADDED, added.GetResults()[0].GetDisposition())

	var resp pb.PollResponse
	require.NoError(t, invoke(t, conn, "Poll", &pb.PollRequest{WorkerId: "grpc-w-1", Seq: 1, FreeSlots: 1}, &resp))
	require.Len(t, resp.GetJobs(), 1)
	job := resp.GetJobs()[0]
	require.Equal(t, pb.Outcome_OUTCOME_ASSIGNED, job.GetOutcome())
	require.Equal(t, []string{"seg-1", "seg-2"}, job.GetPlan().GetSources())

	// The output, named as docs/worker-protocol.md says.
	out := blocks(ck.OutputID(job.GetJob(), fencing.Token(job.GetToken()), 0))[0]
	out.Level, out.MinTime, out.MaxTime = 1, 0, 2e9
	out.Datasets[0].MinTime, out.Datasets[0].MaxTime = 0, 2e9
	var done pb.PollResponse
	require.NoError(t, invoke(t, conn, "Poll", &pb.PollRequest{WorkerId: "grpc-w-1", Seq: 2, Updates: []*pb.StatusUpdate{{
		Job: job.GetJob(), Token: job.GetToken(), Status: pb.ReportStatus_REPORT_STATUS_SUCCESS, Outputs: []*pb.BlockMeta{out},
	}}}, &done))
	require.Equal(t, pb.Outcome_OUTCOME_COMPLETED, done.GetJobs()[0].GetOutcome())

	var page pb.ListBlocksResponse
	require.NoError(t, invoke(t, conn, "ListBlocks", &pb.ListBlocksRequest{Limit: 10}, &page))
	require.Len(t, page.GetBlocks(), 1)
	require.Equal(t, out.GetId(), page.GetBlocks()[0].GetId())
}

// grpc-go reads the refusal's ErrorInfo and the NotLeader detail.
func TestGRPCErrorDetails(t *testing.T) {
	l := rpctest.NewLeader(t)
	lead := rpctest.Serve(t, rpc.NewServer(rpc.NewHandler(l.Svc)))
	entries := l.Entries()

	conn := dial(t, lead.URL)
	err := invoke(t, conn, "Poll", &pb.PollRequest{WorkerId: "grpc-w-1", Seq: 1, Updates: []*pb.StatusUpdate{{Job: "j", Token: 1, Status: 9}}}, &pb.PollResponse{})
	st := status.Convert(err)
	require.Equal(t, codes.InvalidArgument, st.Code())
	require.Len(t, st.Details(), 1)
	info, ok := st.Details()[0].(*errdetails.ErrorInfo)
	require.True(t, ok, "%T", st.Details()[0])
	require.Equal(t, rpc.ErrorDomain, info.GetDomain())
	require.Equal(t, rpc.ReasonInvalid, info.GetReason())
	require.Equal(t, entries, l.Entries(), "nothing appended")

	follower := rpctest.NewFollower(t, l.FSM, "n1", "10.0.0.1:7000")
	fsrv := rpctest.Serve(t, rpc.NewServer(rpc.NewHandler(follower, rpc.WithLeaderURL(func(string, string) string { return lead.URL }))))
	err = invoke(t, dial(t, fsrv.URL), "Poll", &pb.PollRequest{WorkerId: "grpc-w-1", Seq: 1}, &pb.PollResponse{})
	st = status.Convert(err)
	require.Equal(t, codes.Unavailable, st.Code())
	require.Len(t, st.Details(), 1)
	nl, ok := st.Details()[0].(*pb.NotLeader)
	require.True(t, ok, "%T", st.Details()[0])
	require.Equal(t, "n1", nl.GetLeaderId())
	require.Equal(t, lead.URL, nl.GetLeaderUrl())
}

// A Connect-JSON poll as curl would send it: one POST over HTTP/1.1.
func TestConnectJSONWithNetHTTP(t *testing.T) {
	l := rpctest.NewLeader(t)
	srv := rpctest.Serve(t, rpc.NewServer(rpc.NewHandler(l.Svc)))
	post := func(method, body string) (int, []byte) {
		resp, err := http.Post(srv.URL+service+method, "application/json", bytes.NewBufferString(body))
		require.NoError(t, err)
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, data
	}
	code, data := post("AddBlocks", `{"blocks":[
		{"id":"seg-1","tenant":"acme","minTime":"0","maxTime":"1000000000","size":"100","datasets":[{"name":"ds","minTime":"0","maxTime":"1000000000"}]},
		{"id":"seg-2","tenant":"acme","minTime":"1000000000","maxTime":"2000000000","size":"100","datasets":[{"name":"ds","minTime":"1000000000","maxTime":"2000000000"}]}]}`)
	require.Equal(t, http.StatusOK, code, string(data))
	code, data = post("Poll", `{"workerId":"curl-w-1","seq":"1","freeSlots":1}`)
	require.Equal(t, http.StatusOK, code, string(data))
	var resp pb.PollResponse
	require.NoError(t, protojson.Unmarshal(data, &resp))
	require.Len(t, resp.GetJobs(), 1)
	require.Equal(t, pb.Outcome_OUTCOME_ASSIGNED, resp.GetJobs()[0].GetOutcome())
	require.Contains(t, string(data), `"outcome":"OUTCOME_ASSIGNED"`)

	code, data = post("Poll", `{"workerId":"curl-w-1","seq":"0"}`)
	require.Equal(t, http.StatusBadRequest, code, string(data))
	require.Contains(t, string(data), `"code":"invalid_argument"`)
}

// A message over the limit is refused by the server with
// RESOURCE_EXHAUSTED, and changes nothing.
func TestGRPCOversized(t *testing.T) {
	l := rpctest.NewLeader(t)
	srv := rpctest.Serve(t, rpc.NewServer(rpc.NewHandler(l.Svc)))
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	conn, err := grpc.NewClient(u.Host, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(2*rpc.MaxMessageBytes)))
	require.NoError(t, err)
	defer conn.Close()
	entries := l.Entries()
	big := &pb.PollRequest{WorkerId: "grpc-w-1", Seq: 1, Updates: []*pb.StatusUpdate{{Job: "j", Token: 1,
		Status: pb.ReportStatus_REPORT_STATUS_FAILURE, Reason: string(bytes.Repeat([]byte{'x'}, rpc.MaxMessageBytes))}}}
	err = invoke(t, conn, "Poll", big, &pb.PollResponse{})
	require.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
	require.Equal(t, entries, l.Entries())
}
