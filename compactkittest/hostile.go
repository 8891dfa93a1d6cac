package compactkittest

import (
	"strconv"
	"strings"

	"pgregory.net/rapid"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/internal/ident"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/scheduler"
)

// MalformedID generates block IDs that compactkit.BlockMeta.Validate
// refuses (with an error wrapping compactkit.ErrInvalid): a
// valid ID made empty, absolute, too long, or given an empty, "." or ".."
// segment, a trailing slash, a backslash, a control character or invalid
// UTF-8.
func MalformedID() *rapid.Generator[string] {
	return rapid.Custom(func(t *rapid.T) string {
		id := ID().Draw(t, "id")
		switch rapid.IntRange(0, 9).Draw(t, "flaw") {
		case 0:
			return ""
		case 1:
			return "/" + id
		case 2:
			return id + strings.Repeat("x", ident.MaxIDLen+1-len(id))
		case 3:
			return id + "//x"
		case 4:
			return rapid.SampledFrom([]string{".", ".."}).Draw(t, "dots") + "/" + id
		case 5:
			return id + "/"
		case 6:
			return id + `\x`
		case 7:
			return id + string(rune(rapid.IntRange(0, 0x1f).Draw(t, "control")))
		case 8:
			return id + "/.."
		default:
			return id + "\xff"
		}
	})
}

// ForgedPoll generates requests that report on jobs the sender does not
// hold in f: a thief's request (a worker ID no job was assigned to)
// reporting success or progress on a job in progress with its token, or
// with a larger or smaller one, or on a job that does not exist. Preparing
// and applying it must answer every update [compactkit.OutcomeNoLease] and
// leave the jobs as they were.
func ForgedPoll(f *raftfsm.FSM) *rapid.Generator[*ck.PollRequest] {
	return rapid.Custom(func(t *rapid.T) *ck.PollRequest {
		req := &ck.PollRequest{WorkerID: "thief-" + Name().Draw(t, "thief"), Seq: 1}
		job, token := "no-such-job", fencing.Token(rapid.Uint64Range(1, 1<<20).Draw(t, "token"))
		jobs, _ := f.Jobs(scheduler.Filter{Status: ck.StatusInProgress}, "", 0)
		var reply ck.JobReply
		if len(jobs) > 0 {
			js := rapid.SampledFrom(jobs).Draw(t, "job")
			job = js.Name
			token = js.Token
			switch rapid.IntRange(0, 2).Draw(t, "forgery") {
			case 1:
				token += fencing.Token(rapid.Uint64Range(1, 1<<20).Draw(t, "ahead"))
			case 2:
				token = fencing.Token(rapid.Uint64Range(1, max(1, uint64(token)-1)).Draw(t, "behind"))
			}
			_, plan, _ := f.Job(job)
			reply = ck.JobReply{Job: job, Token: token, Plan: &plan}
		}
		u := ck.StatusUpdate{Job: job, Token: token, Status: ck.ReportInProgress}
		if reply.Plan != nil && rapid.Bool().Draw(t, "success") {
			if outs, ok := leadertest.Outputs(f, &reply); ok {
				u.Status, u.Outputs = ck.ReportSuccess, outs
			}
		}
		req.Updates = []ck.StatusUpdate{u}
		return req
	})
}

// OversizedPoll generates requests over the limits (raftfsm.Limits, with
// zero fields defaulted as the state machine does): more status updates
// than MaxReports, or a success report with more outputs than MaxOutputs.
// [raftfsm.FSM.Prepare] refuses each with an error wrapping
// raftfsm.ErrLimit and raftfsm.ErrInvalidRequest.
func OversizedPoll(limits raftfsm.Limits) *rapid.Generator[*ck.PollRequest] {
	if limits.MaxReports <= 0 {
		limits.MaxReports = raftfsm.DefaultLimits.MaxReports
	}
	if limits.MaxOutputs <= 0 {
		limits.MaxOutputs = raftfsm.DefaultLimits.MaxOutputs
	}
	return rapid.Custom(func(t *rapid.T) *ck.PollRequest {
		req := &ck.PollRequest{WorkerID: Name().Draw(t, "worker"), Seq: rapid.Uint64Range(1, 1<<20).Draw(t, "seq")}
		if rapid.Bool().Draw(t, "outputs") {
			n := limits.MaxOutputs + rapid.IntRange(1, 4).Draw(t, "over")
			outs := make([]ck.BlockMeta, n)
			for i := range outs {
				outs[i] = leadertest.Block(ck.OutputID("job", 1, i), "acme", 0, defaultStart)
				outs[i].Level = 1
			}
			req.Updates = []ck.StatusUpdate{{Job: "job", Token: 1, Status: ck.ReportSuccess, Outputs: outs}}
			return req
		}
		n := limits.MaxReports + rapid.IntRange(1, 4).Draw(t, "over")
		req.Updates = make([]ck.StatusUpdate, n)
		for i := range req.Updates {
			req.Updates[i] = ck.StatusUpdate{Job: "job-" + strconv.Itoa(i), Token: 1, Status: ck.ReportInProgress}
		}
		return req
	})
}
