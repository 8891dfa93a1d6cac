package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCluster runs the cluster example small with one leader shutdown and
// asserts the verification, the leader change and identical replicas.
func TestCluster(t *testing.T) {
	cfg := defaultConfig()
	cfg.Dir, cfg.Chart = t.TempDir(), ""
	cfg.Run.Data.Segments, cfg.Run.Data.Tenants, cfg.Run.Data.Shards, cfg.Run.Data.Records = 96, 3, 2, 6
	cfg.Run.Workers = 3
	cfg.Run.FlushInterval = 40 * time.Millisecond
	cfg.Run.DrainTimeout = 45 * time.Second
	cfg.Run.Progress = false
	cfg.Kills, cfg.Down = 1, 300*time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var out bytes.Buffer
	res, err := run(ctx, cfg, &out)
	require.NoError(t, err, out.String())
	require.True(t, res.Verification.OK(), res.Verification.Failed())
	assert.True(t, res.SnapshotsEqual)
	assert.GreaterOrEqual(t, len(res.Leaders), 2, "the leader changed: %v", res.Leaders)
	assert.NotEqual(t, res.Leaders[0], res.Leaders[1])
	assert.Len(t, res.Events, 3, "shutdown, election, restart: %v", res.Events)
	assert.Equal(t, res.Records, res.Verification.Records)
	assert.Less(t, res.ReadAmpAfter, res.ReadAmpBefore)
	assert.Contains(t, out.String(), "replicas identical")
	assert.Contains(t, out.String(), "verification passed")
	assert.Regexp(t, `status page: http://127\.0\.0\.1:\d+/admin/`, out.String(), "each node's status page address")
}
