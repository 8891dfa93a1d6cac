package scheduler_test

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/internal/transcript"
	"github.com/compactkit/compactkit/scheduler"
)

// runQuery runs the commands that read the scheduler and compare its snapshots.
func (e *env) runQuery(c *transcript.Command, b *strings.Builder) {
	switch c.Name {
	case "job":
		for _, name := range c.Positional() {
			st, _, ok := e.s.Job(name)
			if !ok {
				fmt.Fprintf(b, "%s: unknown\n", name)
				continue
			}
			b.WriteString(e.state(st) + "\n")
		}
	case "jobs":
		e.jobs(c, b)
	case "list":
		cursor := c.Str("cursor", "")
		if cursor == "next" {
			cursor = e.next
		}
		page, next := e.s.List(scheduler.Filter{}, cursor, int(c.Int("limit", 0)))
		e.next = next
		names := []string{"(none)"}
		for i, st := range page {
			if i == 0 {
				names = nil
			}
			names = append(names, st.Name)
		}
		fmt.Fprintf(b, "%s\nnext=%s", strings.Join(names, " "), next)
	case "stats":
		e.stats(b)
	case "paused":
		level, _ := strconv.ParseUint(e.pos(c, 1), 10, 32)
		fmt.Fprintf(b, "%t", e.s.Paused(e.pos(c, 0), uint32(level)))
	case "tenant":
		for _, t := range c.Positional() {
			p := e.s.Limits(t)
			fmt.Fprintf(b, "%s: rank=%d cap=%d", t, p.Rank, p.MaxInProgress)
			if p.MaxPerShard > 0 {
				fmt.Fprintf(b, " shardcap=%d", p.MaxPerShard)
			}
			fmt.Fprintf(b, " closed=%t in_progress=%d capped=%t\n", p.Closed, e.s.InProgress(t), e.s.Capped(t))
		}
	case "shard":
		shard, err := strconv.ParseUint(e.pos(c, 1), 10, 32)
		if err != nil {
			c.Fatalf("shard: %v", err)
		}
		t := e.pos(c, 0)
		fmt.Fprintf(b, "%s/%d: in_progress=%d capped=%t", t, shard, e.s.ShardInProgress(t, uint32(shard)), e.s.ShardCapped(t, uint32(shard)))
	case "owns":
		// Reported by the job's worker, or by worker=W.
		tok, _ := strconv.ParseUint(e.pos(c, 1), 10, 64)
		st, _, _ := e.s.Job(e.pos(c, 0))
		ok := e.s.Schedule(e.now).UpdateJob(c.Str("worker", st.Worker), &ck.StatusUpdate{Job: e.pos(c, 0), Token: fencing.Token(tok), Status: ck.ReportInProgress})
		fmt.Fprintf(b, "%t", ok)
	case "completed":
		tok, ok := e.s.CompletedToken(e.pos(c, 0))
		fmt.Fprintf(b, "%t token=%d", ok, tok)
	case "entry":
		fmt.Fprintf(b, "index=%d", e.entry().Index)
	case "mark":
		e.marks[e.pos(c, 0)] = e.snapshot()
	case "unchanged":
		if bytes.Equal(e.marks[e.pos(c, 0)], e.snapshot()) {
			b.WriteString("unchanged")
		} else {
			b.WriteString("changed")
		}
	}
}

// jobs lists the jobs page by page, checking each page's size.
func (e *env) jobs(c *transcript.Command, b *strings.Builder) {
	c.Only("tenant", "level", "status", "limit")
	var f scheduler.Filter
	if c.Has("tenant") {
		t := c.Str("tenant", "")
		f.Tenant = &t
	}
	if c.Has("level") {
		l := uint32(c.Int("level", 0))
		f.Level = &l
	}
	if s := c.Str("status", ""); s != "" {
		for st := ck.StatusUnassigned; st <= ck.StatusExcluded; st++ {
			if st.String() == s {
				f.Status = st
			}
		}
	}
	limit := int(c.Int("limit", 7))
	cursor, pages := "", 0
	for {
		page, next := e.s.List(f, cursor, limit)
		pages++
		if len(page) > max(limit, 1) {
			fmt.Fprintf(b, "page of %d jobs, limit %d\n", len(page), limit)
		}
		for _, st := range page {
			b.WriteString(e.state(st) + "\n")
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if b.Len() == 0 {
		b.WriteString("(none)")
	}
}

func (e *env) stats(b *strings.Builder) {
	st := e.s.Stats()
	fmt.Fprintf(b, "jobs=%d completed=%d\n", st.Jobs, st.Completed)
	for _, l := range st.Levels {
		fmt.Fprintf(b, "level %d: unassigned=%d in_progress=%d excluded=%d paused=%d", l.Level, l.Unassigned, l.InProgress, l.Excluded, l.Paused)
		if l.Held != 0 {
			fmt.Fprintf(b, " held=%d", l.Held)
		}
		b.WriteString("\n")
	}
	for _, p := range st.Paused {
		fmt.Fprintf(b, "paused: %+v\n", p)
	}
	if st.DefaultLimits != (scheduler.Limits{}) || st.OwnLimits != 0 || st.CappedTenants != 0 || st.CappedShards != 0 {
		d := st.DefaultLimits
		fmt.Fprintf(b, "policies: default=(rank=%d cap=%d closed=%t) overrides=%d capped=%d", d.Rank, d.MaxInProgress, d.Closed, st.OwnLimits, st.CappedTenants)
		if st.CappedShards > 0 {
			fmt.Fprintf(b, " capped_shards=%d", st.CappedShards)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(b, "counters: %+v", st.Counters)
}
