package raftfsm_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/internal/policytext"
	"github.com/compactkit/compactkit/internal/transcript"
	"github.com/compactkit/compactkit/policy"
	"github.com/compactkit/compactkit/raftfsm"
)

// runLog runs the commands that append an entry to the log, other than polls.
func (e *fsmEnv) runLog(c *transcript.Command, b *strings.Builder) {
	n := e.n
	switch c.Name {
	case "add-blocks":
		c.Only(append([]string{"tenant", "shard", "level", "n"}, entryOptions...)...)
		shard := ck.AnyShard // shard=any: as a cross-shard job's outputs
		if c.Str("shard", "") != "any" {
			shard = uint32(c.Int("shard", 1))
		}
		bs := blocks(e.pos(c, 0), c.Str("tenant", "t1"), shard, int(c.Int("n", 4)), t0)
		for i := range bs {
			bs[i].Level = uint32(c.Int("level", 0))
		}
		res, err := e.propose(c, addBlocks(bs))
		if err != nil {
			e.error(b, err)
			break
		}
		for _, r := range res.Blocks {
			switch {
			case r.Err != nil:
				fmt.Fprintf(b, "%s: %v\n", r.ID, r.Err)
			case r.Queued && r.Pressure != policy.OK:
				fmt.Fprintf(b, "%s: queued pressure=%s\n", r.ID, r.Pressure)
			case r.Queued:
				fmt.Fprintf(b, "%s: queued\n", r.ID)
			default:
				fmt.Fprintf(b, "%s: added\n", r.ID)
			}
		}
		e.now(c, b, res)
	case "config":
		c.Only(append(slices.Clone(configOptions), entryOptions...)...)
		cfg := config(c)
		res, err := e.propose(c, &raftfsm.Command{Config: &cfg})
		if err != nil {
			e.error(b, err)
			break
		}
		b.WriteString("config applied")
		e.now(c, b, res)
	case "cluster-version":
		c.Only(append([]string{"v"}, entryOptions...)...)
		v := byte(c.Int("v", 0))
		if _, err := e.propose(c, &raftfsm.Command{ClusterVersion: &raftfsm.SetClusterVersion{Version: v}}); err != nil {
			e.error(b, err)
			break
		}
		n.version = v
		fmt.Fprintf(b, "cluster version %d", n.f.ClusterVersion())
	case "took-office":
		c.Only(append([]string{"leader"}, entryOptions...)...)
		res, err := e.propose(c, &raftfsm.Command{TookOffice: &raftfsm.TookOffice{Leader: c.Str("leader", "n2")}})
		if err != nil {
			e.error(b, err)
			break
		}
		fmt.Fprintf(b, "extended %d", res.Count)
	case "retention":
		c.Only(append([]string{"tenant", "before"}, entryOptions...)...)
		res, err := e.propose(c, &raftfsm.Command{Retention: &raftfsm.Retention{Tenant: c.Str("tenant", "t1"), Before: t0 + int64(c.Duration("before", 0))}})
		if err != nil {
			e.error(b, err)
			break
		}
		fmt.Fprintf(b, "dropped %v\ncancelled %v", res.Dropped, e.aliasAll(res.Cancelled))
	case "operator":
		e.operator(c, b)
	case "policy":
		e.policy(c, b)
	}
}

// policy proposes a policy command:
//
//	policy set (tenant=T | all) [class=low] [cap=N] [shard-cap=N] [only-in=HH:MM-HH:MM | never-in=...]
//	    [days=Mon,Tue] [offset=MIN] [not-before=DUR] [slow=ON/OFF] [stop=ON/OFF]
//	    [slow-ready-batches=ON/OFF] [stop-ready-batches=ON/OFF] [stale=DUR] [shard-slow=ON/OFF] [shard-stop=ON/OFF]
//	    [levels=L:blocks=N,bytes=N,age=DUR,cross=on|off;L:...]
//	    [level-only-in=L:HH:MM-HH:MM | level-never-in=L:HH:MM-HH:MM] (every day, UTC)
//	policy clear (tenant=T | all)
//	policy compact-now (tenant=T | all) [level=L]
func (e *fsmEnv) policy(c *transcript.Command, b *strings.Builder) {
	c.Only(append([]string{"tenant", "all", "level", "by", "class", "cap", "shard-cap", "only-in", "never-in", "days", "offset",
		"not-before", "slow", "stop", "slow-ready-batches", "stop-ready-batches", "stale", "levels", "level-only-in", "level-never-in", "shard-slow", "shard-stop"}, entryOptions...)...)
	pc := &raftfsm.PolicyCommand{Tenant: c.Str("tenant", ""), All: c.Has("all"), By: c.Str("by", "")}
	switch e.pos(c, 0) {
	case "set":
		pc.Action = raftfsm.PolicySet
		p := &policy.Tenant{MaxInProgress: uint32(c.Int("cap", 0)), MaxInProgressPerShard: uint32(c.Int("shard-cap", 0)), StaleAfter: c.Duration("stale", 0)}
		if c.Has("class") {
			var class policy.Tenant
			if err := json.Unmarshal(fmt.Appendf(nil, `{"class":%q}`, c.Str("class", "")), &class); err != nil {
				c.Fatalf("%v", err)
			}
			p.Class = class.Class
		}
		for _, mode := range []policy.RunMode{policy.OnlyIn, policy.NeverIn} {
			if !c.Has(mode.String()) {
				continue
			}
			var h1, m1, h2, m2 uint16
			if _, err := fmt.Sscanf(c.Str(mode.String(), ""), "%d:%d-%d:%d", &h1, &m1, &h2, &m2); err != nil {
				c.Fatalf("window: %v", err)
			}
			w := policy.Window{Days: policy.EveryDay, Start: h1*60 + m1, End: h2*60 + m2, Offset: int16(c.Int("offset", 0))}
			if c.Has("days") {
				w.Days = 0
				for _, d := range strings.Split(c.Str("days", ""), ",") {
					i := slices.IndexFunc([]time.Weekday{0, 1, 2, 3, 4, 5, 6}, func(wd time.Weekday) bool { return wd.String()[:3] == d })
					if i < 0 {
						c.Fatalf("day %q", d)
					}
					w.Days |= 1 << i
				}
			}
			p.Run = policy.RunPolicy{Mode: mode, Windows: []policy.Window{w}}
		}
		if c.Has("not-before") {
			p.NotBefore = t0 + int64(c.Duration("not-before", 0))
		}
		limit := func(key string) policy.Limit {
			var l policy.Limit
			if c.Has(key) {
				if _, err := fmt.Sscanf(c.Str(key, ""), "%d/%d", &l.On, &l.Off); err != nil {
					c.Fatalf("%s: %v", key, err)
				}
			}
			return l
		}
		p.Pressure = policy.Thresholds{SlowBlocks: limit("slow"), StopBlocks: limit("stop"), SlowReadyBatches: limit("slow-ready-batches"), StopReadyBatches: limit("stop-ready-batches")}
		p.ShardPressure = policy.Thresholds{SlowBlocks: limit("shard-slow"), StopBlocks: limit("shard-stop")}
		if c.Has("levels") {
			p.Levels = parseLevels(c, c.Str("levels", ""))
		}
		for _, mode := range []policy.RunMode{policy.OnlyIn, policy.NeverIn} {
			key := "level-" + mode.String()
			if !c.Has(key) {
				continue
			}
			var l, h1, m1, h2, m2 uint16
			if _, err := fmt.Sscanf(c.Str(key, ""), "%d:%d:%d-%d:%d", &l, &h1, &m1, &h2, &m2); err != nil {
				c.Fatalf("%s: %v", key, err)
			}
			p.LevelRuns = append(p.LevelRuns, policy.LevelRun{Level: uint32(l), Run: policy.RunPolicy{Mode: mode,
				Windows: []policy.Window{{Days: policy.EveryDay, Start: h1*60 + m1, End: h2*60 + m2}}}})
		}
		pc.Policy = p
	case "clear":
		pc.Action = raftfsm.PolicyClear
	case "compact-now":
		pc.Action = raftfsm.PolicyCompactNow
		if c.Has("level") {
			l := uint32(c.Int("level", 0))
			pc.Level = &l
		}
	default:
		c.Fatalf("policy set|clear|compact-now")
	}
	res, err := e.propose(c, &raftfsm.Command{Policy: pc})
	if err != nil {
		e.error(b, err)
		return
	}
	fmt.Fprintf(b, "count %d", res.Count)
	e.now(c, b, res)
}

// parseLevels parses "L:blocks=N,bytes=N,age=DUR,cross=on|off;L:..." as
// level overrides, in the order given, as the admin API takes them
// (unchecked: the state machine checks them).
func parseLevels(c *transcript.Command, s string) []policy.Level {
	var levels []any
	for _, part := range strings.Split(s, ";") {
		o, err := policytext.ParseLevel(part)
		if err != nil {
			c.Fatalf("levels: %v", err)
		}
		levels = append(levels, o)
	}
	data, err := json.Marshal(map[string]any{"levels": levels})
	if err != nil {
		c.Fatalf("levels: %v", err)
	}
	var t policy.Tenant
	if err := json.Unmarshal(data, &t); err != nil {
		c.Fatalf("levels: %v", err)
	}
	return t.Levels
}

func (e *fsmEnv) operator(c *transcript.Command, b *strings.Builder) {
	c.Only(append([]string{"tenant", "all", "level", "by", "reason"}, entryOptions...)...)
	op := &raftfsm.Operator{Tenant: c.Str("tenant", ""), All: c.Has("all"), By: c.Str("by", ""), Reason: c.Str("reason", "")}
	if c.Has("level") {
		l := uint32(c.Int("level", 0))
		op.Level = &l
	}
	args := c.Positional()
	if len(args) == 0 {
		c.Fatalf("operator <action> ...")
	}
	switch args[0] {
	case "pause":
		op.Action = raftfsm.OpPause
	case "resume":
		op.Action = raftfsm.OpResume
	case "retry", "cancel":
		op.Action = raftfsm.OpRetry
		if args[0] == "cancel" {
			op.Action = raftfsm.OpCancel
		}
		if len(args) > 1 {
			op.Job = e.job(c, args[1])
		}
	case "requeue":
		// operator requeue [ID...]: the blocks named, or every quarantined one.
		op.Blocks = args[1:]
		if len(op.Blocks) == 0 {
			q, _ := e.n.f.Quarantined("", 0)
			for _, qb := range q {
				op.Blocks = append(op.Blocks, qb.ID)
			}
		}
		op.Action = raftfsm.OpRequeue
	case "mark":
		// operator mark ID... [reason=...] [by=...]
		op.Action, op.Blocks = raftfsm.OpMark, args[1:]
	default:
		c.Fatalf("unknown operator action %s", args[0])
	}
	res, err := e.propose(c, &raftfsm.Command{Operator: op})
	if err != nil {
		e.error(b, err)
		return
	}
	fmt.Fprintf(b, "count %d", res.Count)
}
