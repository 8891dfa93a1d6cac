package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/admin"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/policy"
	"github.com/compactkit/compactkit/raftfsm"
)

func policies(t *testing.T, l *live) admin.Policies {
	t.Helper()
	out, err := ctl(t, l.srv, "-o", "json", "policy", "list")
	require.NoError(t, err)
	var ps admin.Policies
	require.NoError(t, json.Unmarshal([]byte(out), &ps))
	return ps
}

// Policies set from the command line reach the state machine through the
// API, every flag in its place, and read back in the table and as JSON.
func TestCLIPolicies(t *testing.T) {
	l := newLive(t)
	out, err := ctl(t, l.srv, "policy", "set", "-tenant", "acme", "-class", "low", "-cap", "2",
		"-only-in", "22:00-06:00,12:00-13:00", "-days", "Mon,Tue", "-offset", "60", "-not-before", "2026-12-01T00:00:00Z",
		"-slow", "100/80", "-stop", "500/400", "-slow-ready-batches", "10/5", "-stop-ready-batches", "20", "-stale", "1h",
		"-level", "0:blocks=40,age=2m", "-level", "1:bytes=1048576,cross=on")
	require.NoError(t, err)
	require.Contains(t, out, "policy-set applied at entry")
	require.Contains(t, out, "(1)")

	monTue := policy.Days(time.Monday, time.Tuesday)
	window := func(start, end uint16) policy.Window {
		return policy.Window{Days: monTue, Start: start * 60, End: end * 60, Offset: 60}
	}
	ps := policies(t, l)
	require.Equal(t, []raftfsm.TenantPolicy{{Tenant: "acme", Open: false, Policy: policy.Tenant{
		Class: policy.Low, MaxInProgress: 2,
		Run:       policy.RunPolicy{Mode: policy.OnlyIn, Windows: []policy.Window{window(22, 6), window(12, 13)}},
		NotBefore: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).UnixNano(),
		Pressure: policy.Thresholds{SlowBlocks: policy.Limit{On: 100, Off: 80}, StopBlocks: policy.Limit{On: 500, Off: 400},
			SlowReadyBatches: policy.Limit{On: 10, Off: 5}, StopReadyBatches: policy.Limit{On: 20, Off: 20}},
		StaleAfter: time.Hour,
		Levels:     []policy.Level{{Level: 0, MaxBlocks: 40, MaxAge: 2 * time.Minute}, {Level: 1, MaxBytes: 1 << 20, CrossShard: policy.On}},
	}}}, ps.Tenants)

	// A never-in window every night, for the default; the empty tenant's
	// own policy.
	_, err = ctl(t, l.srv, "policy", "set", "-all", "-class", "high", "-never-in", "02:00-03:00")
	require.NoError(t, err)
	_, err = ctl(t, l.srv, "policy", "set", "-tenant", "", "-cap", "1")
	require.NoError(t, err)
	_, err = ctl(t, l.srv, "compact-now", "-tenant", "acme", "-level", "0")
	require.NoError(t, err)
	_, err = ctl(t, l.srv, "compact-now", "-all")
	require.NoError(t, err)
	out, err = ctl(t, l.srv, "policy", "list")
	require.NoError(t, err)
	for _, want := range []string{
		"log time  2026-11-25T12:00:00Z",
		"(default)       high    none  never-in Sun,Mon,Tue,Wed,Thu,Fri,Sat 02:00-03:00 UTC+00:00",
		"(multi-tenant)  medium  1     any time",
		"acme            low     2     only-in Mon,Tue 22:00-06:00 UTC+01:00; Mon,Tue 12:00-13:00 UTC+01:00  2026-12-01T00:00:00Z  slow 100/80, stop 500/400, slow-ready-batches 10/5, stop-ready-batches 20/20  1h0m0s       0:blocks=40,age=2m0s 1:bytes=1048576,cross=on  closed",
		"(every tenant)  every  2026-11-25T12:00:00Z",
		"acme            0      2026-11-25T12:00:00Z",
	} {
		require.Contains(t, out, want)
	}
	ps = policies(t, l)
	require.Equal(t, policy.High, ps.Default.Policy.Class)
	require.True(t, ps.Default.Open, "noon is outside 02:00-03:00")
	require.Len(t, ps.Tenants, 2)
	require.Len(t, ps.CompactNow, 2)

	out, err = ctl(t, l.srv, "policy", "clear", "-tenant", "acme")
	require.NoError(t, err)
	require.Contains(t, out, "policy-clear applied at entry")
	_, err = ctl(t, l.srv, "policy", "clear", "-all")
	require.NoError(t, err)
	ps = policies(t, l)
	require.Equal(t, policy.Tenant{}, ps.Default.Policy)
	require.Len(t, ps.Tenants, 1)
	require.Equal(t, "", ps.Tenants[0].Tenant)
}

// Level windows from the command line: the days and offset apply to
// them; the table shows them after the tenant's own windows.
func TestCLILevelWindows(t *testing.T) {
	l := newLive(t)
	_, err := ctl(t, l.srv, "policy", "set", "-tenant", "acme", "-level-only-in", "1=22:00-06:00",
		"-level-never-in", "2=12:00-13:00,18:00-19:00", "-days", "Mon,Tue", "-offset", "60")
	require.NoError(t, err)
	ps := policies(t, l)
	window := func(start, end uint16) policy.Window {
		return policy.Window{Days: policy.Days(time.Monday, time.Tuesday), Start: start * 60, End: end * 60, Offset: 60}
	}
	require.Equal(t, []policy.LevelRun{
		{Level: 1, Run: policy.RunPolicy{Mode: policy.OnlyIn, Windows: []policy.Window{window(22, 6)}}},
		{Level: 2, Run: policy.RunPolicy{Mode: policy.NeverIn, Windows: []policy.Window{window(12, 13), window(18, 19)}}},
	}, ps.Tenants[0].Policy.LevelRuns)
	require.Equal(t, policy.RunPolicy{}, ps.Tenants[0].Policy.Run)
	out, err := ctl(t, l.srv, "policy", "list")
	require.NoError(t, err)
	require.Contains(t, out, "level 1 only-in Mon,Tue 22:00-06:00 UTC+01:00 · level 2 never-in Mon,Tue 12:00-13:00 UTC+01:00; Mon,Tue 18:00-19:00 UTC+01:00")
	_, err = ctl(t, l.srv, "policy", "set", "-tenant", "acme", "-level-only-in", "1")
	require.ErrorContains(t, err, `-level-only-in "1": want L=HH:MM-HH:MM`)
	_, err = ctl(t, l.srv, "policy", "set", "-tenant", "acme", "-only-in", "10:00-11:00", "-level-only-in", "1=12:00-13:00")
	require.ErrorContains(t, err, "409 Conflict")
}

// A cap per shard, alone or with the tenant's cap.
func TestCLIShardCap(t *testing.T) {
	l := newLive(t)
	_, err := ctl(t, l.srv, "policy", "set", "-tenant", "acme", "-cap", "4", "-shard-cap", "1")
	require.NoError(t, err)
	_, err = ctl(t, l.srv, "policy", "set", "-tenant", "beta", "-shard-cap", "2")
	require.NoError(t, err)
	ps := policies(t, l)
	require.Len(t, ps.Tenants, 2)
	require.Equal(t, policy.Tenant{MaxInProgress: 4, MaxInProgressPerShard: 1}, ps.Tenants[0].Policy)
	require.Equal(t, policy.Tenant{MaxInProgressPerShard: 2}, ps.Tenants[1].Policy)
	out, err := ctl(t, l.srv, "policy", "list")
	require.NoError(t, err)
	require.Contains(t, out, "acme       medium  4 · 1 per shard  any time")
	require.Contains(t, out, "beta       medium  2 per shard      any time")
	_, err = ctl(t, l.srv, "policy", "set", "-tenant", "acme", "-shard-cap", "2000000")
	require.ErrorContains(t, err, "max in progress per shard 2000000, at most 1048576")
}

// status shows the backpressure grades and the staleness alarms.
func TestCLIStatusPressure(t *testing.T) {
	l := newLive(t)
	_, err := l.svc.AddBlocks(context.Background(), []ck.BlockMeta{
		leadertest.Block("g-1", "globex", 0, 0), leadertest.Block("g-2", "globex", 1, 0), leadertest.Block("g-3", "globex", 2, 0),
	})
	require.NoError(t, err)
	_, err = ctl(t, l.srv, "policy", "set", "-tenant", "globex", "-stop", "2/1", "-stale", "1m", "-shard-slow", "1/0", "-shard-stop", "9/5")
	require.NoError(t, err)
	l.clock.Advance(90 * time.Second)
	_, err = ctl(t, l.srv, "compact-now", "-tenant", "nobody") // an entry at the new time
	require.NoError(t, err)
	out, err := ctl(t, l.srv, "status")
	require.NoError(t, err)
	require.Contains(t, out, "BACKPRESSURE  GRADE\nglobex        stop")
	require.Contains(t, out, "SHARD BACKPRESSURE  SHARD  GRADE\nglobex              0      slow\nglobex              1      slow\nglobex              2      slow")
	list, err := ctl(t, l.srv, "policy", "list")
	require.NoError(t, err)
	require.Contains(t, list, "stop 2/1 · per shard: slow 1/0, stop 9/5")
	require.Contains(t, out, "globex  0      2026-11-25T12:00:00Z  2026-11-25T12:01:00Z  30s")
}

// Wrong flags are refused before anything is sent; what the API refuses
// comes back with its status and message.
func TestCLIPolicyErrors(t *testing.T) {
	l := newLive(t)
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"policy"}, "want list, set or clear"},
		{[]string{"policy", "frobnicate"}, `policy "frobnicate"`},
		{[]string{"policy", "list", "extra"}, "unexpected arguments"},
		{[]string{"policy", "set", "-class", "low"}, "want -tenant T or -all"},
		{[]string{"policy", "set", "-tenant", "a", "-all"}, "want -tenant T or -all"},
		{[]string{"policy", "set", "-tenant", "a", "-only-in", "22:00-06:00", "-never-in", "01:00-02:00"}, "not both"},
		{[]string{"policy", "set", "-tenant", "a", "-days", "Mon"}, "-days and -offset need -only-in or -never-in"},
		{[]string{"policy", "set", "-tenant", "a", "-only-in", "22:00"}, `-only-in "22:00": want HH:MM-HH:MM`},
		{[]string{"policy", "set", "-tenant", "a", "-slow", "fast"}, `-slow: "fast": want ON/OFF`},
		{[]string{"policy", "set", "-tenant", "a", "-level", "1"}, `"1": want L:blocks=N`},
		{[]string{"policy", "set", "-tenant", "a", "-level", "1:size=3"}, `"size=3": want blocks=N`},
		{[]string{"compact-now", "-tenant", "a", "-level", "1:blocks=3"}, `invalid value "1:blocks=3" for flag -level`},
		{[]string{"policy", "clear", "-tenant", "a", "-class", "low"}, "flag provided but not defined: -class"},
		{[]string{"compact-now", "-all", "-level", "-2"}, "-level -2"},
		{[]string{"compact-now"}, "want -tenant T or -all"},
		// The API's answers.
		{[]string{"policy", "set", "-tenant", "a", "-class", "urgent"}, `400 Bad Request: policy-set: policy: class: policy: class "urgent"`},
		{[]string{"policy", "set", "-tenant", "a", "-only-in", "22:00-06:00", "-days", "Funday"}, `400 Bad Request: policy-set: policy: run: window 1: day "Funday"`},
		{[]string{"policy", "set", "-tenant", "a", "-stale", "soon"}, `400 Bad Request: policy-set: policy: stale_after "soon"`},
		{[]string{"policy", "set", "-tenant", "a", "-slow", "10/20"}, "400 Bad Request"},
		{[]string{"policy", "set", "-tenant", "a", "-level", "1:blocks=5000"}, "400 Bad Request: raftfsm: policy set: raftfsm: invalid command: planner: level 1: max blocks 5000, at most 4096"},
		{[]string{"policy", "set", "-tenant", "a", "-level", "1:cross=sideways"}, `400 Bad Request: policy-set: policy: levels: level 1: cross_shard "sideways"`},
		{[]string{"policy", "set", "-tenant", "a", "-level", "2:blocks=3", "-level", "1:blocks=3"}, "not in ascending order of level"},
		{[]string{"policy", "set", "-tenant", "a", "-never-in", "00:00-24:00"}, "409 Conflict"},
	} {
		_, err := ctl(t, l.srv, c.args...)
		require.ErrorContains(t, err, c.says, "%q", c.args)
	}
	ps := policies(t, l)
	require.Empty(t, ps.Tenants, "nothing refused was set")
}
