package hraftnode_test

import (
	"testing"
	"time"

	"github.com/compactkit/compactkit/raftfsm/hraft/internal/hrafttest"
)

// BenchmarkClusterPoll measures polls through a 3-node cluster over
// loopback TCP (BoltDB stores without fsync): workers that complete the
// job they hold and take a new one in every poll. It reports polls/s and
// the raft log entries appended per poll (1 in single-commit mode, 2 in
// two-commit mode).
func BenchmarkClusterPoll(b *testing.B) {
	for _, mode := range modes {
		b.Run(mode.String(), func(b *testing.B) {
			c := newCluster(b, 3, mode, 500*time.Millisecond)
			w := hrafttest.NewWorkload(b, 8)
			// Enough blocks for every poll to find a job: 4 per job.
			for n := 4*b.N + 64; n > 0; n -= min(n, 4096) {
				c.add(w.NewBlocks(min(n, 4096)))
			}
			l := c.settle()
			first := c.nodes[l].Raft.LastIndex()
			b.ResetTimer()
			start := time.Now()
			for i := range b.N {
				k := w.Workers[i%len(w.Workers)]
				w.Handle(k, c.poll(w.Request(k, 1)))
			}
			elapsed := time.Since(start)
			b.StopTimer()
			last := c.nodes[c.leader()].Raft.LastIndex()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "polls/s")
			b.ReportMetric(float64(last-first)/float64(b.N), "entries/poll")
			if w.NoLease != 0 {
				b.Fatalf("%d jobs lost their lease", w.NoLease)
			}
		})
	}
}
