package browsertest

import (
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/admin"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
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

// TestStatusPageInBrowser loads the status page of a live node in headless
// Chromium: no console error, the queued count the API reports, and a
// pause issued from the page's form that the state machine then shows.
func TestStatusPageInBrowser(t *testing.T) {
	exe := browser(t)
	cfg := raftfsm.DefaultConfig()
	cfg.Planner.Levels[0].MaxBlocks = 2
	fsm, err := raftfsm.New(cfg)
	require.NoError(t, err)
	svc := leader.New(leadertest.NewMemLog(fsm), fsm)
	ctx := context.Background()
	var blocks []ck.BlockMeta
	for i := range 9 {
		blocks = append(blocks, leadertest.Block("seg-"+strconv.Itoa(i), []string{"acme", "globex", "initech"}[i%3], uint32(i%2), int64(i)*1e9))
	}
	_, err = svc.AddBlocks(ctx, blocks)
	require.NoError(t, err)
	_, err = svc.Poll(ctx, &ck.PollRequest{WorkerID: "w1-SECRETSECRETSECRET", Seq: 1, FreeSlots: 2})
	require.NoError(t, err)
	srv := httptest.NewServer(admin.New(svc, admin.WithAuthorizer(func(*http.Request, string) error { return nil })))
	defer srv.Close()

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(1200, 1400))
	actx, cancel := chromedp.NewExecAllocator(ctx, opts...)
	defer cancel()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	bctx, cancel = context.WithTimeout(bctx, 60*time.Second) // a browser that hangs fails the test
	defer cancel()

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
		}
	})

	var queued, inProgress, job string
	require.NoError(t, chromedp.Run(bctx,
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible("#queued", chromedp.ByID),
		chromedp.Text("#queued", &queued, chromedp.ByID),
		chromedp.Text("#jobs-in_progress", &inProgress, chromedp.ByID),
		chromedp.Text("#in-progress", &job, chromedp.ByID),
	))
	resp, err := http.Get(srv.URL + "/api/status")
	require.NoError(t, err)
	var st admin.Status
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	resp.Body.Close()
	require.Equal(t, strconv.Itoa(st.Queued), queued, "the page shows the API's numbers")
	require.Equal(t, strconv.Itoa(st.Jobs["in_progress"]), inProgress)
	require.NotContains(t, job, "SECRETSECRET", "workers are shown by public name")
	require.Contains(t, job, ck.PublicWorkerName("w1-SECRETSECRETSECRET"))

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

	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, problems, "console errors or exceptions")
}
