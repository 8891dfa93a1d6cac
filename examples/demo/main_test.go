package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/compactkit/compactkit/admin"
	"github.com/compactkit/compactkit/blockmerge/objstore/versitytest"
	"github.com/compactkit/compactkit/examples/internal/demo"
)

// TestDemo runs the demo small, with one worker cut off
// halfway, and asserts the verification and the report.
func TestDemo(t *testing.T) {
	cfg := config{Run: demo.SmallConfig(120, 4, 2, 8, 3), Chart: filepath.Join(t.TempDir(), "chart.svg")}
	cfg.Run.Dir = t.TempDir()
	cfg.Run.PartitionWorkers = 1
	rep, out := runSmall(t, cfg)
	for _, name := range []string{"records", "checksum", "exactly once", "no source left", "no orphan", "index = object store", "nothing pending"} {
		found := false
		for _, c := range rep.Verification.Checks {
			found = found || (c.Name == name && c.OK)
		}
		assert.True(t, found, "check %q passed", name)
	}
	assert.Equal(t, 120, rep.Segments)
	assert.Positive(t, rep.Records)
	assert.Equal(t, rep.Records, rep.Verification.Records)
	assert.Equal(t, rep.Checksum, rep.Verification.Checksum)
	assert.Less(t, rep.ReadAmpAfter, rep.ReadAmpBefore, "compaction reduced read amplification")
	assert.Positive(t, rep.Scheduler.Completed)
	if rep.Workers.JobsLost > 0 {
		assert.Positive(t, rep.Scheduler.Reassigned, "the cut-off worker's jobs were reassigned")
	}
	after := 0
	for _, l := range rep.After {
		after += l.Blocks
		assert.Equal(t, l.Blocks, l.Objects)
	}
	assert.Less(t, after, rep.Segments)
	assert.Contains(t, out, "verification passed")
	assert.Contains(t, out, "read amplification")
	assert.Contains(t, out, "status page: http://", "the demo prints the status page's address")
	assert.Regexp(t, `go run \./cmd/compactctl -addr http://127\.0\.0\.1:\d+/admin/ status`, out, "the compactctl command as the README writes it")
	st, err := os.Stat(cfg.Chart)
	require.NoError(t, err)
	assert.Positive(t, st.Size())
	entries, err := os.ReadDir(cfg.Run.Dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "the temporary store is removed without -keep")
}

// TestDemoOnS3 runs the demo's whole worker path — ingest,
// merges, cleanup, verification — on a real S3 server (versitygw).
func TestDemoOnS3(t *testing.T) {
	store, _ := versitytest.Start(t).ConditionalStore(t, 5<<20)
	cfg := config{Run: demo.SmallConfig(60, 2, 2, 8, 2), Store: store.Store}
	rep, out := runSmall(t, cfg)
	assert.Positive(t, rep.Scheduler.Completed)
	assert.Contains(t, out, "verification passed")
}

// runSmall runs the demo and requires its verification to pass.
func runSmall(t *testing.T, cfg config) (*demo.Report, string) {
	t.Helper()
	return demo.RunVerified(t, 60*time.Second, run, cfg)
}

// TestDemoServe: with Serve the demo keeps its endpoints up after the run,
// showing the final state, until its context ends.
func TestDemoServe(t *testing.T) {
	cfg := config{Run: demo.SmallConfig(60, 2, 2, 8, 2), Serve: true}
	cfg.Run.Dir = t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a demo that hangs ends the scan below
	defer cancel()
	pr, pw := io.Pipe()
	type result struct {
		rep *demo.Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := run(ctx, cfg, pw)
		pw.Close()
		done <- result{rep, err}
	}()
	// The demo's output, line by line, until it says it keeps serving and
	// how to reach it; the rest is drained.
	var out strings.Builder
	base := ""
	serving := regexp.MustCompile(`^\s+go run \./cmd/compactctl -addr (http://\S+/admin/) status$`)
	lines := bufio.NewScanner(pr)
	for base == "" && lines.Scan() {
		line := lines.Text()
		out.WriteString(line + "\n")
		if m := serving.FindStringSubmatch(line); m != nil {
			base = m[1]
		}
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	require.NotEmpty(t, base, "the demo says it keeps serving: %s", out.String())
	require.Contains(t, out.String(), "serving the final state until interrupted")
	assert.Contains(t, out.String(), "verification passed")

	resp, err := http.Get(base + "api/status")
	require.NoError(t, err)
	var st admin.Status
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.True(t, st.Drained, "the final state is served")
	select {
	case r := <-done:
		t.Fatalf("the demo returned while it should serve: %v", r.err)
	case <-time.After(200 * time.Millisecond):
	}
	cancel()
	r := <-done
	require.NoError(t, r.err)
	require.True(t, r.rep.Verification.OK())
}
