package admin_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/admin"
	"github.com/compactkit/compactkit/internal/testclock"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/policy"
	"github.com/compactkit/compactkit/raftfsm"
)

// noon is a Wednesday, 12:00 UTC.
var noon = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// clockNode is a leader service whose clock the test moves, with blocks
// queued at noon: acme 3, globex 1, initech 2 (level 0).
type clockNode struct {
	*testclock.Clock
	svc *leader.Service
	fsm *raftfsm.FSM
}

func newClockNode(t *testing.T) *clockNode {
	n := &clockNode{Clock: testclock.New(noon)}
	n.svc, n.fsm = newService(t, 8, leader.WithClock(n.Now))
	var blocks []ck.BlockMeta
	for i, tenant := range []string{"acme", "acme", "acme", "globex", "initech", "initech"} {
		blocks = append(blocks, leadertest.Block(tenant+"-"+string(rune('a'+i)), tenant, 0, int64(i)*1e9))
	}
	_, err := n.svc.AddBlocks(context.Background(), blocks)
	require.NoError(t, err)
	return n
}

// acmePolicy is every field of a policy, as the API takes and shows it.
const acmePolicy = `{"class":"low","max_in_progress":1,"max_in_progress_per_shard":1,
 "run":{"mode":"only-in","windows":[{"days":["Mon","Tue"],"start":"22:00","end":"06:00","offset_minutes":60}]},
 "not_before":"2026-12-01T00:00:00Z",
 "pressure":{"slow_blocks":{"on":2,"off":1},"stop_blocks":{"on":3,"off":2}},
 "shard_pressure":{"slow_blocks":{"on":5,"off":4}},
 "stale_after":"1m0s",
 "levels":[{"level":0,"max_blocks":2,"max_age":"2m0s"},{"level":1,"max_bytes":1048576,"cross_shard":"on"}],
 "level_runs":[{"level":1,"run":{"mode":"never-in","windows":[{"days":["Mon"],"start":"23:00","end":"23:30","offset_minutes":60}]}}]}`

// Policies set through the API read back with names, not codes; the
// status shows the grades and alarms they lead to.
func TestPolicies(t *testing.T) {
	n := newClockNode(t)
	var mu sync.Mutex
	var asked []string
	srv := httptest.NewServer(admin.New(n.svc, admin.WithAuthorizer(func(_ *http.Request, action string) error {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, action)
		return nil
	})))
	defer srv.Close()

	var res admin.CommandResult
	require.Equal(t, 200, call(t, srv, "POST", "/api/commands/policy-set", `{"tenant":"acme","policy":`+acmePolicy+`}`, nil, &res))
	require.Equal(t, "policy-set", res.Action)
	require.Equal(t, 1, res.Count)
	require.Positive(t, res.Index)
	require.Equal(t, 200, call(t, srv, "POST", "/api/commands/policy-set", `{"all":true,"policy":{"class":"high"}}`, nil, &res))
	require.Equal(t, 200, call(t, srv, "POST", "/api/commands/policy-set", `{"tenant":"initech","policy":{"pressure":{"stop_blocks":{"on":2,"off":1}}}}`, nil, &res))
	require.Equal(t, 200, call(t, srv, "POST", "/api/commands/compact-now", `{"tenant":"globex","level":0}`, nil, &res))
	require.Equal(t, "compact-now", res.Action)
	require.Equal(t, 200, call(t, srv, "POST", "/api/commands/compact-now", `{"all":true}`, nil, &res))

	var ps admin.Policies
	require.Equal(t, 200, call(t, srv, "GET", "/api/policies", "", nil, &ps))
	require.Equal(t, "2026-11-25T12:00:00Z", ps.LogTime)
	require.Equal(t, raftfsm.TenantPolicy{Open: true, Policy: policy.Tenant{Class: policy.High}}, ps.Default)
	var want policy.Tenant
	require.NoError(t, json.Unmarshal([]byte(acmePolicy), &want))
	zero := uint32(0)
	require.Equal(t, []raftfsm.TenantPolicy{
		{Tenant: "acme", Open: false, Policy: want}, // not before December, and outside its window
		{Tenant: "initech", Open: true, Policy: policy.Tenant{Pressure: policy.Thresholds{StopBlocks: policy.Limit{On: 2, Off: 1}}}},
	}, ps.Tenants)
	require.Equal(t, []admin.CompactNow{
		{All: true, Before: "2026-11-25T12:00:00Z"},
		{Tenant: "globex", Level: &zero, Before: "2026-11-25T12:00:00Z"},
	}, ps.CompactNow)

	// The literal JSON: names and strings, zero fields left out.
	var raw map[string]any
	require.Equal(t, 200, call(t, srv, "GET", "/api/policies", "", nil, &raw))
	acme := raw["tenants"].([]any)[0].(map[string]any)["policy"].(map[string]any)
	require.Equal(t, map[string]any{"mode": "only-in", "windows": []any{
		map[string]any{"days": []any{"Mon", "Tue"}, "start": "22:00", "end": "06:00", "offset_minutes": 60.0},
	}}, acme["run"])
	require.Equal(t, "2026-12-01T00:00:00Z", acme["not_before"])
	require.Equal(t, map[string]any{"slow_blocks": map[string]any{"on": 2.0, "off": 1.0}, "stop_blocks": map[string]any{"on": 3.0, "off": 2.0}}, acme["pressure"])
	def := raw["default"].(map[string]any)["policy"].(map[string]any)
	require.Equal(t, map[string]any{"class": "high", "max_in_progress": 0.0}, def, "zero fields are left out")

	// Backpressure: acme's 3 blocks reach its stop threshold, but its
	// closed window holds it at slow; initech's 2 reach stop.
	var st admin.Status
	require.Equal(t, 200, call(t, srv, "GET", "/api/status", "", nil, &st))
	require.Equal(t, []admin.TenantGrade{{Tenant: "acme", Grade: "slow"}, {Tenant: "initech", Grade: "stop"}}, st.Pressure)
	require.Empty(t, st.Alarms)

	// Two minutes on, acme's oldest block has waited past its one-minute
	// threshold: an alarm since 12:01, for a minute at the log's time.
	n.Advance(2 * time.Minute)
	require.Equal(t, 200, call(t, srv, "POST", "/api/commands/policy-clear", `{"tenant":"nobody"}`, nil, &res))
	require.Equal(t, 0, res.Count, "clearing a policy that is not set changes nothing")
	require.Equal(t, 200, call(t, srv, "GET", "/api/status", "", nil, &st))
	require.Equal(t, []admin.StaleAlarm{{Tenant: "acme", Level: 0, Oldest: "2026-11-25T12:00:00Z", Since: "2026-11-25T12:01:00Z", For: "1m0s"}}, st.Alarms)

	require.Equal(t, 200, call(t, srv, "POST", "/api/commands/policy-clear", `{"tenant":"acme"}`, nil, &res))
	require.Equal(t, 1, res.Count)
	require.Equal(t, 200, call(t, srv, "GET", "/api/policies", "", nil, &ps))
	require.Len(t, ps.Tenants, 1)

	mu.Lock()
	defer mu.Unlock()
	for _, a := range []string{"policy-set", "compact-now", "policy-clear", "policies", "status"} {
		require.Contains(t, asked, a)
	}
}

// Malformed policy commands are 400 with a message naming what is wrong,
// policies the state machine refuses are 409 as other refusals, and
// neither changes anything.
func TestPolicyCommandErrors(t *testing.T) {
	n := newClockNode(t)
	srv := httptest.NewServer(admin.New(n.svc, admin.WithAuthorizer(allow)))
	defer srv.Close()
	readOnly := httptest.NewServer(admin.New(n.svc))
	defer readOnly.Close()
	window := func(w string) string {
		return `{"tenant":"a","policy":{"run":{"mode":"only-in","windows":[` + w + `]}}}`
	}
	everyDay := `"days":["Sun","Mon","Tue","Wed","Thu","Fri","Sat"]`

	var before strings.Builder
	require.NoError(t, n.fsm.Snapshot(&before))
	for _, c := range []struct {
		action, body string
		code         int
		says         string
	}{
		{"policy-set", `{"policy":{}}`, 400, `name a tenant ("tenant") or every tenant ("all": true)`},
		{"policy-set", `{"tenant":"a","all":true,"policy":{}}`, 400, "not both"},
		{"policy-set", `{"tenant":"a"}`, 400, "policy is required"},
		{"policy-set", `{"tenant":"a","level":1,"policy":{}}`, 400, "level is for compact-now only"},
		{"policy-set", `{"tenant":"a","policy":{"class":"urgent"}}`, 400, `class "urgent"`},
		{"policy-set", `{"tenant":"a","policy":{"colour":"red"}}`, 400, "colour"},
		{"policy-set", `{"tenant":"a","policy":{"max_in_progress":-1}}`, 400, "max_in_progress"},
		{"policy-set", window(`{"days":["Funday"],"start":"22:00","end":"06:00"}`), 400, `day "Funday"`},
		{"policy-set", window(`{"days":[],"start":"22:00","end":"06:00"}`), 400, "days: none"},
		{"policy-set", window(`{"days":["Mon"],"start":"25:00","end":"06:00"}`), 400, `start: "25:00"`},
		{"policy-set", window(`{"days":["Mon"],"start":"24:00","end":"06:00"}`), 400, "24:00 is only an end"},
		{"policy-set", window(`{"days":["Mon"],"start":"9:00","end":"17:00"}`), 400, `"9:00", want HH:MM`},
		{"policy-set", window(`{"days":["Mon"],"start":"09:00","end":"17:00","offset_minutes":900}`), 400, "offset_minutes 900"},
		{"policy-set", window(`{"days":["Mon"],"start":"09:00","end":"09:00"}`), 400, "empty (start equals end)"},
		{"policy-set", `{"tenant":"a","policy":{"run":{"mode":"sometimes","windows":[]}}}`, 400, `mode "sometimes"`},
		{"policy-set", `{"tenant":"a","policy":{"not_before":"tomorrow"}}`, 400, `not_before "tomorrow"`},
		{"policy-set", `{"tenant":"a","policy":{"not_before":"1969-12-31T23:59:59Z"}}`, 400, "from 1970 to 2262"},
		{"policy-set", `{"tenant":"a","policy":{"stale_after":"soon"}}`, 400, `stale_after "soon"`},
		{"policy-set", `{"tenant":"a","policy":{"stale_after":"-1h"}}`, 400, "stale after -1h0m0s"},
		{"policy-set", `{"tenant":"a","policy":{"pressure":{"slow_blocks":{"on":1,"off":2}}}}`, 400, "want 0 ≤ off ≤ on"},
		// The debt thresholds' former keys name their successors.
		{"policy-set", `{"tenant":"a","policy":{"pressure":{"slow_debt":{"on":3,"off":1}}}}`, 400, `"slow_debt" is now "slow_ready_batches"`},
		{"policy-set", `{"tenant":"a","policy":{"shard_pressure":{"stop_debt":{"on":3,"off":1}}}}`, 400, `"stop_debt" is now "stop_ready_batches"`},
		{"policy-set", `{"tenant":"a","policy":{"pressure":{"slow_readiness":{"on":3,"off":1}}}}`, 400, "slow_readiness"},
		{"policy-clear", `{"tenant":"a","policy":{}}`, 400, "takes no policy"},
		{"compact-now", `{"tenant":"a","policy":{}}`, 400, "takes no policy"},
		{"compact-now", `{}`, 400, "name a tenant"},
		{"compact-now", `{"tenant":"a"} {"tenant":"b"}`, 400, "more than one JSON value"},
		// Refused by the state machine: work could never start.
		{"policy-set", window(``), 409, "work could never start"},
		{"policy-set", `{"tenant":"a","policy":{"run":{"mode":"never-in","windows":[{` + everyDay + `,"start":"00:00","end":"24:00"}]}}}`, 409, "work could never start"},
	} {
		var e struct{ Error string }
		require.Equal(t, c.code, call(t, srv, "POST", "/api/commands/"+c.action, c.body, nil, &e), "%s %s: %s", c.action, c.body, e.Error)
		require.Contains(t, e.Error, c.says, "%s %s", c.action, c.body)
	}
	var e struct{ Error string }
	require.Equal(t, 403, call(t, readOnly, "POST", "/api/commands/policy-set", `{"tenant":"a","policy":{}}`, nil, &e), "read-only")
	require.Equal(t, 405, call(t, srv, "GET", "/api/commands/compact-now", "", nil, nil))
	var after strings.Builder
	require.NoError(t, n.fsm.Snapshot(&after))
	require.Equal(t, before.String(), after.String(), "refused commands change nothing")
}

// The status page shows the policies, the grades and the alarms.
func TestPolicyPage(t *testing.T) {
	n := newClockNode(t)
	srv := httptest.NewServer(admin.New(n.svc, admin.WithAuthorizer(allow)))
	defer srv.Close()
	var res admin.CommandResult
	require.Equal(t, 200, call(t, srv, "POST", "/api/commands/policy-set", `{"tenant":"acme","policy":`+acmePolicy+`}`, nil, &res))
	require.Equal(t, 200, call(t, srv, "POST", "/api/commands/compact-now", `{"tenant":"globex"}`, nil, &res))
	resp, err := srv.Client().Get(srv.URL + "/")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	page := string(body)
	for _, want := range []string{
		`id="policies"`, `id="policy-default"`, `<td class="l">acme</td><td class="l">low</td><td>1 · 1 per shard</td>`,
		"only-in Mon,Tue 22:00-06:00 UTC&#43;01:00", "slow 2/1, stop 3/2 · per shard: slow 5/4", "2026-12-01T00:00:00Z",
		"0:blocks=2,age=2m0s 1:bytes=1048576,cross=on",
		`<span class="bad">closed</span>`, `tenant &#34;globex&#34; at every level`, `id="pressure"`, `id="alarms"`,
	} {
		require.Contains(t, page, want)
	}
}

// GET api/policies pages through the tenants' own policies by name, the
// empty tenant first; every page has the default; cursors are checked.
func TestPoliciesPaged(t *testing.T) {
	n := newClockNode(t)
	srv := httptest.NewServer(admin.New(n.svc, admin.WithAuthorizer(func(*http.Request, string) error { return nil })))
	defer srv.Close()
	var res admin.CommandResult
	for _, tenant := range []string{"globex", "", "acme"} {
		require.Equal(t, 200, call(t, srv, "POST", "/api/commands/policy-set", `{"tenant":"`+tenant+`","policy":{"max_in_progress":2}}`, nil, &res))
	}
	require.Equal(t, 200, call(t, srv, "POST", "/api/commands/policy-set", `{"all":true,"policy":{"class":"high"}}`, nil, &res))
	var all []string
	cursor := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 3)
		path := "/api/policies?limit=2"
		if pages > 0 {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		var ps admin.Policies
		require.Equal(t, 200, call(t, srv, "GET", path, "", nil, &ps))
		require.Equal(t, policy.High, ps.Default.Policy.Class)
		require.LessOrEqual(t, len(ps.Tenants), 2)
		for _, tp := range ps.Tenants {
			all = append(all, tp.Tenant)
		}
		if ps.Next == "" {
			break
		}
		cursor = ps.Next
	}
	require.Equal(t, []string{"", "acme", "globex"}, all)

	var whole admin.Policies
	require.Equal(t, 200, call(t, srv, "GET", "/api/policies", "", nil, &whole))
	require.Len(t, whole.Tenants, 3, "without a limit: every tenant")
	require.Empty(t, whole.Next)
	var e struct{ Error string }
	require.Equal(t, 400, call(t, srv, "GET", "/api/policies?limit=2&cursor=acme", "", nil, &e))
	require.Contains(t, e.Error, `cursor "acme" is not one this API returned`)
	require.Equal(t, 400, call(t, srv, "GET", "/api/policies?limit=20000", "", nil, &e))
}
