package raftfsm

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/internal/codec"
	"github.com/compactkit/compactkit/policy"
)

// A policy is encoded as seven items without per-level parts (the bytes
// of the first release with policies) and as eight with them; eight items
// without any are malformed.
func TestPolicyRecordLevels(t *testing.T) {
	plain := policy.Tenant{Class: policy.Low, MaxInProgress: 3, StaleAfter: time.Minute}
	withLevels := plain
	withLevels.Levels = []policy.Level{{Level: 0, MaxBlocks: 8, MaxAge: time.Minute}, {Level: 2, MaxBytes: 1 << 20, CrossShard: policy.On}}
	withRuns := plain
	withRuns.LevelRuns = []policy.LevelRun{{Level: 1, Run: policy.RunPolicy{Mode: policy.OnlyIn, Windows: []policy.Window{{Days: policy.EveryDay, Start: 60, End: 120}}}}}
	both := withLevels
	both.LevelRuns = withRuns.LevelRuns
	withShards := plain
	withShards.ShardPressure = policy.Thresholds{SlowBlocks: policy.Limit{On: 10, Off: 5}}
	for _, p := range []policy.Tenant{plain, withLevels, withRuns, both, withShards} {
		data, err := codec.Default.Marshal(recordPolicy(&p))
		require.NoError(t, err)
		extras := len(p.Levels) > 0 || len(p.LevelRuns) > 0 || p.ShardPressure != (policy.Thresholds{})
		require.Equal(t, map[bool]byte{false: 0x87, true: 0x88}[extras], data[0], "array of seven or eight items")
		var r policyRec
		require.NoError(t, codec.Default.Unmarshal(data, &r))
		require.True(t, p.Equal(r.policy()), "%+v", r.policy())
	}
	// The seven items are those of policyFields alone.
	rec := recordPolicy(&plain)
	short, err := codec.Default.Marshal(&rec.policyFields)
	require.NoError(t, err)
	data, err := codec.Default.Marshal(recordPolicy(&plain))
	require.NoError(t, err)
	require.Equal(t, short, data)

	f := recordPolicy(&plain).policyFields
	for _, levels := range [][]levelRec{nil, {}} {
		bad, err := codec.Default.Marshal(&policyWithLevels{Class: f.Class, MaxInProgress: f.MaxInProgress, Extras: policyExtras{Levels: levels}})
		require.NoError(t, err)
		var r policyRec
		require.ErrorIs(t, codec.Default.Unmarshal(bad, &r), ck.ErrMalformed)
	}
}
