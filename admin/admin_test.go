package admin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/admin"
	"github.com/compactkit/compactkit/internal/testclock"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/raftfsm"
)

// node is a leader service over an in-memory log, with blocks queued and
// one job in progress for worker w1.
type node struct {
	svc *leader.Service
	fsm *raftfsm.FSM
	job ck.JobReply
}

// newService returns a leader service over an in-memory log, whose state
// machine plans level-0 jobs of maxBlocks blocks.
func newService(t testing.TB, maxBlocks int, opts ...leader.Option) (*leader.Service, *raftfsm.FSM) {
	cfg := raftfsm.DefaultConfig()
	cfg.Planner.Levels[0].MaxBlocks = maxBlocks
	fsm, err := raftfsm.New(cfg)
	require.NoError(t, err)
	return leader.New(leadertest.NewMemLog(fsm), fsm, opts...), fsm
}

func newNode(t testing.TB) *node {
	svc, fsm := newService(t, 2)
	ctx := context.Background()
	_, err := svc.AddBlocks(ctx, []ck.BlockMeta{
		leadertest.Block("seg-1", "acme", 0, 0), leadertest.Block("seg-2", "acme", 0, 1e9),
		leadertest.Block("seg-3", "globex", 0, 0), leadertest.Block("seg-4", "globex", 0, 1e9),
		leadertest.Block("seg-5", "initech", 0, 0),
	})
	require.NoError(t, err)
	resp, err := svc.Poll(ctx, &ck.PollRequest{WorkerID: "w1-SECRETSECRETSECRET", Seq: 1, FreeSlots: 1})
	require.NoError(t, err)
	return &node{svc: svc, fsm: fsm, job: resp.Jobs[0]}
}

func (n *node) snapshot(t *testing.T) []byte {
	var b bytes.Buffer
	require.NoError(t, n.fsm.Snapshot(&b))
	return b.Bytes()
}

func allow(*http.Request, string) error { return nil }

// call sends a request and decodes the JSON answer into out (if not nil).
func call(t *testing.T, srv *httptest.Server, method, path, body string, hdr map[string]string, out any) int {
	t.Helper()
	code, _, data := send(t, srv, method, path, "", body, hdr)
	if out != nil {
		require.NoError(t, json.Unmarshal([]byte(data), out), data)
	}
	return code
}

func TestReads(t *testing.T) {
	n := newNode(t)
	srv := httptest.NewServer(admin.New(n.svc))
	defer srv.Close()

	var st admin.Status
	require.Equal(t, 200, call(t, srv, "GET", "/api/status", "", nil, &st))
	require.Equal(t, 5, st.Queued+st.Claimed)
	require.Equal(t, 1, st.Jobs["in_progress"])
	require.NotEmpty(t, st.Levels)
	require.NotEmpty(t, st.LogTime)
	require.Equal(t, "mem", st.LeaderID, "the leader's ID, from the service's leadership")

	var page admin.JobPage
	require.Equal(t, 200, call(t, srv, "GET", "/api/jobs?status=in_progress", "", nil, &page))
	require.Len(t, page.Jobs, 1)
	j := page.Jobs[0]
	require.Equal(t, n.job.Job, j.Name)
	require.Equal(t, "in_progress", j.Status)
	require.Equal(t, ck.PublicWorkerName("w1-SECRETSECRETSECRET"), j.Worker)
	require.NotEmpty(t, j.Deadline)

	var one admin.Job
	require.Equal(t, 200, call(t, srv, "GET", "/api/jobs/"+n.job.Job, "", nil, &one))
	require.Equal(t, n.job.Plan.Sources, one.Sources)
	require.Len(t, one.History, 1)
	require.Equal(t, "assigned", one.History[0].Kind)
	require.Equal(t, uint64(n.job.Token), one.History[0].Token)
	require.Equal(t, ck.PublicWorkerName("w1-SECRETSECRETSECRET"), one.History[0].Worker)

	var tenants []admin.Tenant
	require.Equal(t, 200, call(t, srv, "GET", "/api/tenants", "", nil, &tenants))
	require.NotEmpty(t, tenants)
	var q admin.QuarantinePage
	require.Equal(t, 200, call(t, srv, "GET", "/api/quarantine", "", nil, &q))
	require.Empty(t, q.Blocks)

	for path, code := range map[string]int{
		"/api/jobs?status=sleeping":  400,
		"/api/jobs?cursor=garbage":   400,
		"/api/jobs?limit=-3":         400,
		"/api/jobs?level=x":          400,
		"/api/jobs/no.such.job":      404,
		"/api/jobs/..":               404, // cleaned by the mux: no such endpoint
		"/api/nothing":               404,
		"/api/dry-run?slots=1000000": 400,
	} {
		var e struct{ Error string }
		require.Equal(t, code, call(t, srv, "GET", path, "", nil, &e), path)
		require.NotEmpty(t, e.Error, path)
	}
	raw := []byte(srv.URL)
	require.NotContains(t, string(raw), "SECRET")
}

// The whole API never shows a worker's secret ID.
func TestNoSecrets(t *testing.T) {
	n := newNode(t)
	srv := httptest.NewServer(admin.New(n.svc))
	defer srv.Close()
	for _, path := range []string{"/", "/api/status", "/api/jobs", "/api/jobs/" + n.job.Job, "/api/dry-run"} {
		resp, err := srv.Client().Get(srv.URL + path)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, 200, resp.StatusCode, path)
		require.NotContains(t, string(body), "SECRETSECRET", path)
	}
}

// A dry run shows what the next poll would plan and assign, and changes
// nothing.
func TestDryRun(t *testing.T) {
	n := newNode(t)
	srv := httptest.NewServer(admin.New(n.svc))
	defer srv.Close()
	before := n.snapshot(t)
	var planned []admin.Planned
	require.Equal(t, 200, call(t, srv, "GET", "/api/dry-run?slots=4", "", nil, &planned))
	require.NotEmpty(t, planned)
	kinds := map[string]int{}
	for _, p := range planned {
		kinds[p.Change]++
		if p.Change == "assign" {
			require.NotEmpty(t, p.Sources)
		}
	}
	require.Positive(t, kinds["assign"])
	require.Equal(t, before, n.snapshot(t), "a dry run changes nothing")
}

func TestCommands(t *testing.T) {
	n := newNode(t)
	readOnly := httptest.NewServer(admin.New(n.svc))
	defer readOnly.Close()
	denied := errors.New("not an operator")
	srv := httptest.NewServer(admin.New(n.svc, admin.WithMaxBody(1024), admin.WithAuthorizer(func(r *http.Request, action string) error {
		if r.Header.Get("X-Operator") == "" && action != "status" {
			return denied
		}
		return nil
	})))
	defer srv.Close()
	op := map[string]string{"X-Operator": "alice"}

	before := n.snapshot(t)
	for _, c := range []struct {
		srv  *httptest.Server
		path string
		body string
		hdr  map[string]string
		code int
	}{
		{readOnly, "/api/commands/pause", `{"tenant":"acme"}`, nil, 403},                        // read-only
		{srv, "/api/commands/pause", `{"tenant":"acme"}`, nil, 403},                             // not authorized
		{srv, "/api/commands/explode", `{}`, op, 400},                                           // unknown action
		{srv, "/api/commands/pause", `{"tenant":`, op, 400},                                     // malformed
		{srv, "/api/commands/pause", `{"tenant":"acme","color":"red"}`, op, 400},                // unknown field
		{srv, "/api/commands/pause", `{"tenant":"` + strings.Repeat("a", 2000) + `"}`, op, 413}, // too large
		{srv, "/api/commands/pause", `{"tenant":"acme"}`, map[string]string{"X-Operator": "a", "Origin": "https://evil.example"}, 403},
		{srv, "/api/commands/pause", `{"tenant":"acme"}`, map[string]string{"X-Operator": "a", "Content-Type": "text/plain"}, 415},
		{srv, "/api/commands/set-max-failures", `{}`, op, 400},                    // missing field
		{srv, "/api/commands/cancel", `{"job":"no.such.job"}`, op, 409},           // refused by the state machine
		{srv, "/api/commands/pause", `{"tenant":"acme"} {"tenant":"x"}`, op, 400}, // two values
	} {
		var e struct{ Error string }
		require.Equal(t, c.code, call(t, c.srv, "POST", c.path, c.body, c.hdr, &e), "%s %s", c.path, c.body)
		require.NotEmpty(t, e.Error)
	}
	require.Equal(t, before, n.snapshot(t), "refused commands change nothing")
	require.Equal(t, 405, call(t, srv, "GET", "/api/commands/pause", "", op, nil))

	var res admin.CommandResult
	var e struct{ Error string }
	require.Equal(t, 200, call(t, srv, "POST", "/api/commands/pause", `{"tenant":"acme"}`, op, &res))
	require.Equal(t, "pause", res.Action)
	require.Positive(t, res.Index)
	var st admin.Status
	require.Equal(t, 200, call(t, srv, "GET", "/api/status", "", op, &st))
	require.Equal(t, []string{"acme at every level"}, st.Paused)
	require.Equal(t, 200, call(t, srv, "POST", "/api/commands/resume", `{"tenant":"acme"}`, map[string]string{"X-Operator": "a", "Origin": srv.URL}, &res))
	require.Equal(t, 200, call(t, srv, "GET", "/api/status", "", op, &st))
	require.Empty(t, st.Paused)
	// Every tenant is said with all; an empty tenant is the empty tenant.
	require.Equal(t, 200, call(t, srv, "POST", "/api/commands/pause", `{"all":true,"level":1}`, op, &res))
	require.Equal(t, 200, call(t, srv, "POST", "/api/commands/pause", `{"tenant":""}`, op, &res))
	require.Equal(t, 200, call(t, srv, "GET", "/api/status", "", op, &st))
	require.Len(t, st.Paused, 2)
	// pause and resume name a tenant or every tenant: nothing else pauses
	// or resumes, nothing changes.
	paused := n.snapshot(t)
	for _, c := range []struct{ action, body string }{
		{"pause", `{}`}, {"pause", `{"level":0}`}, {"resume", `{}`}, {"resume", `{"level":1}`},
		{"pause", `{"all":true,"tenant":"acme"}`}, {"resume", `{"all":true,"tenant":""}`},
		{"cancel", `{"job":"x","tenant":"acme"}`}, {"retry", `{"all":true}`}, {"requeue", `{"blocks":["seg-5"],"level":0}`},
	} {
		require.Equal(t, 400, call(t, srv, "POST", "/api/commands/"+c.action, c.body, op, &e), "%s %s", c.action, c.body)
		require.Contains(t, e.Error, c.action+": ")
	}
	require.Equal(t, paused, n.snapshot(t), "refused commands change nothing")
	require.Equal(t, 200, call(t, srv, "POST", "/api/commands/resume", `{"all":true,"level":1}`, op, &res))
	require.Equal(t, 200, call(t, srv, "POST", "/api/commands/resume", `{"tenant":""}`, op, &res))
	require.Equal(t, 200, call(t, srv, "GET", "/api/status", "", op, &st))
	require.Empty(t, st.Paused)

	// Marks: a block a job claims is refused with the job's name; a
	// queued one is quarantined with the operator's reason until a
	// requeue.
	require.Equal(t, 409, call(t, srv, "POST", "/api/commands/mark", `{"blocks":["seg-1"],"reason":"legal hold"}`, op, &e))
	require.Contains(t, e.Error, n.job.Job)
	require.Equal(t, 200, call(t, srv, "POST", "/api/commands/mark", `{"blocks":["seg-5"],"reason":"legal hold"}`, op, &res))
	require.Equal(t, 1, res.Count)
	var q admin.QuarantinePage
	require.Equal(t, 200, call(t, srv, "GET", "/api/quarantine", "", op, &q))
	require.Len(t, q.Blocks, 1)
	require.Equal(t, "seg-5", q.Blocks[0].ID)
	require.Contains(t, q.Blocks[0].Reason, "legal hold")
	require.Equal(t, 200, call(t, srv, "POST", "/api/commands/requeue", `{"blocks":["seg-5"]}`, op, &res))
	require.Equal(t, 1, res.Count)
}

// follower is a log that does not lead and knows the leader it names
// (none: an election is under way).
type follower struct {
	leader.Log
	id, addr string
}

func (f follower) Leader() leader.Leadership {
	return leader.Leadership{Term: 3, LeaderID: f.id, LeaderAddr: f.addr}
}

// A follower names the leader (421); without a known leader there is
// nowhere to send the caller (503).
func TestFollowerNamesTheLeader(t *testing.T) {
	n := newNode(t)
	for _, f := range []follower{{id: "n2", addr: "10.0.0.2:7000"}, {}} {
		f.Log = leadertest.NewMemLog(n.fsm)
		srv := httptest.NewServer(admin.New(leader.New(f, n.fsm), admin.WithAuthorizer(allow)))
		want := http.StatusMisdirectedRequest
		if f.id == "" {
			want = http.StatusServiceUnavailable
		}
		for _, c := range []struct{ method, path, body string }{
			{"GET", "/api/status", ""}, {"GET", "/api/jobs", ""}, {"GET", "/", ""},
			{"POST", "/api/commands/pause", `{"tenant":"acme"}`},
		} {
			var e struct {
				Error      string `json:"error"`
				LeaderID   string `json:"leader_id"`
				LeaderAddr string `json:"leader_addr"`
			}
			require.Equal(t, want, call(t, srv, c.method, c.path, c.body, nil, &e), c.path)
			require.Equal(t, f.id, e.LeaderID)
			require.Equal(t, f.addr, e.LeaderAddr)
			if f.id == "" {
				require.Contains(t, e.Error, "no known leader")
			}
		}
		srv.Close()
	}
}

func TestPage(t *testing.T) {
	n := newNode(t)
	srv := httptest.NewServer(admin.New(n.svc, admin.WithAuthorizer(allow)))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Type"), "text/html")
	page := string(body)
	for _, want := range []string{`<b id="leader">mem</b>`, `id="queued"`, `id="levels"`, `id="in-progress"`, n.job.Job, `<svg id="chart"`, `id="pause-form"`} {
		require.Contains(t, page, want)
	}
	ro := httptest.NewServer(admin.New(n.svc))
	defer ro.Close()
	resp, err = ro.Client().Get(ro.URL + "/")
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NotContains(t, string(body), `id="pause-form"`, "a read-only page offers no command")
}

// A command carries the caller's identity into the log: every replica
// logs who issued it.
func TestCommandIdentity(t *testing.T) {
	var logs bytes.Buffer
	cfg := raftfsm.DefaultConfig()
	fsm, err := raftfsm.New(cfg, raftfsm.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
	require.NoError(t, err)
	svc := leader.New(leadertest.NewMemLog(fsm), fsm)
	srv := httptest.NewServer(admin.New(svc, admin.WithAuthorizer(allow), admin.WithIdentity(func(r *http.Request) string {
		return r.Header.Get("X-Operator")
	})))
	defer srv.Close()
	var res admin.CommandResult
	require.Equal(t, 200, call(t, srv, "POST", "/api/commands/pause", `{"tenant":"acme"}`, map[string]string{"X-Operator": "alice"}, &res))
	require.Contains(t, logs.String(), `"by":"alice"`)
}

// The status page shows a multi-tenant level-0 job's tenant as
// "(multi-tenant)", not as an empty cell, and durations to the
// millisecond.
func TestMultiTenantJobsAndDurations(t *testing.T) {
	clock := testclock.New(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	svc, _ := newService(t, 2, leader.WithClock(clock.Now))
	ctx := context.Background()
	var blocks []ck.BlockMeta
	for i := range 3 {
		b := leadertest.Block("mt-"+strconv.Itoa(i), "", 0, int64(i)*1e9)
		b.Datasets = []ck.DatasetMeta{
			{Tenant: "acme", Name: "ds", Size: 50, Records: 5, MinTime: b.MinTime, MaxTime: b.MaxTime},
			{Tenant: "globex", Name: "ds", Size: 50, Records: 5, MinTime: b.MinTime, MaxTime: b.MaxTime},
		}
		blocks = append(blocks, b)
	}
	blocks = append(blocks, leadertest.Block("seg-1", "acme", 0, 0))
	_, err := svc.AddBlocks(ctx, blocks)
	require.NoError(t, err)
	clock.Advance(1640434394 * time.Nanosecond)
	resp, err := svc.Poll(ctx, &ck.PollRequest{WorkerID: "w1", Seq: 1, FreeSlots: 4})
	require.NoError(t, err)
	multi := ""
	for _, j := range resp.Jobs {
		if j.Plan != nil && j.Plan.Tenant == "" {
			multi = j.Job
		}
	}
	require.NotEmpty(t, multi, "a multi-tenant level-0 job is in progress")
	srv := httptest.NewServer(admin.New(svc))
	defer srv.Close()

	var st admin.Status
	require.Equal(t, 200, call(t, srv, "GET", "/api/status", "", nil, &st))
	require.NotEmpty(t, st.Levels)
	for _, l := range st.Levels {
		d, err := time.ParseDuration(l.Lag)
		require.NoError(t, err)
		require.Zero(t, d%time.Millisecond, "lag %s is shown to the millisecond", l.Lag)
	}
	var tenants []admin.Tenant
	require.Equal(t, 200, call(t, srv, "GET", "/api/tenants", "", nil, &tenants))
	lags := []string{}
	for _, tn := range tenants {
		lags = append(lags, tn.Lag)
	}
	require.Contains(t, lags, "1.64s")
	var j admin.Job
	require.Equal(t, 200, call(t, srv, "GET", "/api/jobs/"+multi, "", nil, &j))
	require.Empty(t, j.Tenant, "the API keeps the empty tenant's name")

	resp2, err := srv.Client().Get(srv.URL + "/")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp2.Body)
	resp2.Body.Close()
	page := string(body)
	require.Contains(t, page, `<td class="l">`+multi+`</td><td class="l">(multi-tenant)</td>`)
	require.NotContains(t, page, `<td class="l"></td><td>0</td>`, "no empty tenant cell")
	require.Contains(t, page, "<td>1.64s</td>")
	require.NotContains(t, page, "1.640434394s")
}
