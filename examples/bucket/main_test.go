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

// runSmall runs the example small — 60 segments, workers ingesting,
// merging and cleaning up — and returns its output once the full
// verification passed.
func runSmall(t *testing.T, cfg config) string {
	t.Helper()
	cfg.Run, cfg.Dir = demo.DefaultConfig(), t.TempDir()
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
	assert.Contains(t, out.String(), "verification passed")
	return out.String()
}

// TestBucket: three coordinators on a directory.
func TestBucket(t *testing.T) {
	assert.Contains(t, runSmall(t, config{Coordinators: 3}), "bucket log")
}

// TestBucketServerless: no coordinator; each worker its own node of the
// log, and an ingest node.
func TestBucketServerless(t *testing.T) {
	assert.Contains(t, runSmall(t, config{Serverless: true}), "serverless")
}
