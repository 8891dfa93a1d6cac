package rpc

import (
	"bytes"
	"encoding"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/raftfsm"
	pb "github.com/compactkit/compactkit/rpc/gen/compactkit/v1"
)

var update = flag.Bool("update", false, "rewrite the golden messages in testdata/golden")

// samplePoll is a request with every field set.
func samplePoll() *ck.PollRequest {
	out := ck.BlockMeta{
		ID: "l0-acme-1/42/0", Tenant: "acme", Shard: 3, Level: 1, MinTime: 1e9, MaxTime: 3e9, Size: 4096,
		Datasets: []ck.DatasetMeta{{Name: "api", Size: 4000, Records: 12, MinTime: 1e9, MaxTime: 3e9}},
	}
	return &ck.PollRequest{WorkerID: "compactor-7-k3j9x2", Seq: 9, FreeSlots: 2, Updates: []ck.StatusUpdate{
		{Job: "l0-acme-1", Token: 42, Status: ck.ReportSuccess, Outputs: []ck.BlockMeta{out}, Signature: []byte{2, 'k', '1', 0xaa}},
		{Job: "l0-acme-2", Token: 43, Status: ck.ReportFailure, Reason: "merge: source unreadable"},
		{Job: "l0-acme-3", Token: 44, Status: ck.ReportReleased},
	}}
}

// sampleResponse is a response with every field set.
func sampleResponse() *ck.PollResponse {
	return &ck.PollResponse{Jobs: []ck.JobReply{
		{Job: "l0-acme-1", Outcome: ck.OutcomeCompleted, Token: 42},
		{Job: "l0-acme-2", Outcome: ck.OutcomeAccepted},
		{Job: "l0-acme-4", Outcome: ck.OutcomeAssigned, Token: 57, Deadline: 2e18, Lease: 15 * time.Second, Signature: []byte{2, 'k', '1', 0xbb},
			Plan: &ck.JobPlan{Name: "l0-acme-4", Tenant: "acme", Shard: ck.AnyShard, Level: 0, Sources: []string{"seg-1", "seg-2"},
				Tombstones: []ck.Tombstone{{Kind: ck.TombstoneBlock, Target: "seg-0"}, {Kind: ck.TombstonePrefix, Target: "blocks/l0-acme-3/40/"}}}},
		{Job: "l0-acme-5", Outcome: ck.OutcomeNoLease},
	}}
}

// golden compares data with the named file, or rewrites it with -update.
func golden(t *testing.T, name string, data []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, data, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, want, data, "%s changed: the wire format of a released message must not", name)
}

var deterministic = proto.MarshalOptions{Deterministic: true}

// The wire bytes of the sample messages are fixed, and decode back to the
// same Go values.
func TestGoldenMessages(t *testing.T) {
	req := samplePoll()
	require.NoError(t, req.Validate())
	data, err := deterministic.Marshal(pollRequestToPB(req))
	require.NoError(t, err)
	golden(t, "poll_request.binpb", data)
	var m pb.PollRequest
	require.NoError(t, proto.Unmarshal(data, &m))
	require.Equal(t, req, pollRequestToGo(&m))

	resp := sampleResponse()
	require.NoError(t, resp.Validate())
	data, err = deterministic.Marshal(pollResponseToPB(resp))
	require.NoError(t, err)
	golden(t, "poll_response.binpb", data)
	var r pb.PollResponse
	require.NoError(t, proto.Unmarshal(data, &r))
	require.Equal(t, resp, pollResponseToGo(&r))

	blocks := &pb.AddBlocksRequest{Blocks: blocksToPB(req.Updates[0].Outputs)}
	data, err = deterministic.Marshal(blocks)
	require.NoError(t, err)
	golden(t, "add_blocks_request.binpb", data)
}

// The statistics keep the figures a worker autoscaler reads.
func TestStatsToPB(t *testing.T) {
	fsm, err := raftfsm.New(raftfsm.DefaultConfig())
	require.NoError(t, err)
	s := fsm.Stats()
	m := statsToPB(&s)
	require.Len(t, m.GetLevels(), len(s.Planner.Levels))
	require.Empty(t, m.GetFailed())
}

// roundTrip checks that a valid Go value survives Go → protobuf (bytes)
// → Go, re-encoding to the same bytes in the vocabulary's own encoding.
func roundTrip[G encoding.BinaryMarshaler, M proto.Message](t *testing.T, v G, toPB func(G) M, decoded M, toGo func(M) G) {
	t.Helper()
	want, err := v.MarshalBinary()
	require.NoError(t, err)
	data, err := proto.Marshal(toPB(v))
	require.NoError(t, err)
	require.NoError(t, proto.Unmarshal(data, decoded))
	got, err := toGo(decoded).MarshalBinary()
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, got), "re-encoded differently:\n%x\n%x", want, got)
}

func roundTripPoll(t *testing.T, req *ck.PollRequest) {
	t.Helper()
	roundTrip(t, req, pollRequestToPB, &pb.PollRequest{}, pollRequestToGo)
}

func roundTripResponse(t *testing.T, resp *ck.PollResponse) {
	t.Helper()
	roundTrip(t, resp, pollResponseToPB, &pb.PollResponse{}, pollResponseToGo)
}

// FuzzPollRequestRoundTrip: every request the vocabulary decodes as
// valid goes through the protocol and back unchanged.
func FuzzPollRequestRoundTrip(f *testing.F) {
	fuzzDecoded(f, []*ck.PollRequest{samplePoll(), {WorkerID: "w", Seq: 1}}, roundTripPoll)
}

// FuzzPollResponseRoundTrip is FuzzPollRequestRoundTrip for responses.
func FuzzPollResponseRoundTrip(f *testing.F) {
	fuzzDecoded(f, []*ck.PollResponse{sampleResponse(), {}}, roundTripResponse)
}

// fuzzDecoded seeds f with the vocabulary's encodings of seeds and calls
// check with every value the vocabulary decodes from a fuzzed input.
func fuzzDecoded[T any, P interface {
	*T
	encoding.BinaryMarshaler
	encoding.BinaryUnmarshaler
}](f *testing.F, seeds []P, check func(*testing.T, P)) {
	for _, v := range seeds {
		data, err := v.MarshalBinary()
		require.NoError(f, err)
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v := P(new(T))
		if v.UnmarshalBinary(data) != nil {
			return
		}
		check(t, v)
	})
}

// FuzzDecodeMessages: any bytes a caller sends decode without a panic,
// and what converts to a valid Go value converts back to it.
func FuzzDecodeMessages(f *testing.F) {
	for _, name := range []string{"poll_request.binpb", "poll_response.binpb", "add_blocks_request.binpb"} {
		data, err := os.ReadFile(filepath.Join("testdata", "golden", name))
		require.NoError(f, err)
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var req pb.PollRequest
		if proto.Unmarshal(data, &req) == nil {
			if g := pollRequestToGo(&req); g.Validate() == nil {
				roundTripPoll(t, g)
			}
		}
		var resp pb.PollResponse
		if proto.Unmarshal(data, &resp) == nil {
			if g := pollResponseToGo(&resp); g.Validate() == nil {
				roundTripResponse(t, g)
			}
		}
		var add pb.AddBlocksRequest
		if proto.Unmarshal(data, &add) == nil {
			bs := blocksToGo(add.GetBlocks())
			require.Equal(t, bs, blocksToGo(blocksToPB(bs)))
		}
	})
}
