package worker_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"pgregory.net/rapid"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/worker"
)

type jobKind int

const (
	kindMerge   jobKind = iota // sources that merge
	kindBad                    // a missing source: the merge fails
	kindCleanup                // tombstones only
)

type jobSpec struct {
	kind    jobKind
	sources int
	take    time.Duration // how long the merge takes (fake time)
	revoke  bool          // reassigned elsewhere at its first renewal
}

type scenario struct {
	concurrency int
	lease       time.Duration
	jobs        []jobSpec
	failBefore  []bool // by request arrival: lost before the leader sees it
	dropReply   []bool // by request arrival: applied, reply lost
	reject      []bool // by request arrival: rejected as invalid if it reports a success
	// stopAfter, if not zero, shuts the worker down after that much (fake)
	// time, jobs in progress or not; zero runs every job to its end first.
	stopAfter time.Duration
	// The leader is unreachable from outageAt for outageFor (fake time
	// since the start).
	outageAt, outageFor time.Duration
}

func drawScenario(t *rapid.T) scenario {
	sc := scenario{
		concurrency: rapid.IntRange(1, 3).Draw(t, "concurrency"),
		lease:       rapid.SampledFrom([]time.Duration{4 * time.Second, 10 * time.Second, 15 * time.Second}).Draw(t, "lease"),
	}
	n := rapid.IntRange(1, 6).Draw(t, "jobs")
	for i := range n {
		sc.jobs = append(sc.jobs, jobSpec{
			kind:    jobKind(rapid.IntRange(0, 2).Draw(t, fmt.Sprintf("kind%d", i))),
			sources: rapid.IntRange(1, 4).Draw(t, fmt.Sprintf("sources%d", i)),
			take:    time.Duration(rapid.IntRange(0, 30).Draw(t, fmt.Sprintf("take%d", i))) * time.Second,
			revoke:  rapid.IntRange(0, 4).Draw(t, fmt.Sprintf("revoke%d", i)) == 0,
		})
	}
	if rapid.Bool().Draw(t, "stopEarly") {
		sc.stopAfter = time.Duration(rapid.IntRange(1, 60).Draw(t, "stopAfter")) * time.Second
	}
	if rapid.Bool().Draw(t, "outage") {
		sc.outageAt = time.Duration(rapid.IntRange(0, 40).Draw(t, "outageAt")) * time.Second
		sc.outageFor = time.Duration(rapid.IntRange(1, 20).Draw(t, "outageFor")) * time.Second
	}
	faults := rapid.SliceOfN(rapid.IntRange(0, 9), 0, 40).Draw(t, "faults")
	for _, f := range faults {
		sc.failBefore = append(sc.failBefore, f == 0)
		sc.dropReply = append(sc.dropReply, f == 1)
		sc.reject = append(sc.reject, f == 2)
	}
	return sc
}

// TestWorkerProperty runs random scenarios — jobs that merge, fail, only
// clean up or get reassigned elsewhere, with requests and replies lost at
// random — against the fake leader, and checks the worker's contract.
func TestWorkerProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		sc := drawScenario(rt)
		var problems []string
		synctest.Test(t, func(t *testing.T) { problems = runScenario(t, sc) })
		if len(problems) > 0 {
			rt.Fatalf("scenario %+v:\n%s", sc, strings.Join(problems, "\n"))
		}
	})
}

func runScenario(t *testing.T, sc scenario) (problems []string) {
	fail := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	ctx := context.Background()
	store := blockmerge.NewMemStore()
	m := newMerges()
	l := newFakeLeader(sc.lease)
	l.reassignExpired = true
	orphans := map[string]string{} // cleanup job -> orphan prefix
	for i, spec := range sc.jobs {
		name := fmt.Sprintf("job-%d", i)
		var p ck.JobPlan
		switch spec.kind {
		case kindMerge, kindBad:
			p = mergeJob(t, store, name, spec.sources)
			if spec.kind == kindBad {
				p.Sources = append(p.Sources, "missing")
			}
		case kindCleanup:
			prefix := ck.AttemptPrefix("gone-"+name, 1)
			if err := store.Put(ctx, prefix+"0", strings.NewReader("x")); err != nil {
				panic(err)
			}
			orphans[name] = prefix
			p = ck.JobPlan{Name: name, Tombstones: []ck.Tombstone{{Kind: ck.TombstonePrefix, Target: prefix}}}
		}
		m.take[name] = spec.take
		l.revokeOnRenewal[name] = spec.revoke
		l.add(p)
	}
	arrivals := 0
	begin := time.Now()
	l.failBefore = func(*ck.PollRequest) bool {
		arrivals++
		if since := time.Since(begin); since >= sc.outageAt && since < sc.outageAt+sc.outageFor {
			return true
		}
		return arrivals <= len(sc.failBefore) && sc.failBefore[arrivals-1]
	}
	l.dropReply = func(*ck.PollRequest, *ck.PollResponse) bool {
		return arrivals <= len(sc.dropReply) && sc.dropReply[arrivals-1]
	}
	l.reject = func(req *ck.PollRequest) error {
		if arrivals > len(sc.reject) || !sc.reject[arrivals-1] {
			return nil
		}
		for _, u := range req.Updates {
			if u.Status == ck.ReportSuccess {
				return fmt.Errorf("success of %s refused", u.Job)
			}
		}
		return nil
	}

	r := start(t, l, store, worker.Config{Concurrency: sc.concurrency, MergeOptions: []blockmerge.Option{m.option()}})
	if sc.stopAfter > 0 {
		time.Sleep(sc.stopAfter)
		synctest.Wait()
	} else {
		// Done: every job completed, failed, or held elsewhere. A job held
		// elsewhere, or dropped as lost, is reassigned to the worker once
		// its lease expired; so wait until done stays done for a minute.
		done := func() bool {
			l.mu.Lock()
			defer l.mu.Unlock()
			for i := range sc.jobs {
				name := fmt.Sprintf("job-%d", i)
				j := l.jobs[name]
				if _, ok := l.completed[name]; ok {
					continue
				}
				if j.inProgress && j.worker == "w1" || !j.inProgress && j.failures == 0 {
					return false
				}
			}
			return true
		}
		for round := 0; ; round++ {
			if round == 10 {
				fail("not done after %d rounds", round)
				break
			}
			eventually(t, "done", done)
			time.Sleep(time.Minute) // the last answers reach the worker
			synctest.Wait()
			if done() {
				break
			}
		}
	}
	l.mu.Lock()
	l.failBefore, l.dropReply, l.reject = nil, nil, nil
	l.mu.Unlock()
	if err := r.stop(); err != nil {
		fail("Run: %v", err)
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	problems = append(problems, l.violations...)
	kinds := map[string]jobKind{}
	for i, spec := range sc.jobs {
		kinds[fmt.Sprintf("job-%d", i)] = spec.kind
	}

	// Answers: once the leader answered "no lease" about an attempt, no
	// later request reports it. Count what the leader accepted.
	noLeaseAt := map[attempt]uint64{}
	rejectedFailure := map[string]bool{}
	failuresAccepted, releasesAccepted := 0, 0
	for _, rep := range l.reports {
		a := attempt{rep.update.Job, rep.update.Token}
		switch {
		case rep.answer == ck.OutcomeNoLease:
			if _, ok := noLeaseAt[a]; !ok {
				noLeaseAt[a] = rep.seq
			}
		case rep.update.Status == ck.ReportFailure && rep.answer == ck.OutcomeAccepted:
			failuresAccepted++
			if strings.Contains(rep.update.Reason, "rejected the success report") {
				rejectedFailure[rep.update.Job] = true
			}
		case rep.update.Status == ck.ReportReleased && rep.answer == ck.OutcomeAccepted:
			releasesAccepted++
		}
	}

	// Requests, each at its first send (retries repeat it, which the
	// fake leader checks).
	firstSend := map[uint64]bool{}
	reportedIn := map[attempt][]uint64{} // the requests reporting each attempt
	for _, rq := range l.received {
		if firstSend[rq.req.Seq] {
			continue
		}
		firstSend[rq.req.Seq] = true
		inProgress := 0
		for _, u := range rq.req.Updates {
			a := attempt{u.Job, u.Token}
			reportedIn[a] = append(reportedIn[a], rq.req.Seq)
			if u.Status == ck.ReportInProgress {
				inProgress++
			}
			if seq, ok := noLeaseAt[a]; ok && rq.req.Seq > seq {
				fail("request %d reports %s token %d (%s) after the leader answered no lease to request %d",
					rq.req.Seq, u.Job, u.Token, u.Status, seq)
			}
			// The worker measures a lease from the first send of the
			// request that got it: an attempt is reported only while one
			// of its grants, answering an earlier request, is less than
			// a lease old counted from that request's first send. After
			// that its lease is lost on the worker's clock, and it is
			// never reported again — in particular never successful —
			// even if the leader renewed it meanwhile.
			valid := false
			for _, g := range l.grants[a] {
				if g.seq < rq.req.Seq && rq.at.Sub(g.sent) < l.leaseOf(u.Job) {
					valid = true
				}
			}
			if !valid {
				fail("request %d at %v reports %s token %d (%s) after its lease ran out: grants %v",
					rq.req.Seq, rq.at, u.Job, u.Token, u.Status, l.grants[a])
			}
			// Only a real error is reported as a failure: jobs that
			// merge or clean up fail only when the leader rejected their
			// success; a cancelled job is dropped (lease lost) or
			// released (shutdown).
			if u.Status == ck.ReportFailure && kinds[u.Job] != kindBad && !strings.Contains(u.Reason, "rejected the success report") {
				fail("request %d reports %s (kind %d) failed: %s", rq.req.Seq, u.Job, kinds[u.Job], u.Reason)
			}
		}
		if int(rq.req.FreeSlots)+inProgress > sc.concurrency {
			fail("request %d: %d free slots with %d jobs in progress", rq.req.Seq, rq.req.FreeSlots, inProgress)
		}
	}
	// A held attempt is reported in every request from its first report
	// until it leaves the worker, and never after.
	for a, seqs := range reportedIn {
		for i := 1; i < len(seqs); i++ {
			if seqs[i] != seqs[i-1]+1 {
				fail("%s token %d reported in requests %v: a gap", a.job, a.token, seqs)
				break
			}
		}
	}
	// Jobs: each ended as its kind says.
	completedHere := 0
	inProgressHere := 0
	for i, spec := range sc.jobs {
		name := fmt.Sprintf("job-%d", i)
		c, completed := l.completed[name]
		j := l.jobs[name]
		if completed && c.worker == "w1" {
			completedHere++
		}
		if j != nil && j.inProgress && j.worker == "w1" {
			inProgressHere++
		}
		switch {
		case spec.kind == kindBad:
			if completed {
				fail("%s: a job with a missing source completed", name)
			}
		case completed:
			switch spec.kind {
			case kindMerge:
				if len(c.outputs) != 1 || c.outputs[0].Records() != int64(spec.sources+1) {
					fail("%s: outputs %+v", name, c.outputs)
				} else if meta, err := blockmerge.Verify(ctx, store, c.outputs[0].ID); err != nil || meta.Size != c.outputs[0].Size {
					fail("%s: output %s: %v", name, c.outputs[0].ID, err)
				}
			case kindCleanup:
				if len(c.outputs) != 0 {
					fail("%s: a cleanup-only job with outputs", name)
				}
				if ok, _ := store.Exists(ctx, orphans[name]+"0"); ok {
					fail("%s: completed, but its tombstone was not deleted", name)
				}
			}
		case !j.inProgress && j.failures > 0 && rejectedFailure[name]:
			// Its success was rejected; it was reported failed.
		case sc.stopAfter > 0:
			// Stopped early: released, or still in progress at the
			// leader (checked against the stats below).
		case !j.inProgress || j.worker != "another-worker":
			fail("%s: neither completed nor held elsewhere: %+v", name, *j)
		}
	}

	// Stats: every job assigned ended in exactly one way, as the leader
	// saw it.
	s := r.w.Stats()
	if s.JobsHeld != 0 || s.JobsRunning != 0 {
		fail("after Run: %d held, %d running", s.JobsHeld, s.JobsRunning)
	}
	if s.JobsAssigned != s.JobsCompleted+s.JobsFailed+s.JobsReleased+s.JobsLost {
		fail("stats do not add up: %+v", s)
	}
	if s.JobsAssigned != uint64(len(l.grants)) {
		fail("stats: %d assigned, the leader made %d assignments", s.JobsAssigned, len(l.grants))
	}
	if s.JobsCompleted != uint64(completedHere) {
		fail("stats: %d completed, the leader committed %d", s.JobsCompleted, completedHere)
	}
	if s.JobsFailed != uint64(failuresAccepted) {
		fail("stats: %d failed, the leader accepted %d failures", s.JobsFailed, failuresAccepted)
	}
	if s.JobsReleased != uint64(releasesAccepted) {
		fail("stats: %d released, the leader accepted %d releases", s.JobsReleased, releasesAccepted)
	}
	if s.JobsLost < uint64(len(noLeaseAt)) {
		fail("stats: %d lost, the leader answered no lease about %d attempts", s.JobsLost, len(noLeaseAt))
	}
	// After a clean shutdown, the only jobs the leader still believes the
	// worker holds are those the worker dropped as lost (their lease ran
	// out locally): the others were reported and answered.
	if uint64(inProgressHere) > s.JobsLost {
		fail("after shutdown the leader has %d jobs in progress on the worker, which lost %d", inProgressHere, s.JobsLost)
	}
	if sc.stopAfter == 0 && s.JobsReleased != 0 {
		fail("stats: %d released with nothing left at shutdown", s.JobsReleased)
	}
	return problems
}
