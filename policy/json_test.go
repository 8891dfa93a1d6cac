package policy_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/compactkit/compactkit/policy"
)

// every is a policy with every field set.
var every = policy.Tenant{Class: policy.Low, MaxInProgress: 1, MaxInProgressPerShard: 1,
	Run:           policy.RunPolicy{Mode: policy.OnlyIn, Windows: []policy.Window{{Days: policy.Days(time.Monday, time.Tuesday), Start: 22 * 60, End: 6 * 60, Offset: 60}}},
	NotBefore:     time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).UnixNano(),
	Pressure:      policy.Thresholds{SlowBlocks: policy.Limit{On: 2, Off: 1}, StopBlocks: policy.Limit{On: 3, Off: 2}},
	ShardPressure: policy.Thresholds{SlowBlocks: policy.Limit{On: 5, Off: 4}},
	StaleAfter:    time.Minute,
	Levels:        []policy.Level{{Level: 0, MaxBlocks: 2, MaxAge: 2 * time.Minute}, {Level: 1, MaxBytes: 1 << 20, CrossShard: policy.On}},
	LevelRuns:     []policy.LevelRun{{Level: 1, Run: policy.RunPolicy{Mode: policy.NeverIn, Windows: []policy.Window{{Days: policy.Days(time.Monday), Start: 23 * 60, End: 23*60 + 30, Offset: 60}}}}},
}

// MarshalJSON and UnmarshalJSON are inverse.
func TestPolicyJSONRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		limit := func(name string) policy.Limit {
			return policy.Limit{On: rapid.Int64().Draw(t, name+".on"), Off: rapid.Int64().Draw(t, name+".off")}
		}
		p := policy.Tenant{
			Class:         policy.Class(rapid.IntRange(0, 2).Draw(t, "class")),
			MaxInProgress: rapid.Uint32().Draw(t, "cap"),
			Run:           policy.RunPolicy{Mode: policy.RunMode(rapid.IntRange(0, 1).Draw(t, "mode"))},
			NotBefore:     rapid.Int64Range(0, 1<<63-1).Draw(t, "notBefore"),
			Pressure:      policy.Thresholds{SlowBlocks: limit("slowBlocks"), StopBlocks: limit("stopBlocks"), SlowReadyBatches: limit("slowReadyBatches"), StopReadyBatches: limit("stopReadyBatches")},
			ShardPressure: policy.Thresholds{SlowBlocks: limit("shardSlow"), StopReadyBatches: limit("shardStopReadyBatches")},
			StaleAfter:    time.Duration(rapid.Int64().Draw(t, "stale")),
		}
		for l := range uint32(4) {
			if rapid.Bool().Draw(t, "override") {
				p.Levels = append(p.Levels, policy.Level{Level: l, MaxBlocks: rapid.IntRange(0, 1<<20).Draw(t, "maxBlocks"),
					MaxBytes: rapid.Int64Min(0).Draw(t, "maxBytes"), MaxAge: time.Duration(rapid.Int64Min(0).Draw(t, "maxAge")),
					CrossShard: policy.Toggle(rapid.IntRange(0, 2).Draw(t, "cross"))})
			}
		}
		window := func() policy.Window {
			return policy.Window{
				Days:   policy.Weekdays(rapid.IntRange(1, int(policy.EveryDay)).Draw(t, "days")),
				Start:  uint16(rapid.IntRange(0, 1440-1).Draw(t, "start")),
				End:    uint16(rapid.IntRange(0, 1440).Draw(t, "end")),
				Offset: int16(rapid.IntRange(-840, 840).Draw(t, "offset")),
			}
		}
		for range rapid.IntRange(0, 32).Draw(t, "windows") {
			p.Run.Windows = append(p.Run.Windows, window())
		}
		for l := range uint32(3) {
			if rapid.Bool().Draw(t, "levelRun") {
				lr := policy.LevelRun{Level: l, Run: policy.RunPolicy{Mode: policy.RunMode(rapid.IntRange(0, 1).Draw(t, "levelMode"))}}
				for range rapid.IntRange(1, 3).Draw(t, "levelWindows") {
					lr.Run.Windows = append(lr.Run.Windows, window())
				}
				p.LevelRuns = append(p.LevelRuns, lr)
			}
		}
		data, err := json.Marshal(p)
		require.NoError(t, err)
		var got policy.Tenant
		require.NoError(t, json.Unmarshal(data, &got), string(data))
		require.True(t, p.Equal(got), "%+v\n%s\n%+v", p, data, got)
	})
}

// The JSON form converts every field of a policy: a field added to one of
// these types must be added to its JSON form (json.go), or a policy set
// through the admin API would silently reset it.
func TestPolicyFieldsCovered(t *testing.T) {
	for _, c := range []struct {
		v      any
		fields []string
	}{
		{policy.Tenant{}, []string{"Class", "MaxInProgress", "MaxInProgressPerShard", "Run", "NotBefore", "Pressure", "ShardPressure", "StaleAfter", "Levels", "LevelRuns"}},
		{policy.LevelRun{}, []string{"Level", "Run"}},
		{policy.Level{}, []string{"Level", "MaxBlocks", "MaxBytes", "MaxAge", "CrossShard"}},
		{policy.RunPolicy{}, []string{"Mode", "Windows"}},
		{policy.Window{}, []string{"Days", "Start", "End", "Offset"}},
		{policy.Thresholds{}, []string{"SlowBlocks", "StopBlocks", "SlowReadyBatches", "StopReadyBatches"}},
		{policy.Limit{}, []string{"On", "Off"}},
	} {
		typ := reflect.TypeOf(c.v)
		var got []string
		for i := range typ.NumField() {
			got = append(got, typ.Field(i).Name)
		}
		require.Equal(t, c.fields, got, "%s changed: convert the new fields in json.go", typ)
	}
}

// The policy decoder takes any input without panicking; what it accepts
// and the policy package validates survives a round trip unchanged.
func FuzzPolicyJSON(f *testing.F) {
	seed, err := json.Marshal(every)
	require.NoError(f, err)
	require.NoError(f, every.Validate())
	f.Add(seed)
	f.Add([]byte(`{"class":"high","run":{"mode":"never-in","windows":[{"days":["sat","Sunday"],"start":"00:00","end":"24:00","offset_minutes":-840}]}}`))
	f.Add([]byte(`{"not_before":"2262-04-11T23:47:16.854775807Z","stale_after":"2562047h"}`))
	f.Add([]byte(`{"pressure":{"slow_ready_batches":{"on":3,"off":1},"stop_blocks":{"on":9,"off":4}},"shard_pressure":{"stop_debt":{"on":3,"off":1}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var tp policy.Tenant
		if err := json.Unmarshal(data, &tp); err != nil {
			// Not JSON of the form's shape, or a value the form refuses.
			var syntax *json.SyntaxError
			var typ *json.UnmarshalTypeError
			if !errors.As(err, &syntax) && !errors.As(err, &typ) && !strings.Contains(err.Error(), "json: ") && !strings.Contains(err.Error(), " is now ") {
				require.ErrorIs(t, err, policy.ErrInvalid)
			}
			return
		}
		if tp.Validate() != nil {
			return
		}
		shown, err := json.Marshal(tp)
		require.NoError(t, err)
		var again policy.Tenant
		require.NoError(t, json.Unmarshal(shown, &again))
		require.True(t, tp.Equal(again), "%+v\n%+v", tp, again)
		again2, err := json.Marshal(again)
		require.NoError(t, err)
		require.Equal(t, string(shown), string(again2))
	})
}
