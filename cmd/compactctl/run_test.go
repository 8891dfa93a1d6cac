package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/admin"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/internal/testclock"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/raftfsm"
)

// live is a live in-process node: a leader service over an in-memory log,
// its admin API mounted under /admin/ as a host would, requiring a token;
// its clock moves only when the test advances it.
type live struct {
	srv   *httptest.Server
	svc   *leader.Service
	store blockmerge.Store
	job   string // in progress
	clock *testclock.Clock
}

func liveNode(t *testing.T) (*httptest.Server, string) {
	l := newLive(t)
	return l.srv, l.job
}

func newLive(t *testing.T) *live {
	cfg := raftfsm.DefaultConfig()
	cfg.Planner.Levels[0].MaxBlocks = 2
	fsm, err := raftfsm.New(cfg)
	require.NoError(t, err)
	l := &live{clock: testclock.New(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))}
	svc := leader.New(leadertest.NewMemLog(fsm), fsm, leader.WithClock(l.clock.Now))
	ctx := context.Background()
	_, err = svc.AddBlocks(ctx, []ck.BlockMeta{leadertest.Block("seg-1", "acme", 0, 0), leadertest.Block("seg-2", "acme", 0, 1e9)})
	require.NoError(t, err)
	resp, err := svc.Poll(ctx, &ck.PollRequest{WorkerID: "w1-SECRETSECRETSECRET", Seq: 1, FreeSlots: 1})
	require.NoError(t, err)
	store := blockmerge.NewMemStore()
	h := admin.New(svc, admin.WithStore(store, blockmerge.ObjectLayout), admin.WithAuthorizer(func(r *http.Request, _ string) error {
		if r.Header.Get("Authorization") != "Bearer ops" {
			return http.ErrNoCookie
		}
		return nil
	}))
	mux := http.NewServeMux()
	mux.Handle("/admin/", http.StripPrefix("/admin", h))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	l.srv, l.svc, l.store, l.job = srv, svc, store, resp.Jobs[0].Job
	return l
}

func ctl(t *testing.T, srv *httptest.Server, args ...string) (string, error) {
	var out, errOut bytes.Buffer
	err := run(context.Background(), append([]string{"-addr", srv.URL + "/admin/", "-H", "Authorization: Bearer ops"}, args...), &out, &errOut)
	return out.String(), err
}

func TestCLI(t *testing.T) {
	srv, job := liveNode(t)

	out, err := ctl(t, srv, "status")
	require.NoError(t, err)
	require.Contains(t, out, "jobs in_progress  1")
	require.Regexp(t, `(?m)^leader\s+mem$`, out, "status names the leader")

	out, err = ctl(t, srv, "jobs", "-status", "in_progress")
	require.NoError(t, err)
	require.Contains(t, out, job)
	require.NotContains(t, out, "SECRETSECRET")

	out, err = ctl(t, srv, "-o", "json", "job", job)
	require.NoError(t, err)
	var j admin.Job
	require.NoError(t, json.Unmarshal([]byte(out), &j))
	require.Equal(t, []string{"seg-1", "seg-2"}, j.Sources)

	out, err = ctl(t, srv, "fsck")
	require.NoError(t, err)
	require.Contains(t, out, "orphans  0")
	out, err = ctl(t, srv, "job", job)
	require.NoError(t, err)
	require.Contains(t, out, "assigned", "the job's history")
	for _, args := range [][]string{{"tenants"}, {"quarantine"}, {"dry-run", "-slots", "2"}} {
		_, err := ctl(t, srv, args...)
		require.NoError(t, err, args)
	}

	out, err = ctl(t, srv, "pause", "-tenant", "acme")
	require.NoError(t, err)
	require.Contains(t, out, "pause applied at entry")
	out, err = ctl(t, srv, "-o", "json", "status")
	require.NoError(t, err)
	require.Contains(t, out, `"acme at every level"`)
	_, err = ctl(t, srv, "resume", "-tenant", "acme")
	require.NoError(t, err)
	_, err = ctl(t, srv, "pause", "-all", "-level", "2")
	require.NoError(t, err)
	all, err := ctl(t, srv, "-o", "json", "status")
	require.NoError(t, err)
	require.Contains(t, all, `"every tenant at level 2"`)
	_, err = ctl(t, srv, "resume", "-all", "-level", "2")
	require.NoError(t, err)
	_, err = ctl(t, srv, "set-max-failures", "5")
	require.NoError(t, err)

	// Errors say what the API said.
	_, err = ctl(t, srv, "cancel", "-job", "no.such.job")
	require.ErrorContains(t, err, "409")
	_, err = ctl(t, srv, "job", "no.such.job")
	require.ErrorContains(t, err, "404")
	_, err = ctl(t, srv, "explode")
	require.ErrorContains(t, err, "unknown command")
	var out2, errOut bytes.Buffer
	err = run(context.Background(), []string{"-addr", srv.URL + "/admin/", "status"}, &out2, &errOut)
	require.ErrorContains(t, err, "403", "no credentials")
	_, err = ctl(t, srv, "set-max-failures", "many")
	require.Error(t, err)
	require.True(t, strings.Contains(out, "acme"))
}

// A multi-tenant level-0 job shows its tenant as "(multi-tenant)", and
// durations are shown to the millisecond.
func TestCLIMultiTenantAndDurations(t *testing.T) {
	l := newLive(t)
	ctx := context.Background()
	var blocks []ck.BlockMeta
	for _, id := range []string{"mt-1", "mt-2"} {
		b := leadertest.Block(id, "", 1, 0)
		b.Datasets = []ck.DatasetMeta{
			{Tenant: "acme", Name: "ds", Size: 50, Records: 5, MinTime: b.MinTime, MaxTime: b.MaxTime},
			{Tenant: "globex", Name: "ds", Size: 50, Records: 5, MinTime: b.MinTime, MaxTime: b.MaxTime},
		}
		blocks = append(blocks, b)
	}
	blocks = append(blocks, leadertest.Block("seg-9", "globex", 2, 0))
	_, err := l.svc.AddBlocks(ctx, blocks)
	require.NoError(t, err)
	l.clock.Advance(1640434394 * time.Nanosecond)
	resp, err := l.svc.Poll(ctx, &ck.PollRequest{WorkerID: "w2", Seq: 1, FreeSlots: 1})
	require.NoError(t, err)
	require.Len(t, resp.Jobs, 1)
	require.Empty(t, resp.Jobs[0].Plan.Tenant, "a multi-tenant level-0 job")

	out, err := ctl(t, l.srv, "jobs", "-status", "in_progress")
	require.NoError(t, err)
	require.Regexp(t, resp.Jobs[0].Job+`\s+\(multi-tenant\)\s+0\s+in_progress`, out)
	out, err = ctl(t, l.srv, "job", resp.Jobs[0].Job)
	require.NoError(t, err)
	require.Regexp(t, `(?m)^tenant\s+\(multi-tenant\)$`, out)
	out, err = ctl(t, l.srv, "tenants")
	require.NoError(t, err)
	require.Regexp(t, `(?m)^globex\s+0\s+1\s+\d+\s+1\.64s\s`, out)
	require.NotContains(t, out, "1.640434394s")
}
