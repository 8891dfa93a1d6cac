package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/compactkit/compactkit/examples/internal/demo"
)

// TestBucket runs the example small: three coordinators on a directory,
// ingest, workers, and the full verification.
func TestBucket(t *testing.T) {
	cfg := config{Run: demo.DefaultConfig(), Coordinators: 3, Dir: t.TempDir()}
	cfg.Run.Data.Segments, cfg.Run.Data.Tenants, cfg.Run.Data.Shards, cfg.Run.Data.Records = 60, 3, 2, 8
	cfg.Run.Workers, cfg.Run.PartitionWorkers = 3, 0
	cfg.Run.FlushInterval = 10 * time.Millisecond
	cfg.Run.DrainTimeout = 45 * time.Second
	cfg.Run.Progress = false
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var out bytes.Buffer
	rep, err := run(ctx, cfg, &out)
	require.NoError(t, err, out.String())
	require.True(t, rep.Verification.OK(), rep.Verification.Failed())
	assert.Positive(t, rep.Scheduler.Completed)
	assert.Contains(t, out.String(), "verification passed")
	assert.Contains(t, out.String(), "bucket log")
}

// TestBucketServerless runs it with no coordinator: four workers, each
// its own node of the log, and an ingest node.
func TestBucketServerless(t *testing.T) {
	cfg := config{Run: demo.DefaultConfig(), Serverless: true, Dir: t.TempDir()}
	cfg.Run.Data.Segments, cfg.Run.Data.Tenants, cfg.Run.Data.Shards, cfg.Run.Data.Records = 60, 3, 2, 8
	cfg.Run.Workers, cfg.Run.PartitionWorkers = 4, 0
	cfg.Run.FlushInterval = 10 * time.Millisecond
	cfg.Run.DrainTimeout = 45 * time.Second
	cfg.Run.Progress = false
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var out bytes.Buffer
	rep, err := run(ctx, cfg, &out)
	require.NoError(t, err, out.String())
	require.True(t, rep.Verification.OK(), rep.Verification.Failed())
	assert.Positive(t, rep.Scheduler.Completed)
	assert.Contains(t, out.String(), "serverless")
	assert.Contains(t, out.String(), "verification passed")
}
