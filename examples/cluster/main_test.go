package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/compactkit/compactkit/examples/internal/demo"
)

// TestCluster runs the cluster example small with one leader shutdown and
// asserts the verification, the leader change and identical replicas.
func TestCluster(t *testing.T) {
	cfg := defaultConfig()
	cfg.Run, cfg.Chart = demo.SmallConfig(96, 3, 2, 6, 3), ""
	cfg.Run.Dir = t.TempDir()
	cfg.Run.FlushInterval = 40 * time.Millisecond
	cfg.Kills, cfg.Down = 1, 300*time.Millisecond
	var res *result
	_, out := demo.RunVerified(t, 90*time.Second, func(ctx context.Context, cfg config, w io.Writer) (*demo.Report, error) {
		r, err := run(ctx, cfg, w)
		if r == nil {
			return nil, err
		}
		res = r
		return r.Report, err
	}, cfg)
	assert.True(t, res.SnapshotsEqual)
	assert.GreaterOrEqual(t, len(res.Leaders), 2, "the leader changed: %v", res.Leaders)
	assert.NotEqual(t, res.Leaders[0], res.Leaders[1])
	assert.Len(t, res.Events, 3, "shutdown, election, restart: %v", res.Events)
	assert.Equal(t, res.Records, res.Verification.Records)
	assert.Less(t, res.ReadAmpAfter, res.ReadAmpBefore)
	assert.Contains(t, out, "replicas identical")
	assert.Contains(t, out, "verification passed")
	assert.Regexp(t, `status page: http://127\.0\.0\.1:\d+/admin/`, out, "each node's status page address")
}
