package scheduler_test

import (
	"fmt"
	"strconv"
	"strings"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/internal/transcript"
	"github.com/compactkit/compactkit/scheduler"
)

// runApply runs the commands that apply entries to the scheduler.
func (e *env) runApply(c *transcript.Command, b *strings.Builder) {
	switch c.Name {
	case "add":
		sc := e.s.Schedule(e.now)
		for _, p := range e.plans(c) {
			if !sc.AddJob(p) {
				fmt.Fprintf(b, "add %s: refused\n", p.Name)
			}
		}
		e.results(b, sc.Update(), e.entry(), 0)
	case "poll":
		w := e.pos(c, 0)
		sc := e.s.Schedule(e.now)
		for _, spec := range c.Vals("report") {
			u := e.report(c, spec, true)
			if !sc.UpdateJob(w, &u) {
				fmt.Fprintf(b, "report %s: refused\n", spec)
			}
		}
		for range sc.Capacity(int32(c.Int("slots", 0))) {
			if !sc.AssignJob(w) {
				break
			}
		}
		u := sc.Update()
		if c.Has("changes") {
			for _, ch := range u.Changes {
				b.WriteString("change: " + change(&ch) + "\n")
			}
		}
		e.results(b, u, e.entry(), 0)
	case "change":
		e.change(c)
	case "apply":
		u, ok := e.updates[e.pos(c, 0)]
		if !ok {
			c.Fatalf("no update %s", e.pos(c, 0))
		}
		var en ck.Entry
		switch ix := c.Str("index", ""); ix {
		case "":
			en = e.entry()
		case "same":
			en = e.last
		default:
			i, err := strconv.ParseUint(ix, 10, 64)
			if err != nil {
				c.Fatalf("index: %v", err)
			}
			en = ck.Entry{Index: i, Term: 1, Time: e.now}
		}
		e.results(b, *u, en, uint64(c.Int("token-index", int64(u.TokenIndex))))
	case "cancel":
		r, err := e.s.Cancel(e.entry(), e.now, e.pos(c, 0))
		if err != nil {
			fmt.Fprintf(b, "error: %v", err)
			break
		}
		b.WriteString(e.result(r, e.pos(c, 0)))
	case "retry":
		name := ""
		if p := c.Positional(); len(p) > 0 {
			name = p[0]
		}
		n, err := e.s.Retry(e.entry(), e.now, name, "")
		if err != nil {
			fmt.Fprintf(b, "error: %v", err)
			break
		}
		fmt.Fprintf(b, "retried %d", n)
	case "extend":
		fmt.Fprintf(b, "extended %d", e.s.ExtendLeases(e.entry(), e.now))
	case "expire":
		fmt.Fprintf(b, "expired %d", e.s.Expire(e.now))
	}
}

// change appends a hand-made change to an update: what a stale, hostile or
// mistaken leader could propose.
func (e *env) change(c *transcript.Command) {
	c.Only("kind", "job", "version", "token", "worker", "plan")
	name := e.pos(c, 0)
	u := e.updates[name]
	if u == nil {
		u = &ck.PlanUpdate{}
		e.updates[name] = u
	}
	kind, ok := changeKinds[c.Str("kind", "")]
	if !ok {
		n, err := strconv.ParseUint(c.Str("kind", ""), 10, 8)
		if err != nil {
			c.Fatalf("kind %q", c.Str("kind", ""))
		}
		kind = ck.ChangeKind(n)
	}
	ch := ck.Change{Kind: kind, Job: c.Str("job", ""), Worker: c.Str("worker", "")}
	st, _, _ := e.s.Job(ch.Job)
	cur := func(key string, v uint64) uint64 {
		switch s := c.Str(key, ""); s {
		case "":
			return 0
		case "cur":
			return v
		default:
			n, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				c.Fatalf("%s: %v", key, err)
			}
			return n
		}
	}
	ch.Version = cur("version", st.Version)
	ch.Token = fencing.Token(cur("token", uint64(st.Token)))
	if p := c.Str("plan", ""); p != "" {
		ch.Plan = &ck.JobPlan{Name: p, Sources: []string{p + "/src"}}
	}
	u.Changes = append(u.Changes, ch)
}

// results applies u at entry en and writes a line for each change.
func (e *env) results(b *strings.Builder, u ck.PlanUpdate, en ck.Entry, tokenIndex uint64) {
	tx := e.s.Begin(en, e.now, tokenIndex)
	for i := range u.Changes {
		b.WriteString(e.result(tx.Apply(&u.Changes[i]), u.Changes[i].Job) + "\n")
	}
}

// result is one line: the change, applied or skipped (with the reason),
// the job's state before and after, the attempt it ended, whether it
// carries the plan.
func (e *env) result(r scheduler.Result, name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s:", r.Kind, name)
	if !r.Applied {
		fmt.Fprintf(&b, " skipped (%s)", r.Why())
		if r.Before.Name != "" {
			fmt.Fprintf(&b, " before=%s", r.Before.Status)
		}
		return b.String()
	}
	if r.Before.Name == "" {
		b.WriteString(" new ->")
	} else {
		fmt.Fprintf(&b, " %s ->", r.Before.Status)
	}
	if r.After.Name == "" {
		b.WriteString(" removed")
	} else {
		b.WriteString(" " + e.state(r.After))
	}
	if r.PrevToken != 0 {
		fmt.Fprintf(&b, " prev=%d", r.PrevToken)
	}
	switch {
	case r.Plan == nil:
		b.WriteString(" no-plan")
	case r.After.Name == "":
		b.WriteString(" plan=" + r.Plan.Name) // a removed job's plan
	}
	return b.String()
}
