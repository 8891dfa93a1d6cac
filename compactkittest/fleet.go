package compactkittest

import (
	"slices"

	"pgregory.net/rapid"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/raftfsm"
)

// Fleet is the workers' side of a history against a state machine: each
// worker's sequence number, the jobs it holds and its latest request. It
// is what an honest worker knows, and nothing more.
//
// A Fleet is not safe for concurrent use.
type Fleet struct {
	ids  []string
	seq  map[string]uint64
	jobs map[string]map[string]ck.JobReply
	last map[string]*ck.PollRequest
}

// NewFleet returns a fleet of workers with the given IDs (default "w1",
// "w2" and "w3"), holding nothing.
func NewFleet(ids ...string) *Fleet {
	if len(ids) == 0 {
		ids = []string{"w1", "w2", "w3"}
	}
	fl := &Fleet{ids: slices.Clone(ids), seq: map[string]uint64{}, jobs: map[string]map[string]ck.JobReply{}, last: map[string]*ck.PollRequest{}}
	for _, id := range ids {
		fl.jobs[id] = map[string]ck.JobReply{}
	}
	return fl
}

// Held returns the jobs the worker holds, by name, as it was told of them.
func (fl *Fleet) Held(worker string) map[string]ck.JobReply {
	out := make(map[string]ck.JobReply, len(fl.jobs[worker]))
	for k, v := range fl.jobs[worker] {
		out[k] = v
	}
	return out
}

// Poll generates one worker's next request against f: either the retry of
// its latest request, while f still answers it from its poll log, or a new
// request with the next sequence number, reporting on every job the
// worker holds — in progress, success (with the outputs of
// leadertest.Outputs, or none for a cleanup-only job), failure with a
// reason, or release — and asking for zero to three new jobs. Drawing a
// request advances the worker's sequence number; tell the fleet the
// answer with [Fleet.Answered].
func (fl *Fleet) Poll(f *raftfsm.FSM) *rapid.Generator[*ck.PollRequest] {
	return rapid.Custom(func(t *rapid.T) *ck.PollRequest {
		w := rapid.SampledFrom(fl.ids).Draw(t, "worker")
		if last := fl.last[w]; last != nil {
			if _, ok := f.Recorded(w, last.Seq); ok && rapid.IntRange(0, 5).Draw(t, "retry") == 0 {
				return clone(last)
			}
		}
		fl.seq[w]++
		req := &ck.PollRequest{WorkerID: w, Seq: fl.seq[w], FreeSlots: int32(rapid.IntRange(0, 3).Draw(t, "free"))}
		held := fl.jobs[w]
		names := make([]string, 0, len(held))
		for name := range held {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			j := held[name]
			u := ck.StatusUpdate{Job: name, Token: j.Token, Status: ck.ReportInProgress, Signature: j.Signature}
			switch rapid.IntRange(0, 5).Draw(t, "status") {
			case 2, 3:
				if j.Plan.CleanupOnly() {
					u.Status = ck.ReportSuccess
				} else if outs, ok := leadertest.Outputs(f, &j); ok {
					u.Status, u.Outputs = ck.ReportSuccess, outs
				}
			case 4:
				u.Status, u.Reason = ck.ReportFailure, "merge failed: "+Name().Draw(t, "reason")
			case 5:
				u.Status = ck.ReportReleased
			}
			req.Updates = append(req.Updates, u)
		}
		fl.last[w] = clone(req)
		return req
	})
}

// Answered tells the fleet the response its request got: the worker holds
// the jobs assigned or renewed, and drops every other job the response
// names. A nil response (the request was refused) changes nothing.
func (fl *Fleet) Answered(req *ck.PollRequest, resp *ck.PollResponse) {
	if resp == nil {
		return
	}
	held := fl.jobs[req.WorkerID]
	if held == nil {
		return
	}
	for _, reply := range resp.Jobs {
		switch reply.Outcome {
		case ck.OutcomeAssigned:
			held[reply.Job] = reply
		case ck.OutcomeRenewed:
		default:
			delete(held, reply.Job)
		}
	}
}

func clone(r *ck.PollRequest) *ck.PollRequest {
	c := *r
	c.Updates = slices.Clone(r.Updates)
	for i := range c.Updates {
		c.Updates[i].Outputs = slices.Clone(c.Updates[i].Outputs)
	}
	return &c
}
