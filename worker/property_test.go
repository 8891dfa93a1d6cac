package worker_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"pgregory.net/rapid"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/raftfsm"
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
	revoke  bool          // taken away by an operator at its first renewal
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
// clean up or are taken away by an operator, with requests and replies
// lost, successes rejected and the leader unreachable at random — against
// the real state machine, and checks the worker's contract.
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
	// A job gets a second attempt after a failure or an expired lease;
	// tombstones are released after a second, and a cleanup-only job of
	// one tombstone takes each a second later.
	cfg := leaderConfig(sc.lease)
	cfg.Scheduler.MaxFailures = 2
	cfg.Index.CleanupDelay = time.Second
	l := newLeaderWith(t, cfg, raftfsm.WithCleanupAfter(time.Second), raftfsm.WithCleanupBatch(1))
	// The jobs' labels (see labelOf): a cleanup-only job's is that of
	// the block it deletes, prefixed.
	labels := make([]string, len(sc.jobs))
	kinds := map[string]jobKind{}
	for i, spec := range sc.jobs {
		name := fmt.Sprintf("job-%d", i)
		labels[i] = name
		if spec.kind == kindCleanup {
			labels[i] = "cleanup:" + name
		}
		kinds[labels[i]] = spec.kind
		m.take[name] = spec.take
		switch spec.kind {
		case kindMerge:
			l.addBlocks(t, mergeSources(t, store, name, spec.sources))
		case kindBad:
			l.addBlocks(t, append(mergeSources(t, store, name, spec.sources), missingSource(t, name, spec.sources)))
		case kindCleanup:
			// A block retention drops at once: its tombstone is the
			// cleanup-only job's.
			l.addBlocks(t, []ck.BlockMeta{writeBlock(t, store, name, sourceID(name, 0), "x")})
			l.drop(t, name)
		}
	}
	time.Sleep(time.Millisecond) // the planner's batching age
	arrivals := 0
	begin := time.Now()
	l.lose = func(*ck.PollRequest) bool {
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
	// A job to revoke is taken from the worker by an operator when the
	// worker first reports it in progress.
	revoked := map[string]bool{}
	l.before = func(req *ck.PollRequest) {
		for _, u := range req.Updates {
			label := labelOf(u.Job, l.plans[u.Job])
			if i := slices.Index(labels, label); i >= 0 && sc.jobs[i].revoke && !revoked[label] && u.Status == ck.ReportInProgress {
				if err := l.revokeLocked(label); err == nil {
					revoked[label] = true
				}
			}
		}
	}
	w1 := ck.PublicWorkerName("w1")

	r := start(t, l, store, worker.Config{Concurrency: sc.concurrency, MergeOptions: []blockmerge.Option{m.option()}})
	if sc.stopAfter > 0 {
		time.Sleep(sc.stopAfter)
		synctest.Wait()
	} else {
		// Done: every job completed, excluded, or revoked. A job whose
		// lease expired, or that failed once, is assigned again; so
		// wait until done stays done for a minute.
		done := func() bool {
			l.mu.Lock()
			defer l.mu.Unlock()
			for _, label := range labels {
				name := l.nameLocked(label)
				if name == "" {
					return false
				}
				if _, ok := l.completed[name]; ok {
					continue
				}
				js, _, ok := l.f.Job(name)
				switch {
				case !ok && revoked[label]:
				case !ok || js.Status == ck.StatusUnassigned || js.Status == ck.StatusInProgress && js.Worker == w1:
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
	l.lose, l.dropReply, l.reject, l.before = nil, nil, nil, nil
	l.mu.Unlock()
	if err := r.stop(); err != nil {
		fail("Run: %v", err)
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	problems = append(problems, l.violations...)
	if st := l.f.Stats(); st.BrokenInvariants != 0 || st.Failed != nil {
		fail("state machine: %d broken invariants, failed: %v", st.BrokenInvariants, st.Failed)
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
				rejectedFailure[labelOf(rep.update.Job, l.plans[rep.update.Job])] = true
			}
		case rep.update.Status == ck.ReportReleased && rep.answer == ck.OutcomeAccepted:
			releasesAccepted++
		}
	}

	// A request's answer arrived with its last delivery: the worker
	// retries until answered.
	answered := map[uint64]time.Time{}
	for _, rr := range l.received {
		answered[rr.req.Seq] = rr.at
	}
	// Requests, each at its first send (retries repeat it, which the
	// leader checks).
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
			// its lease old counted from that request's first send.
			// After that its lease is lost on the worker's clock, and it
			// is never reported again — in particular never successful —
			// even if the leader renewed it meanwhile.
			valid := false
			for _, g := range l.grants[a] {
				if g.seq < rq.req.Seq && rq.at.Sub(g.sent) < g.lease {
					valid = true
				}
			}
			// The exception: an assignment that arrived too late to run
			// is reported released in the first request after it.
			if gs := l.grants[a]; !valid && len(gs) > 0 && u.Status == ck.ReportReleased && len(reportedIn[a]) == 1 &&
				answered[gs[0].seq].Sub(gs[0].sent) >= sc.lease/2 {
				valid = true
			}
			if !valid {
				fail("request %d at %v reports %s token %d (%s) after its lease ran out: grants %v",
					rq.req.Seq, rq.at, u.Job, u.Token, u.Status, l.grants[a])
			}
			// Only a real error is reported as a failure: jobs that
			// merge or clean up fail only when the leader rejected their
			// success; a cancelled job is dropped (lease lost) or
			// released (shutdown).
			label := labelOf(u.Job, l.plans[u.Job])
			if u.Status == ck.ReportFailure && kinds[label] != kindBad && !strings.Contains(u.Reason, "rejected the success report") {
				fail("request %d reports %s (%s, kind %d) failed: %s", rq.req.Seq, u.Job, label, kinds[label], u.Reason)
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
	completedHere, inProgressHere := 0, 0
	for name, c := range l.completed {
		if c.worker == "w1" {
			completedHere++
		}
		if plan := l.plans[name]; plan.CleanupOnly() && len(c.outputs) != 0 {
			fail("%s: a cleanup-only job with outputs", name)
		}
		label := labelOf(name, l.plans[name])
		i := slices.Index(labels, label)
		if i < 0 {
			continue // the cleanup of replaced sources or of an abandoned attempt
		}
		switch spec := sc.jobs[i]; spec.kind {
		case kindBad:
			fail("%s (%s): a job with a missing source completed", label, name)
		case kindMerge:
			if len(c.outputs) != 1 || c.outputs[0].Records() != int64(spec.sources+1) {
				fail("%s (%s): outputs %+v", label, name, c.outputs)
			} else if meta, err := blockmerge.Verify(ctx, store, c.outputs[0].ID); err != nil || meta.Size != c.outputs[0].Size {
				fail("%s (%s): output %s: %v", label, name, c.outputs[0].ID, err)
			}
		case kindCleanup:
			if len(c.outputs) != 0 {
				fail("%s (%s): a cleanup-only job with outputs", label, name)
			}
			if ok, _ := store.Exists(ctx, ck.ObjectKey(l.plans[name].Tombstones[0].Target)); ok {
				fail("%s (%s): completed, but its tombstone was not deleted", label, name)
			}
		}
	}
	for name := range l.plans {
		if js, _, ok := l.f.Job(name); ok && js.Status == ck.StatusInProgress && js.Worker == w1 {
			inProgressHere++
		}
	}
	for i, spec := range sc.jobs {
		label := labels[i]
		name := l.nameLocked(label)
		_, completed := l.completed[name]
		js, _, exists := l.f.Job(name)
		switch {
		case completed, revoked[label], sc.stopAfter > 0:
			// Completed (checked above), taken away, or stopped early:
			// released, or still in progress at the leader (checked
			// against the stats below).
		case exists && js.Status == ck.StatusExcluded:
			// Excluded: its attempts failed (a missing source, a success
			// rejected) or were abandoned (the lease ran out).
			for _, ev := range js.History {
				if ev.Kind == ck.EventFailed && spec.kind != kindBad && !strings.Contains(ev.Detail, "rejected the success report") {
					fail("%s (%s): excluded after a failure: %+v", label, name, ev)
				}
			}
		default:
			fail("%s (%s): neither completed, excluded nor taken away: %+v", label, name, js)
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
	// Without a shutdown, only assignments that arrived too late to run
	// (half their lease gone since the first send, as after an outage or
	// lost replies) are released, and never run.
	late := 0
	for _, gs := range l.grants {
		if answered[gs[0].seq].Sub(gs[0].sent) >= sc.lease/2 {
			late++
		}
	}
	if sc.stopAfter == 0 && (s.JobsReleased > uint64(late) || s.JobsReleased > s.JobsAssigned-s.JobsStarted) {
		fail("stats: %d released with nothing left at shutdown, %d assignments arrived late, %d of %d not started",
			s.JobsReleased, late, s.JobsAssigned-s.JobsStarted, s.JobsAssigned)
	}
	return problems
}
