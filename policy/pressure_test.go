package policy_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/compactkit/compactkit/policy"
)

var th = policy.Thresholds{
	SlowBlocks:       policy.Limit{On: 1000, Off: 800},
	StopBlocks:       policy.Limit{On: 5000, Off: 4000},
	SlowReadyBatches: policy.Limit{On: 50, Off: 40},
}

func TestPressureHysteresis(t *testing.T) {
	require.NoError(t, thresholdsErr(th))
	g := policy.OK
	for _, step := range []struct {
		blocks, debt int64
		want         policy.Grade
	}{
		{999, 0, policy.OK},
		{1000, 0, policy.Slow}, // enters at On
		{801, 0, policy.Slow},  // held above Off
		{799, 45, policy.Slow}, // blocks below Off, debt above its Off
		{799, 39, policy.OK},   // every measure below Off
		{900, 0, policy.OK},    // below On: not entered again
		{5000, 0, policy.Stop}, // straight to Stop
		{4000, 0, policy.Stop}, // held
		{3999, 0, policy.Slow}, // below Stop's Off, above Slow's
		{100, 60, policy.Slow}, // debt alone
		{100, 0, policy.OK},    // released
		{6000, 0, policy.Stop}, //
		{100, 0, policy.OK},    // a drop past both Offs releases at once
	} {
		g = th.Next(g, policy.Load{Blocks: step.blocks, ReadyBatches: step.debt}, false)
		require.Equal(t, step.want, g, "%+v", step)
	}
	// A closed window alone never stops ingest.
	require.Equal(t, policy.Slow, th.Next(policy.OK, policy.Load{Blocks: 9000}, true))
	require.Equal(t, policy.Slow, th.Next(policy.Stop, policy.Load{Blocks: 9000}, true))
	require.Equal(t, policy.OK, policy.Thresholds{}.Next(policy.Stop, policy.Load{Blocks: 1 << 40}, false), "no thresholds: OK")
}

func TestThresholdsValidate(t *testing.T) {
	for _, bad := range []policy.Thresholds{
		{SlowBlocks: policy.Limit{On: 10, Off: 11}},
		{SlowBlocks: policy.Limit{On: -1}},
		{SlowBlocks: policy.Limit{On: 0, Off: 1}},
		{SlowBlocks: policy.Limit{On: 100, Off: 50}, StopBlocks: policy.Limit{On: 90, Off: 50}},
		{SlowReadyBatches: policy.Limit{On: 100, Off: 50}, StopReadyBatches: policy.Limit{On: 200, Off: 40}},
	} {
		require.ErrorIs(t, thresholdsErr(bad), policy.ErrInvalid, "%+v", bad)
	}
}

// Properties of Next: the grade is monotone in the load, a load between
// Off and On keeps whatever grade it found (no flapping), and a held
// window never yields Stop.
func TestPressureProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		limit := func(name string) policy.Limit {
			on := rapid.Int64Range(0, 1000).Draw(t, name+".on")
			return policy.Limit{On: on, Off: rapid.Int64Range(0, on).Draw(t, name+".off")}
		}
		th := policy.Thresholds{SlowBlocks: limit("slowBlocks"), SlowReadyBatches: limit("slowReadyBatches")}
		th.StopBlocks = policy.Limit{On: th.SlowBlocks.On + rapid.Int64Range(0, 1000).Draw(t, "stopBlocks.on"), Off: th.SlowBlocks.Off}
		th.StopBlocks.Off += rapid.Int64Range(0, th.StopBlocks.On-th.StopBlocks.Off).Draw(t, "stopBlocks.off")
		if th.SlowBlocks.On == 0 {
			th.StopBlocks = policy.Limit{}
		}
		require.NoError(t, thresholdsErr(th))
		prev := policy.Grade(rapid.IntRange(0, 2).Draw(t, "prev"))
		a := policy.Load{Blocks: rapid.Int64Range(0, 3000).Draw(t, "blocks"), ReadyBatches: rapid.Int64Range(0, 3000).Draw(t, "debt")}
		b := policy.Load{Blocks: a.Blocks + rapid.Int64Range(0, 1000).Draw(t, "more blocks"), ReadyBatches: a.ReadyBatches + rapid.Int64Range(0, 1000).Draw(t, "more debt")}
		require.LessOrEqual(t, th.Next(prev, a, false), th.Next(prev, b, false), "more load, lower grade")
		g := th.Next(prev, a, false)
		require.Equal(t, g, th.Next(g, a, false), "the same load changes its own grade")
		require.NotEqual(t, policy.Stop, th.Next(prev, b, true))
	})
}

func TestClass(t *testing.T) {
	require.Equal(t, policy.Medium, policy.Class(0))
	require.Less(t, policy.High.Rank(), policy.Medium.Rank())
	require.Less(t, policy.Medium.Rank(), policy.Low.Rank())
	for _, c := range []policy.Class{policy.High, policy.Medium, policy.Low} {
		var got policy.Tenant
		require.NoError(t, json.Unmarshal([]byte(`{"class":"`+c.String()+`"}`), &got))
		require.Equal(t, c, got.Class)
		require.NoError(t, got.Validate())
	}
	var p policy.Tenant
	require.ErrorIs(t, json.Unmarshal([]byte(`{"class":"urgent"}`), &p), policy.ErrInvalid)
	require.ErrorIs(t, policy.Tenant{Class: 3}.Validate(), policy.ErrInvalid)
}
