package policytext_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/compactkit/compactkit/internal/policytext"
	"github.com/compactkit/compactkit/policy"
)

// A level override's text form reads back as itself; malformed ones are
// refused with the form wanted.
func TestParseLevel(t *testing.T) {
	for _, s := range []string{"0:blocks=40,age=2m0s", "1:bytes=1048576,cross=on", "2:age=30s,cross=off"} {
		o, err := policytext.ParseLevel(s)
		require.NoError(t, err, s)
		data, err := json.Marshal(map[string]any{"levels": []any{o}})
		require.NoError(t, err)
		var p policy.Tenant
		require.NoError(t, json.Unmarshal(data, &p), string(data))
		require.Equal(t, s, policytext.Levels(p))
	}
	for _, s := range []string{"", "0", "0:", "x:blocks=1", "0:blocks=x", "0:size=1", "-1:blocks=1"} {
		_, err := policytext.ParseLevel(s)
		require.ErrorContains(t, err, "want", "%q", s)
	}
}

func TestTexts(t *testing.T) {
	var zero policy.Tenant
	require.Equal(t, []string{"none", "any time", "", "", "", ""},
		[]string{policytext.Cap(zero), policytext.Run(zero), policytext.Pressure(zero), policytext.NotBefore(zero), policytext.StaleAfter(zero), policytext.Levels(zero)})
	night := policy.RunPolicy{Mode: policy.OnlyIn, Windows: []policy.Window{{Days: policy.Days(time.Monday, time.Tuesday), Start: 22 * 60, End: 6 * 60, Offset: 60}}}
	p := policy.Tenant{MaxInProgress: 4, MaxInProgressPerShard: 1, Run: night,
		LevelRuns:     []policy.LevelRun{{Level: 1, Run: night}},
		NotBefore:     time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).UnixNano(),
		Pressure:      policy.Thresholds{SlowBlocks: policy.Limit{On: 2, Off: 1}, StopReadyBatches: policy.Limit{On: 3, Off: 3}},
		ShardPressure: policy.Thresholds{SlowBlocks: policy.Limit{On: 5, Off: 4}},
		StaleAfter:    time.Minute,
		Levels:        []policy.Level{{Level: 0, MaxBlocks: 2, MaxAge: 2 * time.Minute}, {Level: 1, MaxBytes: 1 << 20, CrossShard: policy.On}},
	}
	require.Equal(t, "4 · 1 per shard", policytext.Cap(p))
	require.Equal(t, "only-in Mon,Tue 22:00-06:00 UTC+01:00 · level 1 only-in Mon,Tue 22:00-06:00 UTC+01:00", policytext.Run(p))
	require.Equal(t, "slow 2/1, stop-ready-batches 3/3 · per shard: slow 5/4", policytext.Pressure(p))
	require.Equal(t, "2026-12-01T00:00:00Z", policytext.NotBefore(p))
	require.Equal(t, "1m0s", policytext.StaleAfter(p))
	require.Equal(t, "0:blocks=2,age=2m0s 1:bytes=1048576,cross=on", policytext.Levels(p))
}
