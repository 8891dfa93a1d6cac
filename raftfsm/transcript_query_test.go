package raftfsm_test

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/internal/transcript"
	"github.com/compactkit/compactkit/policy"
	"github.com/compactkit/compactkit/scheduler"
)

// runQuery runs the commands that read the state machine.
func (e *fsmEnv) runQuery(c *transcript.Command, b *strings.Builder) {
	n := e.n
	switch c.Name {
	case "policies":
		ps := n.f.Policies()
		fmt.Fprintf(b, "default: %s\n", policyString(ps.Default))
		for _, tp := range ps.Tenants {
			fmt.Fprintf(b, "%s: %s open=%t\n", tp.Tenant, policyString(tp.Policy), tp.Open)
		}
		for _, cn := range ps.CompactNow {
			fmt.Fprintf(b, "compact-now %+v before=%s\n", cn, e.rel(cn.Before))
		}
	case "pressure":
		st := n.f.Stats()
		for _, tp := range st.Pressure {
			fmt.Fprintf(b, "%s: %s\n", tp.Tenant, tp.Grade)
		}
		for _, sp := range st.ShardPressure {
			fmt.Fprintf(b, "%s shard %d: %s\n", sp.Tenant, sp.Shard, sp.Grade)
		}
		for _, a := range st.Alarms {
			fmt.Fprintf(b, "alarm %s level %d: oldest=%s since=%s\n", a.Tenant, a.Level, e.rel(a.Oldest), e.rel(a.Since))
		}
		if len(st.Pressure)+len(st.ShardPressure)+len(st.Alarms) == 0 {
			b.WriteString("none")
		}
	case "job":
		for _, a := range c.Positional() {
			js, plan, ok := n.f.Job(e.job(c, a))
			if !ok {
				fmt.Fprintf(b, "%s: unknown\n", a)
				continue
			}
			b.WriteString(e.state(js) + fmt.Sprintf(" sources=%d tombstones=%d", len(plan.Sources), len(plan.Tombstones)) + "\n")
			for _, ev := range js.History {
				fmt.Fprintf(b, "  %s tok=%d w=%s at=%s %s\n", ev.Kind, ev.Token, ev.Worker, e.rel(ev.At), quote(ev.Detail))
			}
		}
	case "jobs":
		jobs, _ := n.f.Jobs(scheduler.Filter{}, "", 0)
		for _, js := range jobs {
			b.WriteString(e.state(js) + "\n")
		}
	case "stats":
		st := n.f.Stats()
		fmt.Fprintf(b, "planner: queued=%d claimed=%d quarantined=%d\n", st.Planner.Queued, st.Planner.Claimed, st.Planner.Quarantined)
		for _, l := range st.Planner.Levels {
			if l.Queued != 0 {
				fmt.Fprintf(b, "planner level %d: queued=%d\n", l.Level, l.Queued)
			}
		}
		fmt.Fprintf(b, "scheduler: jobs=%d %+v\n", st.Scheduler.Jobs, st.Scheduler.Counters)
		fmt.Fprintf(b, "index: %+v\n", st.Index)
		b.WriteString("skipped changes:")
		skipped := false
		for r, k := range st.SkippedChanges {
			if k != 0 {
				fmt.Fprintf(b, " %s=%d", scheduler.Skip(r), k)
				skipped = true
			}
		}
		if !skipped {
			b.WriteString(" none")
		}
	case "index":
		view := n.f.Index()
		fmt.Fprintf(b, "live %d:", view.Len())
		for _, bl := range view.Blocks("", 0) {
			fmt.Fprintf(b, " %s", e.block(bl.ID))
		}
		for _, ti := range view.Tombstones(ck.Tombstone{}, 0) {
			fmt.Fprintf(b, "\ntombstone %s:%s", ti.Kind, e.target(ti.Target))
			if ti.Job != "" {
				fmt.Fprintf(b, " held by %s", e.alias(ti.Job))
			}
		}
		view.Close()
	case "quarantined":
		q, _ := n.f.Quarantined("", 0)
		for _, qb := range q {
			job := "-" // marked by an operator
			if qb.Job != "" {
				job = e.alias(qb.Job)
			}
			fmt.Fprintf(b, "%s job=%s %q\n", qb.ID, job, qb.Reason)
		}
	case "tenants":
		for _, ts := range n.f.Tenants() {
			fmt.Fprintf(b, "%+v\n", ts)
		}
	case "recorded":
		seq, _ := strconv.ParseUint(e.pos(c, 1), 10, 64)
		resp, ok := n.f.Recorded(e.pos(c, 0), seq)
		if !ok {
			b.WriteString("none")
			break
		}
		e.response(b, resp)
	}
}

// policyString formats a policy for transcripts.
func policyString(p policy.Tenant) string {
	s := fmt.Sprintf("class=%s cap=%d", p.Class, p.MaxInProgress)
	if p.MaxInProgressPerShard > 0 {
		s += fmt.Sprintf(" shard-cap=%d", p.MaxInProgressPerShard)
	}
	for _, w := range p.Run.Windows {
		s += fmt.Sprintf(" %s=%s", p.Run.Mode, w)
	}
	if p.NotBefore != 0 {
		s += fmt.Sprintf(" not-before=%s", time.Duration(p.NotBefore-t0))
	}
	if p.Pressure != (policy.Thresholds{}) {
		s += fmt.Sprintf(" pressure=%+v", p.Pressure)
	}
	if p.ShardPressure != (policy.Thresholds{}) {
		s += fmt.Sprintf(" shard-pressure=%+v", p.ShardPressure)
	}
	if p.StaleAfter != 0 {
		s += fmt.Sprintf(" stale=%s", p.StaleAfter)
	}
	for _, l := range p.Levels {
		s += fmt.Sprintf(" level%d={blocks=%d bytes=%d age=%s cross=%s}", l.Level, l.MaxBlocks, l.MaxBytes, l.MaxAge, l.CrossShard)
	}
	for _, lr := range p.LevelRuns {
		for _, w := range lr.Run.Windows {
			s += fmt.Sprintf(" level%d-%s=%s", lr.Level, lr.Run.Mode, w)
		}
	}
	return s
}
