package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/compactkit/compactkit/blockmerge/objstore/versitytest"
	"github.com/compactkit/compactkit/examples/internal/demo"
)

// TestDemo runs the demo small, with one worker cut off
// halfway, and asserts the verification and the report.
func TestDemo(t *testing.T) {
	cfg := config{Run: demo.DefaultConfig(), Dir: t.TempDir(), Chart: filepath.Join(t.TempDir(), "chart.svg")}
	cfg.Run.Data.Segments, cfg.Run.Data.Tenants, cfg.Run.Data.Shards, cfg.Run.Data.Records = 120, 4, 2, 8
	cfg.Run.Workers, cfg.Run.PartitionWorkers = 3, 1
	rep, out := runSmall(t, cfg)
	for _, name := range []string{"records", "checksum", "exactly once", "no source left", "no orphan", "index = object store", "nothing pending"} {
		found := false
		for _, c := range rep.Verification.Checks {
			found = found || (c.Name == name && c.OK)
		}
		assert.True(t, found, "check %q passed", name)
	}
	assert.Equal(t, 120, rep.Segments)
	assert.Positive(t, rep.Records)
	assert.Equal(t, rep.Records, rep.Verification.Records)
	assert.Equal(t, rep.Checksum, rep.Verification.Checksum)
	assert.Less(t, rep.ReadAmpAfter, rep.ReadAmpBefore, "compaction reduced read amplification")
	assert.Positive(t, rep.Scheduler.Completed)
	if rep.Workers.JobsLost > 0 {
		assert.Positive(t, rep.Scheduler.Reassigned, "the cut-off worker's jobs were reassigned")
	}
	after := 0
	for _, l := range rep.After {
		after += l.Blocks
		assert.Equal(t, l.Blocks, l.Objects)
	}
	assert.Less(t, after, rep.Segments)
	assert.Contains(t, out.String(), "verification passed")
	assert.Contains(t, out.String(), "read amplification")
	assert.Contains(t, out.String(), "status page: http://", "the demo prints the status page's address")
	st, err := os.Stat(cfg.Chart)
	require.NoError(t, err)
	assert.Positive(t, st.Size())
	entries, err := os.ReadDir(cfg.Dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "the temporary store is removed without -keep")
}

// TestDemoOnS3 runs the demo's whole worker path — ingest,
// merges, cleanup, verification — on a real S3 server (versitygw).
func TestDemoOnS3(t *testing.T) {
	store, _ := versitytest.Start(t).Store(t, 5<<20)
	cfg := config{Run: demo.DefaultConfig(), Store: store}
	cfg.Run.Data.Segments, cfg.Run.Data.Tenants, cfg.Run.Data.Shards, cfg.Run.Data.Records = 60, 2, 2, 8
	cfg.Run.Workers, cfg.Run.PartitionWorkers = 2, 0
	rep, out := runSmall(t, cfg)
	assert.Positive(t, rep.Scheduler.Completed)
	assert.Contains(t, out.String(), "verification passed")
}

// runSmall runs the demo with a short flush interval and drain timeout,
// without progress bars, and requires its verification to pass.
func runSmall(t *testing.T, cfg config) (*demo.Report, *bytes.Buffer) {
	t.Helper()
	cfg.Run.FlushInterval = 10 * time.Millisecond
	cfg.Run.DrainTimeout = 45 * time.Second
	cfg.Run.Progress = false
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out bytes.Buffer
	rep, err := run(ctx, cfg, &out)
	require.NoError(t, err, out.String())
	require.True(t, rep.Verification.OK(), rep.Verification.Failed())
	return rep, &out
}
