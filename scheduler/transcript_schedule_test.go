package scheduler_test

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/compactkit/compactkit/internal/transcript"
	"github.com/compactkit/compactkit/scheduler"
)

// runSchedule runs the commands that build a schedule, as Prepare does.
func (e *env) runSchedule(c *transcript.Command, b *strings.Builder) {
	switch c.Name {
	case "open":
		e.scheds[e.pos(c, 0)] = e.s.Schedule(e.now)
	case "on":
		e.on(c, b)
	case "update":
		name := e.pos(c, 0)
		u := e.sched(c, name).Update()
		e.updates[name] = &u
		for _, ch := range u.Changes {
			b.WriteString(change(&ch) + "\n")
		}
	}
}

func (e *env) on(c *transcript.Command, b *strings.Builder) {
	sc := e.sched(c, e.pos(c, 0))
	args := c.Positional()[1:]
	if len(args) == 0 {
		c.Fatalf("on <schedule> <method> ...")
	}
	switch m, args := args[0], args[1:]; m {
	case "add":
		for _, spec := range args {
			p := parsePlan(spec, "t", 0)
			fmt.Fprintf(b, "add %s: %t\n", p.Name, sc.AddJob(p))
		}
	case "assign":
		for i := range int(c.Int("n", 1)) {
			_ = i
			fmt.Fprintf(b, "assign %s: %t\n", args[0], sc.AssignJob(args[0]))
		}
	case "evict":
		fmt.Fprintf(b, "evict: %t", sc.EvictJob())
	case "report":
		for _, spec := range args[1:] {
			u := e.report(c, spec, c.Str("outputs", "") != "none")
			fmt.Fprintf(b, "report %s: %t\n", spec, sc.UpdateJob(args[0], &u))
		}
	case "capacity":
		for _, a := range args {
			n, _ := strconv.ParseInt(a, 10, 32)
			fmt.Fprintf(b, "capacity %d: %d\n", n, sc.Capacity(int32(n)))
		}
	case "job":
		for _, name := range args {
			st, _, ok := sc.Job(name)
			if !ok {
				fmt.Fprintf(b, "%s: unknown\n", name)
				continue
			}
			b.WriteString(e.state(st) + "\n")
		}
	case "held":
		level, _ := strconv.ParseUint(args[1], 10, 32)
		fmt.Fprintf(b, "%t", sc.Held(args[0], uint32(level)))
	default:
		c.Fatalf("unknown schedule method %s", m)
	}
}

func (e *env) sched(c *transcript.Command, name string) *scheduler.Schedule {
	sc, ok := e.scheds[name]
	if !ok {
		c.Fatalf("no schedule %s", name)
	}
	return sc
}
