package demo

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// SmallConfig is DefaultConfig at a test's scale: segments, tenants,
// shards and records per dataset as given, that many workers with none
// cut off, a 10 ms flush interval, a 45 s drain timeout and no progress
// bars.
func SmallConfig(segments, tenants, shards, records, workers int) Config {
	c := DefaultConfig()
	c.Data.Segments, c.Data.Tenants, c.Data.Shards, c.Data.Records = segments, tenants, shards, records
	c.Workers, c.PartitionWorkers = workers, 0
	c.FlushInterval, c.DrainTimeout, c.Progress = 10*time.Millisecond, 45*time.Second, false
	return c
}

// RunVerified runs an example's run with its configuration cfg in a
// test, within timeout, and requires it to return no error and a report
// whose verification passed; it returns the report and what the run
// printed.
func RunVerified[C any](t testing.TB, timeout time.Duration, run func(ctx context.Context, cfg C, out io.Writer) (*Report, error), cfg C) (*Report, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out bytes.Buffer
	rep, err := run(ctx, cfg, &out)
	require.NoError(t, err, out.String())
	require.True(t, rep.Verification.OK(), rep.Verification.Failed())
	return rep, out.String()
}
