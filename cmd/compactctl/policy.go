package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/compactkit/compactkit/admin"
	"github.com/compactkit/compactkit/internal/policytext"
	"github.com/compactkit/compactkit/raftfsm"
)

// policyCommand is the body of the admin API's policy commands; Policy is
// in the JSON form of policy.Tenant (docs/policies.md).
type policyCommand struct {
	Tenant *string         `json:"tenant,omitempty"`
	All    bool            `json:"all,omitempty"`
	Level  *uint32         `json:"level,omitempty"`
	Policy *map[string]any `json:"policy,omitempty"`
}

// policyBody builds the body of "policy set", "policy clear" or
// "compact-now" from its flags. It only arranges the flags into the API's
// JSON: the API converts and checks the policy, in one place, and answers
// what is wrong.
func policyBody(cmd string, args []string, errOut io.Writer) (*policyCommand, error) {
	sub := flag.NewFlagSet("policy "+cmd, flag.ContinueOnError)
	if cmd == "compact-now" {
		sub = flag.NewFlagSet(cmd, flag.ContinueOnError)
	}
	sub.SetOutput(errOut)
	tenant := sub.String("tenant", "", "the tenant (-tenant \"\" is the empty tenant of multi-tenant segments)")
	all := sub.Bool("all", false, "every tenant: the default policy (set, clear), or every tenant's blocks (compact-now)")
	var level *int
	var class, onlyIn, neverIn, days, notBefore, slow, stop, slowReady, stopReady, shardSlow, shardStop, stale *string
	var limit, shardLimit *uint
	var offset *int
	var levels []any
	var levelRuns []struct{ mode, value string }
	switch cmd {
	case "compact-now":
		level = sub.Int("level", -1, "only this level (default every level)")
	case "set":
		class = sub.String("class", "", "priority class: high, medium (default) or low")
		limit = sub.Uint("cap", 0, "at most this many jobs in progress at once (0: no cap)")
		shardLimit = sub.Uint("shard-cap", 0, "at most this many jobs in progress at once on each shard (0: no cap)")
		onlyIn = sub.String("only-in", "", "new jobs start only in these windows: HH:MM-HH:MM[,HH:MM-HH:MM...]")
		neverIn = sub.String("never-in", "", "new jobs never start in these windows: HH:MM-HH:MM[,...]")
		days = sub.String("days", "", "the days the windows open on: Mon,Tue,... (default every day)")
		offset = sub.Int("offset", 0, "the windows' offset east of UTC, in minutes")
		notBefore = sub.String("not-before", "", "no new job before this RFC 3339 time")
		slow = sub.String("slow", "", "backpressure slow when queued blocks reach ON, until below OFF: ON/OFF")
		stop = sub.String("stop", "", "backpressure stop on queued blocks: ON/OFF")
		slowReady = sub.String("slow-ready-batches", "", "backpressure slow when the ready batches (jobs that could be planned now) reach ON, until below OFF: ON/OFF")
		stopReady = sub.String("stop-ready-batches", "", "backpressure stop on ready batches: ON/OFF")
		shardSlow = sub.String("shard-slow", "", "backpressure per shard: slow when a shard's queued blocks reach ON, until below OFF: ON/OFF")
		shardStop = sub.String("shard-stop", "", "backpressure per shard: stop on a shard's queued blocks: ON/OFF")
		stale = sub.String("stale", "", "staleness alarm when a level's oldest queued block waits longer (a duration: 1h)")
		for _, mode := range []string{"only-in", "never-in"} {
			sub.Func("level-"+mode, "level L's new jobs start "+map[string]string{"only-in": "only", "never-in": "never"}[mode]+" in these windows, repeatable: L=HH:MM-HH:MM[,...]", func(s string) error {
				levelRuns = append(levelRuns, struct{ mode, value string }{mode, s})
				return nil
			})
		}
		sub.Func("level", "override a level's batching, repeatable: L:blocks=N,bytes=N,age=DURATION,cross=on|off", func(s string) error {
			o, err := policytext.ParseLevel(s)
			if err == nil {
				levels = append(levels, o)
			}
			return err
		})
	}
	if err := sub.Parse(args); err != nil {
		return nil, err
	}
	name := sub.Name()
	if sub.NArg() != 0 {
		return nil, fmt.Errorf("%s: unexpected arguments %q", name, sub.Args())
	}
	given := map[string]bool{}
	sub.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if given["tenant"] == *all {
		return nil, fmt.Errorf("%s: want -tenant T or -all", name)
	}
	body := &policyCommand{All: *all}
	if given["tenant"] {
		body.Tenant = tenant
	}
	switch cmd {
	case "compact-now":
		if given["level"] {
			if *level < 0 {
				return nil, fmt.Errorf("%s: -level %d", name, *level)
			}
			l := uint32(*level)
			body.Level = &l
		}
	case "set":
		if *limit > 1<<32-1 {
			return nil, fmt.Errorf("%s: -cap %d: too large", name, *limit)
		}
		if *shardLimit > 1<<32-1 {
			return nil, fmt.Errorf("%s: -shard-cap %d: too large", name, *shardLimit)
		}
		p := map[string]any{"max_in_progress": uint32(*limit)}
		for k, v := range map[string]any{"class": *class, "max_in_progress_per_shard": uint32(*shardLimit), "not_before": *notBefore, "stale_after": *stale} {
			if v != "" && v != uint32(0) {
				p[k] = v
			}
		}
		if len(levels) > 0 {
			p["levels"] = levels
		}
		if len(levelRuns) == 0 || *onlyIn != "" || *neverIn != "" {
			run, err := runPolicy(*onlyIn, *neverIn, *days, *offset, given)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if run != nil {
				p["run"] = run
			}
		}
		var runs []any
		for _, lr := range levelRuns {
			l, ranges, ok := strings.Cut(lr.value, "=")
			level, err := strconv.ParseUint(l, 10, 32)
			if !ok || err != nil {
				return nil, fmt.Errorf("%s: -level-%s %q: want L=HH:MM-HH:MM[,...]", name, lr.mode, lr.value)
			}
			windows, err := windowList(lr.mode, ranges, *days, *offset)
			if err != nil {
				return nil, fmt.Errorf("%s: -level-%w", name, err)
			}
			runs = append(runs, map[string]any{"level": uint32(level), "run": map[string]any{"mode": lr.mode, "windows": windows}})
		}
		if len(runs) > 0 {
			p["level_runs"] = runs
		}
		th, sh := map[string]any{}, map[string]any{}
		for _, l := range []struct {
			flag, value string
			to          map[string]any
			key         string
		}{{"slow", *slow, th, "slow_blocks"}, {"stop", *stop, th, "stop_blocks"}, {"slow-ready-batches", *slowReady, th, "slow_ready_batches"}, {"stop-ready-batches", *stopReady, th, "stop_ready_batches"},
			{"shard-slow", *shardSlow, sh, "slow_blocks"}, {"shard-stop", *shardStop, sh, "stop_blocks"}} {
			if l.value == "" {
				continue
			}
			lim, err := onOff(l.value)
			if err != nil {
				return nil, fmt.Errorf("%s: -%s: %w", name, l.flag, err)
			}
			l.to[l.key] = lim
		}
		if len(th) > 0 {
			p["pressure"] = th
		}
		if len(sh) > 0 {
			p["shard_pressure"] = sh
		}
		body.Policy = &p
	}
	return body, nil
}

// runPolicy arranges the window flags into the API's run policy.
func runPolicy(onlyIn, neverIn, days string, offset int, given map[string]bool) (map[string]any, error) {
	mode, ranges := "only-in", onlyIn
	switch {
	case onlyIn != "" && neverIn != "":
		return nil, errors.New("-only-in or -never-in, not both")
	case neverIn != "":
		mode, ranges = "never-in", neverIn
	case onlyIn == "":
		if given["days"] || given["offset"] {
			return nil, errors.New("-days and -offset need -only-in or -never-in")
		}
		return nil, nil
	}
	windows, err := windowList(mode, ranges, days, offset)
	if err != nil {
		return nil, fmt.Errorf("-%w", err)
	}
	return map[string]any{"mode": mode, "windows": windows}, nil
}

// windowList arranges "HH:MM-HH:MM[,...]" on the days (default every day)
// at the offset as the API's windows; its errors start with the mode.
func windowList(mode, ranges, days string, offset int) ([]any, error) {
	dayList := []string{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"}
	if days != "" {
		dayList = strings.Split(days, ",")
	}
	var out []any
	for _, r := range strings.Split(ranges, ",") {
		start, end, ok := strings.Cut(r, "-")
		if !ok {
			return nil, fmt.Errorf("%s %q: want HH:MM-HH:MM", mode, r)
		}
		out = append(out, map[string]any{"days": dayList, "start": start, "end": end, "offset_minutes": offset})
	}
	return out, nil
}

// onOff parses "ON/OFF" (or "N": on and off at N) as a limit.
func onOff(s string) (map[string]int64, error) {
	on, off, found := strings.Cut(s, "/")
	if !found {
		off = on
	}
	a, err1 := strconv.ParseInt(on, 10, 64)
	b, err2 := strconv.ParseInt(off, 10, 64)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("%q: want ON/OFF, two integers", s)
	}
	return map[string]int64{"on": a, "off": b}, nil
}

// policyTable writes the policies as a table.
func policyTable(w *tabwriter.Writer, ps *admin.Policies) {
	fmt.Fprintf(w, "log time\t%s\n\n", ps.LogTime)
	fmt.Fprintln(w, "TENANT\tCLASS\tCAP\tRUN\tNOT BEFORE\tBACKPRESSURE (ON/OFF)\tSTALE AFTER\tLEVELS\tNEW JOBS")
	row := func(name string, t raftfsm.TenantPolicy) {
		p, open := t.Policy, "closed"
		if t.Open {
			open = "open"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, p.Class, policytext.Cap(p), policytext.Run(p), dash(policytext.NotBefore(p)),
			dash(policytext.Pressure(p)), dash(policytext.StaleAfter(p)), dash(policytext.Levels(p)), open)
	}
	row("(default)", ps.Default)
	for _, t := range ps.Tenants {
		row(admin.TenantName(t.Tenant), t)
	}
	if len(ps.CompactNow) > 0 {
		fmt.Fprintln(w, "\nCOMPACT NOW\tLEVEL\tQUEUED UP TO")
		for _, c := range ps.CompactNow {
			who, level := admin.TenantName(c.Tenant), "every"
			if c.All {
				who = "(every tenant)"
			}
			if c.Level != nil {
				level = strconv.FormatUint(uint64(*c.Level), 10)
			}
			fmt.Fprintf(w, "%s\t%s\t%s\n", who, level, c.Before)
		}
	}
}

// tenantName shows a tenant's name, and the empty tenant as "".
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
