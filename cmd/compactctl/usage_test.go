package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/compactkit/compactkit/admin"
)

// flagNames lists the flags a usage message of the flag package names.
func flagNames(usage string) []string {
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^\s+-([a-zA-Z][\w-]*)`).FindAllStringSubmatch(usage, -1) {
		names = append(names, m[1])
	}
	return names
}

// -h prints the usage and is no error; the usage and the package
// documentation list every flag of every command.
func TestUsageListsEveryFlag(t *testing.T) {
	doc, err := os.ReadFile("main.go")
	require.NoError(t, err)
	for _, args := range [][]string{
		{}, {"jobs"}, {"dry-run"}, {"pause"}, {"resume"}, {"retry"}, {"cancel"}, {"mark"}, {"requeue"},
		{"set-max-failures"}, {"policy", "set"}, {"policy", "clear"}, {"compact-now"},
	} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), append(args, "-h"), &out, &errOut)
		require.ErrorIs(t, err, flag.ErrHelp, args)
		names := flagNames(errOut.String())
		if len(args) == 0 {
			require.Contains(t, errOut.String(), usage, "-h prints the commands")
			require.Subset(t, names, []string{"addr", "o", "H"})
		}
		for _, name := range names {
			re := regexp.MustCompile(`[\[( |]-` + regexp.QuoteMeta(name) + `[ \]):=]`)
			require.Regexp(t, re, synopsis+"\n"+usage, "%v: the usage lists -%s", args, name)
			require.Regexp(t, re, string(doc), "%v: the package documentation lists -%s", args, name)
		}
	}

	require.Contains(t, string(doc), synopsis)
	require.Contains(t, usage, "-shard-cap")
}

// pause and resume name a tenant or every tenant: without -tenant or
// -all nothing is sent.
func TestPauseNeedsTenantOrAll(t *testing.T) {
	l := newLive(t)
	for _, args := range [][]string{
		{"pause"}, {"pause", "-level", "0"}, {"resume"}, {"resume", "-level", "1"},
		{"pause", "-tenant", "acme", "-all"}, {"pause", "-job", "x", "-all"},
	} {
		_, err := ctl(t, l.srv, args...)
		require.Error(t, err, args)
	}
	require.Empty(t, l.svc.FSM().Stats().Scheduler.Paused, "nothing was paused")
	_, err := ctl(t, l.srv, "pause", "-tenant", "", "-level", "0")
	require.NoError(t, err)
	paused := l.svc.FSM().Stats().Scheduler.Paused
	require.Len(t, paused, 1)
	require.Equal(t, "", paused[0].Tenant, "-tenant \"\" is the empty tenant")
	require.False(t, paused[0].AllTenants)
}

// compactctl as a process: -h exits 0 and lists every flag; pause without
// -tenant or -all exits 1 and pauses nothing; fsck-remove with a key the
// API refuses exits 1 and removes nothing.
func TestProcess(t *testing.T) {
	if testing.Short() {
		// Only under -short: it builds compactctl with go build. The
		// README's test command and CI run it.
		t.Skip("builds compactctl")
	}
	bin := filepath.Join(t.TempDir(), "compactctl")
	build := exec.Command("go", "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))
	l := newLive(t)
	ctx := context.Background()
	require.NoError(t, l.store.Put(ctx, "blocks/stray-1", strings.NewReader("lost")))
	cli := func(args ...string) (string, int) {
		cmd := exec.Command(bin, append([]string{"-addr", l.srv.URL + "/admin/", "-H", "Authorization: Bearer ops"}, args...)...)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return string(out), ee.ExitCode()
		}
		require.NoError(t, err)
		return string(out), 0
	}

	out1, code := cli("-h")
	require.Equal(t, 0, code, out1)
	require.Contains(t, out1, "-shard-cap")
	out1, code = cli("policy", "set", "-h")
	require.Equal(t, 0, code, out1)
	require.Contains(t, out1, "-shard-cap")

	for _, args := range [][]string{{"pause"}, {"pause", "-level", "0"}, {"resume"}} {
		out1, code = cli(args...)
		require.Equal(t, 1, code, "%v: %s", args, out1)
		require.Contains(t, out1, "want -tenant T or -all")
	}
	require.Empty(t, l.svc.FSM().Stats().Scheduler.Paused, "nothing was paused")
	out1, code = cli("pause", "-all", "-level", "0")
	require.Equal(t, 0, code, out1)
	out1, code = cli("-o", "json", "status")
	require.Equal(t, 0, code, out1)
	var st admin.Status
	require.NoError(t, json.Unmarshal([]byte(out1), &st))
	require.Equal(t, []string{"every tenant at level 0"}, st.Paused)

	out1, code = cli("fsck-remove", "blocks/stray-1", "../etc")
	require.Equal(t, 1, code, out1)
	require.Contains(t, out1, "400")
	ok, err := l.store.Exists(ctx, "blocks/stray-1")
	require.NoError(t, err)
	require.True(t, ok, "a refused request removes nothing")
	out1, code = cli("fsck-remove", "blocks/stray-1", "blocks/never-existed")
	require.Equal(t, 0, code, out1)
	require.Regexp(t, `removed\s+blocks/stray-1`, out1)
	require.Regexp(t, `kept \(not a listed orphan\)\s+blocks/never-existed`, out1)
}

// An fsck-remove that failed part way says what it removed.
func TestRemovedBeforeFailure(t *testing.T) {
	e := &apiError{Status: 500}
	require.NoError(t, json.Unmarshal([]byte(`{"removed":["blocks/a","blocks/b"],"kept":[],"error":"fsck-remove \"blocks/c\": store unavailable"}`), e))
	require.Equal(t, `500 Internal Server Error: fsck-remove "blocks/c": store unavailable (removed before the failure: blocks/a blocks/b)`, e.Error())
}
