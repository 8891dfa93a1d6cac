package objstore_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge/objstore/versitytest"
	"github.com/compactkit/compactkit/bucketlog"
	"github.com/compactkit/compactkit/bucketlog/bucketlogtest"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/raftfsm"
)

// The bucket log on a real S3 server: three coordinators append at once
// (conditional puts race for each index), and end with byte-identical
// replicas holding every block once.
func TestBucketLogOnS3(t *testing.T) {
	store, _ := versitytest.Start(t).ConditionalStore(t, 0)
	ctx := context.Background()
	cfg := raftfsm.DefaultConfig()
	var logs []*bucketlog.Log
	var svcs []*leader.Service
	for i := range 3 {
		fsm, err := raftfsm.New(cfg)
		require.NoError(t, err)
		l, err := bucketlog.Open(ctx, store, "compaction", fsm, fmt.Sprintf("c%d", i), bucketlog.WithCheckpointEvery(8))
		require.NoError(t, err)
		logs = append(logs, l)
		svcs = append(svcs, leader.New(l, fsm, leader.WithRetries(50, func(n int) time.Duration { return time.Duration(n%8+1) * time.Millisecond })))
	}
	var wg sync.WaitGroup
	for i, svc := range svcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range 10 {
				_, err := svc.AddBlocks(ctx, []ck.BlockMeta{leadertest.Block(fmt.Sprintf("seg-%d-%02d", i, b), "acme", uint32(i), int64(b)*1e9)})
				require.NoError(t, err)
			}
		}()
	}
	wg.Wait()
	var first []byte
	var conflicts uint64
	for i, l := range logs {
		require.NoError(t, l.Barrier(ctx))
		conflicts += l.Stats().Conflicts
		var b bytes.Buffer
		require.NoError(t, svcs[i].FSM().Snapshot(&b))
		if i == 0 {
			first = b.Bytes()
		} else {
			require.Equal(t, first, b.Bytes(), "replica %d", i)
		}
	}
	t.Logf("entries %d, conflicts %d", logs[0].Applied(), conflicts)
	view := svcs[0].FSM().Index()
	defer view.Close()
	require.Equal(t, 30, view.Len())
}

// BenchmarkBucketLogS3: polls through 1, 4 and 16 coordinators of one
// bucket log on a real S3 server (versitygw on loopback).
func BenchmarkBucketLogS3(b *testing.B) {
	v := versitytest.Start(b)
	for _, n := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("s3/%d", n), func(b *testing.B) {
			s, _ := v.ConditionalStore(b, 0)
			bucketlogtest.CoordinatorsBenchmark(b, s, n)
		})
	}
}

// BenchmarkBucketLogS3Ingest: the maximum append rate of one coordinator
// on the S3 server, with 1 and 16 writers (batched).
func BenchmarkBucketLogS3Ingest(b *testing.B) {
	v := versitytest.Start(b)
	for _, w := range []int{1, 16} {
		b.Run(fmt.Sprintf("s3/writers=%d", w), func(b *testing.B) {
			s, _ := v.ConditionalStore(b, 0)
			bucketlogtest.IngestBenchmark(b, s, w)
		})
	}
}

// BenchmarkBucketLogS3Fleet: 1, 4 and 16 workers on the S3 server,
// serverless (each its own node) and through one coordinator.
func BenchmarkBucketLogS3Fleet(b *testing.B) {
	v := versitytest.Start(b)
	for _, w := range []int{1, 4, 16} {
		for _, serverless := range []bool{true, false} {
			mode := "coordinator"
			if serverless {
				mode = "serverless"
			}
			b.Run(fmt.Sprintf("s3/%s/workers=%d", mode, w), func(b *testing.B) {
				s, _ := v.ConditionalStore(b, 0)
				bucketlogtest.FleetBenchmark(b, s, bucketlogtest.Fleet{Nodes: 1, Workers: w, Serverless: serverless})
			})
		}
	}
}
