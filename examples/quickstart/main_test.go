package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestQuickstart runs the quickstart and checks its outcome: every record
// ingested is in the live blocks, every block reached the final level,
// every replaced segment was deleted, and the state machine is drained.
func TestQuickstart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out bytes.Buffer
	res, err := run(ctx, &out)
	require.NoError(t, err, out.String())

	assert.Equal(t, 32, res.Segments)
	assert.Equal(t, 32*2*10, res.Ingested)
	assert.Equal(t, res.Ingested, res.Live, "records in the live blocks")
	st := res.Stats
	assert.True(t, st.Drained(), "drained")
	assert.Zero(t, st.Planner.Quarantined)
	assert.Zero(t, st.BrokenInvariants)
	assert.NoError(t, st.Failed)
	assert.Positive(t, st.Scheduler.Counters.Completed)
	assert.Equal(t, int64(res.Blocks), st.Index.Blocks, "the index holds the blocks read")
	// Two tenants on two shards, no cross-shard level: at least 4 final
	// blocks, and fewer than the segments ingested.
	assert.Equal(t, map[uint32]int{3: res.Blocks}, res.Levels, "every block at the final level")
	assert.GreaterOrEqual(t, res.Blocks, 4)
	assert.Less(t, res.Blocks, res.Segments)
	assert.Equal(t, res.Blocks, res.Objects, "no replaced segment left in the store")
	assert.Contains(t, out.String(), "records: 640 ingested, 640 in the live blocks")
	assert.Contains(t, out.String(), "ok: every record compacted")
}
