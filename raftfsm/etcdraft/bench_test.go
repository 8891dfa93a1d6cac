package etcdraft_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	ck "github.com/compactkit/compactkit"
)

// BenchmarkEtcdClusterPoll: polls through the leader service of a 3-node
// etcd-io/raft reference cluster (in-process network, MemoryStorage), in
// single-commit mode. Each of 8 workers releases the job it holds and
// takes a new one in every poll. It reports polls/s and log entries per
// poll (1: the poll is one entry).
func BenchmarkEtcdClusterPoll(b *testing.B) {
	c := newCluster(b, 3)
	ctx := context.Background()
	lead := c.waitLeader()
	for i, n := 0, 4*b.N+64; i < n; i += 1024 {
		if _, err := lead.svc.AddBlocks(ctx, acmeBlocks(i, min(i+1024, n), 8)); err != nil {
			b.Fatal(err)
		}
	}
	c.Settle(b)
	first, _ := lead.storage.LastIndex()
	type held struct {
		seq uint64
		job *ck.JobReply
	}
	workers := make([]held, 8)
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		w := &workers[i%len(workers)]
		w.seq++
		req := &ck.PollRequest{WorkerID: fmt.Sprintf("w%d-XXXXXXXXXXXXXXXX", i%len(workers)), Seq: w.seq, FreeSlots: 1}
		if w.job != nil {
			req.Updates = []ck.StatusUpdate{{Job: w.job.Job, Token: w.job.Token, Status: ck.ReportReleased}}
		}
		resp, err := lead.svc.Poll(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		w.job = nil
		for j := range resp.Jobs {
			if resp.Jobs[j].Outcome == ck.OutcomeAssigned {
				w.job = &resp.Jobs[j]
			}
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	last, _ := lead.storage.LastIndex()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "polls/s")
	b.ReportMetric(float64(last-first)/float64(b.N), "entries/poll")
}
