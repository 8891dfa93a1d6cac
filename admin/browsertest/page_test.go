package browsertest

import (
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/admin"
	"github.com/compactkit/compactkit/internal/testclock"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/policy"
	"github.com/compactkit/compactkit/raftfsm"
)

var screenshot = flag.String("screenshot", "", "write a PNG of the status page to this path")

// browser finds a Chromium-family browser.
func browser(t *testing.T) string {
	if p := os.Getenv("CHROME"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no Chromium-family browser found (CI installs Debian's chromium; set $CHROME to its path)"
	if os.Getenv("COMPACTKIT_REQUIRE_BROWSER") != "" {
		t.Fatal(msg)
	}
	// Skipped, saying so, only on a machine without a browser and outside
	// CI: CI installs chromium and sets COMPACTKIT_REQUIRE_BROWSER, which
	// makes a missing browser a failure above.
	t.Skip("SKIPPED, no browser: " + msg)
	return ""
}

// newService returns a leader service over an in-memory log, whose state
// machine plans level-0 jobs of maxBlocks blocks (0: the default number).
func newService(t *testing.T, maxBlocks int, opts ...leader.Option) *leader.Service {
	cfg := raftfsm.DefaultConfig()
	if maxBlocks > 0 {
		cfg.Planner.Levels[0].MaxBlocks = maxBlocks
	}
	fsm, err := raftfsm.New(cfg)
	require.NoError(t, err)
	return leader.New(leadertest.NewMemLog(fsm), fsm, opts...)
}

// TestStatusPageInBrowser loads the status page of a live node in headless
// Chromium under the page's Content-Security-Policy: no console error and
// no CSP violation, the queued count the API reports, and a pause issued
// from the page's form that the state machine then shows.
func TestStatusPageInBrowser(t *testing.T) {
	exe := browser(t)
	svc := newService(t, 2)
	ctx := context.Background()
	var blocks []ck.BlockMeta
	for i := range 9 {
		blocks = append(blocks, leadertest.Block("seg-"+strconv.Itoa(i), []string{"acme", "globex", "initech"}[i%3], uint32(i%2), int64(i)*1e9))
	}
	for i := range 2 { // multi-tenant level-0 segments
		b := leadertest.Block("multi-"+strconv.Itoa(i), "", 0, int64(i)*1e9)
		b.Datasets = []ck.DatasetMeta{
			{Tenant: "acme", Name: "ds", Size: 50, Records: 5, MinTime: b.MinTime, MaxTime: b.MaxTime},
			{Tenant: "globex", Name: "ds", Size: 50, Records: 5, MinTime: b.MinTime, MaxTime: b.MaxTime},
		}
		blocks = append(blocks, b)
	}
	_, err := svc.AddBlocks(ctx, blocks)
	require.NoError(t, err)
	_, err = svc.Poll(ctx, &ck.PollRequest{WorkerID: "w1-SECRETSECRETSECRET", Seq: 1, FreeSlots: 3})
	require.NoError(t, err)
	srv := httptest.NewServer(admin.New(svc, admin.WithAuthorizer(func(*http.Request, string) error { return nil })))
	defer srv.Close()
	// A policy, for the picture: initech's queue is over its slow
	// threshold.
	var res admin.CommandResult
	api(t, srv, "/api/commands/policy-set", `{"tenant":"initech","policy":{"class":"low","max_in_progress":1,"pressure":{"slow_blocks":{"on":2,"off":1}}}}`, &res)
	bctx, problems := launch(t, exe)

	var queued, inProgress, job string
	require.NoError(t, chromedp.Run(bctx,
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible("#queued", chromedp.ByID),
		chromedp.Text("#queued", &queued, chromedp.ByID),
		chromedp.Text("#jobs-in_progress", &inProgress, chromedp.ByID),
		chromedp.Text("#in-progress", &job, chromedp.ByID),
	))
	resp, err := http.Get(srv.URL + "/")
	require.NoError(t, err)
	resp.Body.Close()
	require.Contains(t, resp.Header.Get("Content-Security-Policy"), "script-src 'sha256-", "the page ran under its CSP")
	resp, err = http.Get(srv.URL + "/api/status")
	require.NoError(t, err)
	var st admin.Status
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	resp.Body.Close()
	require.Equal(t, strconv.Itoa(st.Queued), queued, "the page shows the API's numbers")
	require.Equal(t, strconv.Itoa(st.Jobs["in_progress"]), inProgress)
	require.NotContains(t, job, "SECRETSECRET", "workers are shown by public name")
	require.Contains(t, job, ck.PublicWorkerName("w1-SECRETSECRETSECRET"))
	require.Contains(t, job, "(multi-tenant)", "a multi-tenant job shows a tenant")

	if *screenshot != "" {
		var png []byte
		require.NoError(t, chromedp.Run(bctx, chromedp.FullScreenshot(&png, 100)))
		require.NoError(t, os.WriteFile(*screenshot, png, 0o644))
	}

	var result string
	require.NoError(t, chromedp.Run(bctx,
		chromedp.SendKeys("#pause-tenant", "acme", chromedp.ByID),
		chromedp.Click("#pause-button", chromedp.ByID),
		chromedp.WaitVisible(`//span[@id="command-result" and contains(., "paused acme")]`),
		chromedp.Text("#command-result", &result, chromedp.ByID),
	))
	require.Contains(t, result, "paused acme")
	paused := svc.FSM().Stats().Scheduler.Paused
	require.Len(t, paused, 1, "the pause issued from the page took effect")
	require.Equal(t, "acme", paused[0].Tenant)

	require.Empty(t, problems(), "console errors or exceptions")
}

// reportCSP is evaluated in every document before its own scripts: it
// turns each Content-Security-Policy violation into a console error.
const reportCSP = `document.addEventListener("securitypolicyviolation", e =>
  console.error("CSP violation: " + e.violatedDirective + " blocked " + (e.blockedURI || "inline") + " at line " + e.lineNumber));`

// launch starts headless Chromium for the test, and returns its context
// and a function listing the console errors, warnings and exceptions seen,
// the browser's own error log entries and every Content-Security-Policy
// violation.
func launch(t *testing.T, exe string) (context.Context, func() []string) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(1200, 1400))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	bctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	bctx, cancel = context.WithTimeout(bctx, 60*time.Second) // a browser that hangs fails the test
	t.Cleanup(cancel)

	var mu sync.Mutex
	var problems []string
	chromedp.ListenTarget(bctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.APITypeError || e.Type == runtime.APITypeWarning {
				var args []string
				for _, a := range e.Args {
					args = append(args, string(a.Value))
				}
				problems = append(problems, string(e.Type)+": "+strings.Join(args, " "))
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+e.ExceptionDetails.Error())
		case *cdplog.EventEntryAdded:
			// Network entries are the answers of commands refused on
			// purpose; the tests check those answers themselves.
			if e.Entry.Source != cdplog.SourceNetwork && (e.Entry.Level == cdplog.LevelError || e.Entry.Level == cdplog.LevelWarning) {
				problems = append(problems, "log "+string(e.Entry.Source)+": "+e.Entry.Text)
			}
		}
	})
	require.NoError(t, chromedp.Run(bctx, cdplog.Enable(), chromedp.ActionFunc(func(ctx context.Context) error {
		_, err := page.AddScriptToEvaluateOnNewDocument(reportCSP).Do(ctx)
		return err
	})))
	return bctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(problems)
	}
}

// api calls the admin API: a GET, or a POST of body, decoding the answer
// into out; it fails the test unless the status is 200.
func api(t *testing.T, srv *httptest.Server, path, body string, out any) {
	t.Helper()
	var resp *http.Response
	var err error
	if body == "" {
		resp, err = http.Get(srv.URL + path)
	} else {
		resp, err = http.Post(srv.URL+path, "application/json", strings.NewReader(body))
	}
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, path)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(out))
}

// rows reads a table of the page as its cells' text, row by row, header
// row first.
func rows(id string, out *[][]string) chromedp.Action {
	return chromedp.Evaluate(`Array.from(document.querySelectorAll("#`+id+` tr")).map(r => Array.from(r.cells).map(c => c.textContent.trim()))`, out)
}

// TestPoliciesInBrowser sets scheduling policies through the API, then
// reads the status page in headless Chromium: the Policies table shows the
// default and each tenant's policy as the API returns it, open or closed
// at the log's time, and the backpressure and staleness tables show the
// grades and alarms of the API's status.
func TestPoliciesInBrowser(t *testing.T) {
	exe := browser(t)
	clock := testclock.New(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)) // a Wednesday, noon
	svc := newService(t, 8, leader.WithClock(clock.Now))
	var blocks []ck.BlockMeta
	for i, tenant := range []string{"acme", "acme", "acme", "globex", "initech", "initech"} {
		blocks = append(blocks, leadertest.Block("seg-"+strconv.Itoa(i), tenant, 0, int64(i)*1e9))
	}
	_, err := svc.AddBlocks(context.Background(), blocks)
	require.NoError(t, err)
	srv := httptest.NewServer(admin.New(svc, admin.WithAuthorizer(func(*http.Request, string) error { return nil })))
	defer srv.Close()

	var res admin.CommandResult
	api(t, srv, "/api/commands/policy-set", `{"tenant":"acme","policy":{"class":"low","max_in_progress":1,
		"run":{"mode":"only-in","windows":[{"days":["Mon","Tue"],"start":"22:00","end":"06:00","offset_minutes":60}]},
		"pressure":{"slow_blocks":{"on":2,"off":1},"stop_blocks":{"on":3,"off":2}},"stale_after":"1m"}}`, &res)
	api(t, srv, "/api/commands/policy-set", `{"tenant":"initech","policy":{"pressure":{"stop_blocks":{"on":2,"off":1}},
		"levels":[{"level":0,"max_blocks":40,"max_age":"5m"},{"level":1,"cross_shard":"on"}]}}`, &res)
	api(t, srv, "/api/commands/policy-set", `{"all":true,"policy":{"class":"high","not_before":"2026-11-25T00:00:00Z"}}`, &res)
	clock.Advance(2 * time.Minute) // acme's oldest block waits past its threshold
	api(t, srv, "/api/commands/compact-now", `{"tenant":"globex","level":0}`, &res)

	bctx, problems := launch(t, exe)
	var policies, pressure, alarms [][]string
	var compactNow string
	require.NoError(t, chromedp.Run(bctx,
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible("#policies", chromedp.ByID),
		rows("policies", &policies),
		rows("pressure", &pressure),
		rows("alarms", &alarms),
		chromedp.Text("#compact-now", &compactNow, chromedp.ByID),
	))

	// The page shows what the API returns.
	var ps admin.Policies
	api(t, srv, "/api/policies", "", &ps)
	require.Len(t, ps.Tenants, 2)
	require.Equal(t, [][]string{
		{"tenant", "class", "cap", "run", "not before", "backpressure (on/off)", "stale after", "batching", "new jobs"},
		{"default", "high", "none", "any time", "2026-11-25T00:00:00Z", "—", "—", "—", "open"},
		{"acme", "low", "1", "only-in Mon,Tue 22:00-06:00 UTC+01:00", "—", "slow 2/1, stop 3/2", "1m0s", "—", "closed"},
		{"initech", "medium", "none", "any time", "—", "stop 2/1", "—", "0:blocks=40,age=5m0s 1:cross=on", "open"},
	}, policies)
	require.Equal(t, policy.High, ps.Default.Policy.Class)
	require.True(t, ps.Default.Open)
	require.Equal(t, "acme", ps.Tenants[0].Tenant)
	require.False(t, ps.Tenants[0].Open, "Wednesday noon is outside Mon,Tue 22:00-06:00")
	require.Equal(t, time.Minute, ps.Tenants[0].Policy.StaleAfter)
	require.True(t, ps.Tenants[1].Open)
	require.Contains(t, compactNow, `tenant "globex" at level 0`)

	var st admin.Status
	api(t, srv, "/api/status", "", &st)
	require.Equal(t, []admin.TenantGrade{{Tenant: "acme", Grade: "slow"}, {Tenant: "initech", Grade: "stop"}}, st.Pressure)
	require.Equal(t, [][]string{{"tenant", "grade"}, {"acme", "slow"}, {"initech", "stop"}}, pressure)
	require.Equal(t, []admin.StaleAlarm{{Tenant: "acme", Level: 0, Oldest: "2026-11-25T12:00:00Z", Since: "2026-11-25T12:01:00Z", For: "1m0s"}}, st.Alarms)
	require.Equal(t, [][]string{
		{"tenant", "level", "oldest queued", "alarm since", "for"},
		{"acme", "0", "2026-11-25T12:00:00Z", "2026-11-25T12:01:00Z", "1m0s"},
	}, alarms)
	require.Empty(t, problems(), "console errors or exceptions")
}

// TestPolicyFormInBrowser sets and clears policies from the status page's
// form in headless Chromium: the state machine applies what the form sent
// (read back through the API), a malformed or refused policy shows its
// error and changes nothing, and the last result survives a reload.
func TestPolicyFormInBrowser(t *testing.T) {
	exe := browser(t)
	svc := newService(t, 0)
	_, err := svc.AddBlocks(context.Background(), []ck.BlockMeta{leadertest.Block("seg-0", "acme", 0, 0)})
	require.NoError(t, err)
	srv := httptest.NewServer(admin.New(svc, admin.WithAuthorizer(func(*http.Request, string) error { return nil })))
	defer srv.Close()
	bctx, problems := launch(t, exe)
	policies := func() admin.Policies {
		var ps admin.Policies
		api(t, srv, "/api/policies", "", &ps)
		return ps
	}
	// submit fills the form (an empty field is left as it is), presses a
	// button and waits for the result that contains want.
	submit := func(tenant, js, button, want string) string {
		var fill []chromedp.Action
		if tenant != "" {
			fill = append(fill, chromedp.SetValue("#policy-tenant", tenant, chromedp.ByID))
		}
		if js != "" {
			fill = append(fill, chromedp.SetValue("#policy-json", js, chromedp.ByID))
		}
		var result string
		require.NoError(t, chromedp.Run(bctx, append(fill,
			chromedp.Click(button, chromedp.ByID),
			chromedp.WaitVisible(`//span[@id="policy-result" and contains(., `+xpathString(want)+`)]`),
			chromedp.Text("#policy-result", &result, chromedp.ByID),
		)...))
		return result
	}
	require.NoError(t, chromedp.Run(bctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible("#policy-form", chromedp.ByID)))

	got := submit("acme", `{"class": "low", "max_in_progress": 2, "max_in_progress_per_shard": 1}`, "#policy-set-button", `set "acme"`)
	require.Regexp(t, `^set "acme" \(entry \d+\)$`, got)
	ps := policies()
	require.Len(t, ps.Tenants, 1)
	require.Equal(t, "acme", ps.Tenants[0].Tenant)
	require.Equal(t, policy.Tenant{Class: policy.Low, MaxInProgress: 2, MaxInProgressPerShard: 1}, ps.Tenants[0].Policy)

	// Malformed JSON never leaves the page; an unknown class is refused
	// by the API: both say why, and nothing changes.
	got = submit("acme", `{"class": `, "#policy-set-button", "policy: ")
	require.Contains(t, got, "JSON")
	got = submit("acme", `{"class": "urgent"}`, "#policy-set-button", "urgent")
	require.NotContains(t, got, "set ")
	require.Equal(t, ps, policies(), "a refused policy changes nothing")

	// The default, then clearing acme's own.
	require.NoError(t, chromedp.Run(bctx, chromedp.Click("#policy-all", chromedp.ByID)))
	submit("", `{"class": "high"}`, "#policy-set-button", "set the default")
	require.Equal(t, policy.High, policies().Default.Policy.Class)
	// A command that succeeds resets its form (the page refreshes again).
	var all bool
	var tenant string
	require.NoError(t, chromedp.Run(bctx,
		chromedp.Evaluate(`document.getElementById("policy-all").checked`, &all),
		chromedp.Value("#policy-tenant", &tenant, chromedp.ByID),
	))
	require.False(t, all)
	require.Empty(t, tenant)
	submit("acme", "", "#policy-clear-button", `cleared "acme"`)
	require.Empty(t, policies().Tenants)

	// The result stays on the page across its refresh.
	var after string
	require.NoError(t, chromedp.Run(bctx,
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(`//span[@id="policy-result" and contains(., 'cleared "acme"')]`),
		chromedp.Text("#policy-result", &after, chromedp.ByID),
	))
	require.Contains(t, after, `cleared "acme"`)
	require.Empty(t, problems(), "console errors or exceptions")
}

// xpathString quotes s as an XPath string literal (which has no escapes:
// it is quoted with whichever quote s does not contain).
func xpathString(s string) string {
	if !strings.Contains(s, "'") {
		return "'" + s + "'"
	}
	return `"` + s + `"`
}
