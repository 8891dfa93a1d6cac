package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/compactkit/compactkit/examples/internal/demo"
)

// runSmall runs the example small — 60 segments, workers ingesting,
// merging and cleaning up — and returns its output once the full
// verification passed.
func runSmall(t *testing.T, cfg config) string {
	t.Helper()
	cfg.Run = demo.SmallConfig(60, 3, 2, 8, 4)
	cfg.Run.Dir = t.TempDir()
	rep, out := demo.RunVerified(t, 90*time.Second, run, cfg)
	assert.Positive(t, rep.Scheduler.Completed)
	assert.Contains(t, out, "verification passed")
	return out
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
