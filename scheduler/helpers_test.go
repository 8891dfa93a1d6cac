package scheduler_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/scheduler"
)

// t0 is the log time the tests start at.
const t0 = int64(1_700_000_000) * int64(time.Second)

// harness drives a scheduler the way the state machine does: prepare a poll
// on a schedule, then apply its update at the next entry.
type harness struct {
	t   testing.TB
	s   *scheduler.Scheduler
	idx uint64
	now int64
}

func newHarness(t testing.TB, cfg scheduler.Config) *harness {
	t.Helper()
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	return &harness{t: t, s: s, now: t0}
}

func (h *harness) advance(d time.Duration) { h.now += int64(d) }

// entry returns the next entry.
func (h *harness) entry() ck.Entry {
	h.idx++
	return ck.Entry{Index: h.idx, Term: 1, Time: h.now}
}

// apply applies u at the next entry and returns the results.
func (h *harness) apply(u ck.PlanUpdate) []scheduler.Result {
	h.t.Helper()
	tx := h.s.Begin(h.entry(), h.now, u.TokenIndex)
	out := make([]scheduler.Result, len(u.Changes))
	for i := range u.Changes {
		out[i] = tx.Apply(&u.Changes[i])
	}
	return out
}

// applyAll applies u and requires every change to apply.
func (h *harness) applyAll(u ck.PlanUpdate) []scheduler.Result {
	h.t.Helper()
	rs := h.apply(u)
	for i, r := range rs {
		require.True(h.t, r.Applied, "change %d (%s %s): %s", i, u.Changes[i].Kind, u.Changes[i].Job, r.Why())
	}
	return rs
}

// poll prepares a poll the way the state machine does — reports, then
// assignments up to the capped free slots, then additions (evicting to make
// room) — applies it and returns the update and results.
func (h *harness) poll(worker string, updates []ck.StatusUpdate, free int32, adds ...ck.JobPlan) (ck.PlanUpdate, []scheduler.Result) {
	h.t.Helper()
	sc := h.s.Schedule(h.now)
	for i := range updates {
		sc.UpdateJob(worker, &updates[i])
	}
	for range sc.Capacity(free) {
		if !sc.AssignJob(worker) {
			break
		}
	}
	for _, p := range adds {
		if !sc.AddJob(p) && sc.EvictJob() {
			sc.AddJob(p)
		}
	}
	u := sc.Update()
	return u, h.applyAll(u)
}

// add adds jobs in one entry.
func (h *harness) add(plans ...ck.JobPlan) {
	h.t.Helper()
	sc := h.s.Schedule(h.now)
	for _, p := range plans {
		require.True(h.t, sc.AddJob(p), "add %s", p.Name)
	}
	h.applyAll(sc.Update())
}

// assign assigns up to n jobs to worker in one poll and returns their names.
func (h *harness) assign(worker string, n int) []string {
	h.t.Helper()
	_, rs := h.poll(worker, nil, int32(n))
	var names []string
	for _, r := range rs {
		if r.Kind == ck.ChangeAssign {
			names = append(names, r.After.Name)
		}
	}
	return names
}

// report builds a status update with the job's current token.
func (h *harness) report(name string, status ck.ReportStatus) ck.StatusUpdate {
	h.t.Helper()
	st, _, ok := h.s.Job(name)
	require.True(h.t, ok, "job %s", name)
	u := ck.StatusUpdate{Job: name, Token: st.Token, Status: status}
	if status == ck.ReportSuccess {
		u.Outputs = []ck.BlockMeta{{ID: name + "-out", Tenant: "t", Level: st.Level + 1}}
	}
	return u
}

func (h *harness) job(name string) ck.JobState {
	h.t.Helper()
	st, _, ok := h.s.Job(name)
	require.True(h.t, ok, "job %s", name)
	return st
}

func snapshot(t require.TestingT, s *scheduler.Scheduler) []byte {
	var buf bytes.Buffer
	require.NoError(t, s.Snapshot(&buf))
	return buf.Bytes()
}

func plan(name, tenant string, level uint32) ck.JobPlan {
	return ck.JobPlan{Name: name, Tenant: tenant, Level: level, Shard: 1, Sources: []string{name + "/src-1", name + "/src-2"}}
}

func plans(prefix, tenant string, level uint32, n int) []ck.JobPlan {
	out := make([]ck.JobPlan, n)
	for i := range out {
		out[i] = plan(fmt.Sprintf("%s-%02d", prefix, i), tenant, level)
	}
	return out
}

// testConfig is the default configuration without aging.
func testConfig() scheduler.Config {
	cfg := scheduler.DefaultConfig()
	cfg.AgingThreshold = nil
	return cfg
}
