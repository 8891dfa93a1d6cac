package raftfsm_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/internal/transcript"
	"github.com/compactkit/compactkit/raftfsm"
)

// runPoll runs the commands that prepare and apply polls, and raw entries.
func (e *fsmEnv) runPoll(c *transcript.Command, b *strings.Builder) {
	switch c.Name {
	case "poll", "prepare":
		e.poll(c, b)
	case "apply":
		cmd, ok := e.prepared[e.pos(c, 0)]
		if !ok {
			c.Fatalf("no command kept as %s", e.pos(c, 0))
		}
		e.applyPoll(c, b, cmd, nil)
	case "forge":
		e.forge(c, b)
	case "raw":
		e.raw(c, b)
	}
}

func (e *fsmEnv) request(c *transcript.Command) *ck.PollRequest {
	c.Only(append([]string{"seq", "slots", "report", "reason", "reason-repeat", "at", "as"}, entryOptions...)...)
	w := e.pos(c, 0)
	seq := uint64(c.Int("seq", int64(e.seq[w]+1)))
	req := &ck.PollRequest{WorkerID: w, Seq: seq, FreeSlots: int32(c.Int("slots", 0))}
	for _, spec := range c.Vals("report") {
		spec, variant, _ := strings.Cut(spec, "!")
		spec, tok, hasTok := strings.Cut(spec, "@")
		a, status, _ := strings.Cut(spec, ":")
		st, ok := map[string]ck.ReportStatus{"in_progress": ck.ReportInProgress, "success": ck.ReportSuccess,
			"failure": ck.ReportFailure, "released": ck.ReportReleased}[status]
		if !ok {
			c.Fatalf("report %q: want jN:<status>[@token][!variant]", spec)
		}
		reply := e.replies[e.job(c, a)]
		u := ck.StatusUpdate{Job: reply.Job, Token: reply.Token, Status: st,
			Reason: strings.Repeat(c.Str("reason", ""), int(c.Int("reason-repeat", 1)))}
		if hasTok {
			t, err := strconv.ParseUint(tok, 10, 64)
			if err != nil {
				c.Fatalf("token %q", tok)
			}
			u.Token = fencing.Token(t)
		}
		if st == ck.ReportSuccess && !reply.Plan.CleanupOnly() && variant != "nooutputs" {
			key := fmt.Sprintf("%s/%d/%s", u.Job, u.Token, variant)
			if outs, ok := e.outs[key]; ok { // a report retried: the same outputs
				u.Outputs = outs
				req.Updates = append(req.Updates, u)
				continue
			}
			p := *reply.Plan
			if variant == "live" { // outputs of the sources still live
				view := e.n.f.Index()
				p.Sources = slices.DeleteFunc(slices.Clone(p.Sources), func(id string) bool { return !view.Live(id) })
				view.Close()
			}
			u.Outputs = e.n.outputs(&p, uint64(u.Token))
			switch variant {
			case "elsewhere":
				u.Outputs[0].ID = "elsewhere/x"
			case "level0":
				u.Outputs[0].Level = 0
			}
			e.outs[key] = u.Outputs
		}
		req.Updates = append(req.Updates, u)
	}
	return req
}

func (e *fsmEnv) poll(c *transcript.Command, b *strings.Builder) {
	n := e.n
	req := e.request(c)
	var tokenIndex uint64
	if c.Has("two-commit") {
		// Two-commit mode: a prepare entry first, whose index is the token.
		if _, err := e.propose(c, &raftfsm.Command{PreparePoll: &raftfsm.PreparePoll{WorkerID: req.WorkerID, Seq: req.Seq}}); err != nil {
			c.Fatalf("prepare entry: %v", err)
		}
		tokenIndex = n.index
		fmt.Fprintf(b, "prepare entry %d\n", tokenIndex)
	}
	at := n.now + int64(c.Duration("at", 0))
	cmd, err := n.f.Prepare(req, at)
	if err != nil {
		e.error(b, err)
		return
	}
	e.seq[req.WorkerID] = max(e.seq[req.WorkerID], req.Seq)
	if c.Name == "prepare" {
		if c.Has("as") {
			e.prepared[c.Str("as", "")] = cmd
		}
		if cmd.Poll == nil {
			fmt.Fprintf(b, "%+v", cmd)
			return
		}
		if len(cmd.Poll.Update.Changes) == 0 {
			b.WriteString("no changes")
		}
		for _, ch := range cmd.Poll.Update.Changes {
			fmt.Fprintf(b, "%s %s", ch.Kind, e.alias(ch.Job))
			if ch.Plan != nil {
				e.plan(b, ch.Plan)
			}
			b.WriteString("\n")
		}
		return
	}
	if tokenIndex != 0 {
		cmd.Poll.Update.TokenIndex = tokenIndex
	}
	var own map[*replica]*raftfsm.Command
	if c.Has("everywhere") {
		// Each replica prepares the request on its own state, as if it
		// were the leader.
		own = map[*replica]*raftfsm.Command{}
		for _, r := range e.replicas {
			rc, err := r.f.Prepare(req, at)
			if err != nil {
				e.notes = append(e.notes, fmt.Sprintf("%s: prepare: %v", r.name, err))
				continue
			}
			if tokenIndex != 0 {
				rc.Poll.Update.TokenIndex = tokenIndex
			}
			own[r] = rc
		}
	}
	e.applyPoll(c, b, cmd, own)
}

// applyPoll applies a poll command and prints what it did. Replicas with a
// command in own apply theirs instead of the log's, and say whether it was
// the same.
func (e *fsmEnv) applyPoll(c *transcript.Command, b *strings.Builder, cmd *raftfsm.Command, own map[*replica]*raftfsm.Command) {
	e.own = own
	res, err := e.propose(c, cmd)
	e.own = nil
	if err != nil {
		e.error(b, err)
		return
	}
	if res.Replayed {
		b.WriteString("replayed\n")
	}
	for _, ch := range res.Changes {
		if !ch.Applied {
			fmt.Fprintf(b, "skipped %s %s: %s\n", ch.Kind, e.alias(ch.Job), ch.Why())
		}
		if ch.Excluded {
			fmt.Fprintf(b, "excluded %s\n", e.alias(ch.Job))
		}
		if ch.Quarantined != 0 {
			fmt.Fprintf(b, "evicted %s: %d blocks quarantined\n", e.alias(ch.Job), ch.Quarantined)
		}
		if r := ch.Replace; r != nil && !r.Applied {
			fmt.Fprintf(b, "replace %s refused: missing %v surviving %v\n", e.alias(ch.Job), r.Missing, r.Surviving)
		}
	}
	e.response(b, res.Poll)
}

func (e *fsmEnv) response(b *strings.Builder, resp *ck.PollResponse) {
	if len(resp.Jobs) == 0 {
		b.WriteString("no jobs")
	}
	for _, j := range resp.Jobs {
		if j.Outcome == ck.OutcomeAssigned {
			e.replies[j.Job] = j
		}
		fmt.Fprintf(b, "%s %s", e.alias(j.Job), j.Outcome)
		if j.Token != 0 {
			fmt.Fprintf(b, " tok=%d", j.Token)
		}
		if j.Outcome == ck.OutcomeAssigned || j.Outcome == ck.OutcomeRenewed {
			fmt.Fprintf(b, " deadline=%s", e.rel(j.Deadline))
		}
		if j.Plan != nil {
			e.plan(b, j.Plan)
		}
		b.WriteString("\n")
	}
}

func (e *fsmEnv) plan(b *strings.Builder, p *ck.JobPlan) {
	if p.CleanupOnly() {
		b.WriteString(" cleanup")
	} else {
		fmt.Fprintf(b, " %s/%d/%d sources=%v", p.Tenant, p.Shard, p.Level, p.Sources)
	}
	if len(p.Tombstones) > 0 {
		ts := make([]string, len(p.Tombstones))
		for i, t := range p.Tombstones {
			ts[i] = t.Kind.String() + ":" + e.target(t.Target)
		}
		slices.Sort(ts)
		fmt.Fprintf(b, " tombstones=%v", ts)
	}
}
