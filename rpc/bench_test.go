package rpc

import (
	"context"
	"fmt"
	"testing"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/rpc/internal/rpctest"
	"github.com/compactkit/compactkit/worker"
)

// BenchmarkPoll measures one poll — a worker renewing the 16 jobs it
// holds — through Service.Poll in-process and through the protocol (the
// client, gRPC over plain-text HTTP/2 on loopback, the handler), on the
// same kind of service and log. The difference is the protocol's cost
// per poll.
func BenchmarkPoll(b *testing.B) {
	const jobs = 16
	for _, via := range []string{"in-process", "protocol"} {
		b.Run(via, func(b *testing.B) {
			l := rpctest.NewLeader(b)
			ctx := context.Background()
			var bs []ck.BlockMeta
			for i := range 2 * jobs {
				bs = append(bs, leadertest.Block(fmt.Sprintf("seg-%03d", i), "acme", 0, int64(i)*1e9))
			}
			if _, err := l.Svc.AddBlocks(ctx, bs); err != nil {
				b.Fatal(err)
			}
			var c worker.Client = l.Svc
			if via == "protocol" {
				srv := rpctest.Serve(b, NewServer(NewHandler(l.Svc)))
				cl, err := NewClient([]string{srv.URL})
				if err != nil {
					b.Fatal(err)
				}
				c = cl
			}
			resp, err := c.Poll(ctx, &ck.PollRequest{WorkerID: "bench-w-1", Seq: 1, FreeSlots: jobs})
			if err != nil || len(resp.Jobs) != jobs {
				b.Fatalf("assigned %d jobs, err %v", len(resp.Jobs), err)
			}
			req := &ck.PollRequest{WorkerID: "bench-w-1"}
			for _, j := range resp.Jobs {
				req.Updates = append(req.Updates, ck.StatusUpdate{Job: j.Job, Token: j.Token, Status: ck.ReportInProgress, Signature: j.Signature})
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				req.Seq = uint64(i) + 2
				resp, err := c.Poll(ctx, req)
				if err != nil || len(resp.Jobs) != jobs || resp.Jobs[0].Outcome != ck.OutcomeRenewed {
					b.Fatalf("poll %d: %v", req.Seq, err)
				}
			}
		})
	}
}
