package worker_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/internal/ident"
	"github.com/compactkit/compactkit/lease"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/worker"
)

const testLease = 10 * time.Second

func TestNewValidates(t *testing.T) {
	store := blockmerge.NewMemStore()
	l := newLeader(t, testLease)

	_, err := worker.New(nil, store, worker.Config{})
	require.ErrorIs(t, err, worker.ErrInvalidConfig)
	_, err = worker.New(l, nil, worker.Config{})
	require.ErrorIs(t, err, worker.ErrInvalidConfig)
	for _, cfg := range []worker.Config{
		{Concurrency: -1},
		{PollInterval: -time.Second},
		{RetryBackoff: -1},
		{CleanupTimeout: -1},
		{ShutdownTimeout: -1},
		{ID: "bad\x00id"},
		{ID: strings.Repeat("x", ident.MaxNameLen+1)},
	} {
		_, err := worker.New(l, store, cfg)
		require.ErrorIs(t, err, worker.ErrInvalidConfig, "%+v", cfg)
	}

	w, err := worker.New(l, store, worker.Config{})
	require.NoError(t, err)
	cfg := worker.ConfigOf(w)
	require.Equal(t, runtime.GOMAXPROCS(0), cfg.Concurrency)
	require.Equal(t, 1024, cfg.MaxReports)
	require.Equal(t, time.Second, cfg.PollInterval)
	require.Equal(t, 100*time.Millisecond, cfg.RetryBackoff)
	require.Equal(t, time.Minute, cfg.CleanupTimeout)
	require.Equal(t, 10*time.Second, cfg.ShutdownTimeout)
	require.NotNil(t, cfg.Logger)
	require.True(t, strings.HasPrefix(w.ID(), "worker-"), w.ID())

	w2, err := worker.New(l, store, worker.Config{})
	require.NoError(t, err)
	require.NotEqual(t, w.ID(), w2.ID(), "every worker gets its own ID")
}

func TestNewID(t *testing.T) {
	seen := make(map[string]bool)
	for range 100 {
		id := worker.NewID("compactor-3")
		require.True(t, strings.HasPrefix(id, "compactor-3-"), id)
		require.False(t, seen[id], "IDs repeat")
		seen[id] = true
		req := ck.PollRequest{WorkerID: id, Seq: 1}
		require.NoError(t, req.Validate())
	}
	require.True(t, strings.HasPrefix(worker.NewID(""), "worker-"))
	long := worker.NewID(strings.Repeat("n", 1000))
	require.Len(t, long, ident.MaxNameLen)
	req := ck.PollRequest{WorkerID: long, Seq: 1}
	require.NoError(t, req.Validate())
}

func TestRunTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLeader(t, testLease)
		r := start(t, l, blockmerge.NewMemStore(), worker.Config{})
		synctest.Wait()
		require.ErrorIs(t, r.w.Run(context.Background()), worker.ErrAlreadyStarted)
		require.NoError(t, r.stop())
	})
}

func TestSuccessCarriesOutputs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		store := blockmerge.NewMemStore()
		l := newLeader(t, testLease)
		l.add(t, mergeSources(t, store, "job-1", 3)...)
		r := start(t, l, store, worker.Config{Concurrency: 2})

		eventually(t, "completed", func() bool { _, ok := l.completion("job-1"); return ok })
		c, _ := l.completion("job-1")
		require.Equal(t, "w1", c.worker)
		require.Len(t, c.outputs, 1)
		out := c.outputs[0]
		require.Equal(t, ck.OutputID(c.name, c.token, 0), out.ID)
		require.True(t, strings.HasPrefix(ck.ObjectKey(out.ID), ck.AttemptPrefix(c.name, c.token)))
		require.Equal(t, uint32(1), out.Level)
		require.Equal(t, int64(4), out.Records(), "k00..k03, the shared keys collapse")
		stored, err := blockmerge.Verify(ctx, store, out.ID)
		require.NoError(t, err)
		require.Equal(t, stored, out, "the report carries the output's metadata")

		s := r.stopChecked(t, l)
		require.Equal(t, uint64(1), s.JobsAssigned)
		require.Equal(t, uint64(1), s.JobsStarted)
		require.Equal(t, ended{completed: 1}, endedOf(s))
		require.Equal(t, uint64(1), s.BlocksWritten)
		require.Equal(t, uint64(out.Size), s.BytesWritten)
		require.Zero(t, s.PollRetries+s.BadResponses)
		require.Zero(t, s.JobsHeld)
		require.Zero(t, s.JobsRunning)
		require.Positive(t, s.Polls)
	})
}

func TestMergeErrorReportedAsFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := blockmerge.NewMemStore()
		l := newLeader(t, testLease)
		l.add(t, append(mergeSources(t, store, "job-bad", 2), missingSource(t, "job-bad", 2))...)
		r := start(t, l, store, worker.Config{Concurrency: 1})

		eventually(t, "failed", func() bool { return l.job("job-bad").failures == 1 })
		var failure *ck.StatusUpdate
		for _, rep := range l.reportsOf("job-bad") {
			require.NotEqual(t, ck.ReportSuccess, rep.update.Status)
			if rep.update.Status == ck.ReportFailure {
				failure = &rep.update
			}
		}
		require.NotNil(t, failure)
		require.Contains(t, failure.Reason, sourceID("job-bad", 2), "the reason names the missing source")
		require.Empty(t, failure.Outputs)
		// Nothing of the attempt is left in the store.
		j := l.job("job-bad")
		var left []string
		require.NoError(t, store.List(context.Background(), ck.AttemptPrefix(j.name, j.tokens[0]), func(k string) error {
			left = append(left, k)
			return nil
		}))
		require.Empty(t, left)

		require.Equal(t, ended{failed: 1}, endedOf(r.stopChecked(t, l)))
	})
}

// A job whose lease is lost — revoked by the leader, or run out on the
// worker's clock while the leader is unreachable — is cancelled with
// lease.ErrLeaseLost, dropped, and never reported again; its slot is free.
func TestLostLeaseCancelsJob(t *testing.T) {
	for _, tc := range []struct {
		name        string
		concurrency int
		lose        func(t *testing.T, l *fsmLeader, m *merges)
	}{
		{"no lease", 2, func(t *testing.T, l *fsmLeader, m *merges) {
			l.revoke(t, "job-1")
			eventually(t, "cancelled", func() bool { return m.cancelCause("job-1") != nil })
		}},
		{"local expiry", 1, func(t *testing.T, l *fsmLeader, m *merges) {
			assigned := time.Now()
			l.setDown(true)
			time.Sleep(testLease - time.Millisecond)
			synctest.Wait()
			require.Nil(t, m.cancelCause("job-1"), "the lease still holds")
			time.Sleep(2 * time.Millisecond)
			synctest.Wait()
			require.NotNil(t, m.cancelCause("job-1"), "cancelled when the local lease ran out")
			require.WithinDuration(t, assigned.Add(testLease), time.Now(), 2*time.Millisecond)
			l.setDown(false)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newLeader(t, testLease)
				r, m := runHeld(t, l, worker.Config{Concurrency: tc.concurrency}, "job-1")

				eventually(t, "merging", func() bool { return m.startedCount("job-1") == 1 })
				first := l.job("job-1").tokens[0]
				tc.lose(t, l, m)
				require.ErrorIs(t, m.cancelCause("job-1"), lease.ErrLeaseLost)
				eventually(t, "dropped", func() bool { return r.w.Stats().JobsLost == 1 })
				mark := len(l.requests())
				time.Sleep(time.Minute) // more polls
				synctest.Wait()

				for _, rq := range l.requests()[mark:] {
					require.Empty(t, rq.req.Updates, "a dropped job is not reported again")
					require.Equal(t, int32(tc.concurrency), rq.req.FreeSlots, "its slot is free again")
				}
				for _, rep := range l.reportsOf("job-1") {
					require.Equal(t, first, rep.update.Token)
					require.NotEqual(t, ck.ReportSuccess, rep.update.Status)
				}
				require.Empty(t, l.successesOf("job-1"))

				require.Equal(t, ended{lost: 1}, endedOf(r.stopChecked(t, l)))
			})
		})
	}
}

// A merge that completes at the moment its lease is lost is never reported
// successful: the worker decides under its lock.
func TestNoSuccessAfterLeaseLostAtCompletion(t *testing.T) {
	for _, how := range []string{"no lease", "local expiry"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := blockmerge.NewMemStore()
				l := newLeader(t, testLease)
				l.add(t, mergeSources(t, store, "job-1", 2)...)
				entered := make(chan struct{})
				proceed := make(chan struct{})
				r := start(t, l, store, worker.Config{Concurrency: 1}, func(w *worker.Worker) {
					worker.SetAfterMerge(w, func(string) {
						close(entered)
						<-proceed
					})
				})

				<-entered // the merge succeeded; the worker has not decided yet
				switch how {
				case "no lease":
					l.revoke(t, "job-1")
					eventually(t, "dropped", func() bool { return r.w.Stats().JobsLost == 1 })
				case "local expiry":
					l.setDown(true)
					time.Sleep(testLease)
					synctest.Wait()
					l.setDown(false)
				}
				close(proceed)
				eventually(t, "lost", func() bool { return r.w.Stats().JobsLost == 1 })
				time.Sleep(time.Minute)
				synctest.Wait()

				require.Empty(t, l.successesOf("job-1"), "a lost job is never reported successful")
				_, done := l.completion("job-1")
				require.False(t, done)
				s := r.stopChecked(t, l)
				require.Equal(t, uint64(1), s.BlocksWritten, "the merge did write its output")
				require.Equal(t, ended{lost: 1}, endedOf(s))
			})
		})
	}
}

// A job that ended successfully while the leader was unreachable, and whose
// lease ran out before its report could be sent, is not reported: the check
// is made again, under the lock, when each request is built.
func TestNoSuccessWhenLeaseLostBeforeReport(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMerges()
		m.take["job-1"] = 3 * time.Second
		l := newLeader(t, testLease)
		r := runWith(t, l, m, worker.Config{Concurrency: 1}, "job-1")
		synctest.Wait()
		l.setDown(true) // the next request (in progress) is retried until the leader is back

		time.Sleep(5 * time.Second)
		synctest.Wait()
		require.Equal(t, uint64(1), r.w.Stats().BlocksWritten, "the merge succeeded")
		time.Sleep(testLease)
		synctest.Wait()
		l.setDown(false)
		eventually(t, "lost", func() bool { return r.w.Stats().JobsLost == 1 })
		time.Sleep(time.Minute)
		synctest.Wait()

		require.Empty(t, l.successesOf("job-1"), "a lost job is never reported successful")
		for _, rq := range l.requests() {
			for _, u := range rq.req.Updates {
				require.Equal(t, ck.ReportInProgress, u.Status)
			}
		}
		r.stopChecked(t, l)
	})
}

// A request whose reply was lost is sent again with the same sequence number
// and the same content; the leader answers it with the recorded response,
// so the assignment it carried is not lost.
func TestLostReplyRetriedWithSameSeq(t *testing.T) {
	for _, where := range []string{"reply lost", "request lost"} {
		t.Run(where, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newLeader(t, testLease)
				lost := map[string]int{}
				switch where {
				case "reply lost":
					// Lose the replies carrying an assignment, twice each.
					l.dropReply = func(req *ck.PollRequest, resp *ck.PollResponse) bool {
						for _, j := range resp.Jobs {
							if j.Outcome == ck.OutcomeAssigned && lost[j.Job] < 2 {
								lost[j.Job]++
								return true
							}
						}
						return false
					}
				case "request lost":
					// Lose the requests reporting a success, twice each.
					l.lose = func(req *ck.PollRequest) bool {
						for _, u := range req.Updates {
							if u.Status == ck.ReportSuccess && lost[u.Job] < 2 {
								lost[u.Job]++
								return true
							}
						}
						return false
					}
				}
				r := run(t, l, worker.Config{Concurrency: 1}, "job-1", "job-2")
				eventually(t, "completed", func() bool { return l.numCompleted() == 2 })
				r.stopChecked(t, l) // includes: every retry had the first attempt's content

				reqs := l.requests()
				retries := 0
				for i := 1; i < len(reqs); i++ {
					prev, cur := reqs[i-1].req, reqs[i].req
					if cur.Seq == prev.Seq {
						retries++
						require.Equal(t, prev, cur, "a retry repeats the request")
						require.False(t, reqs[i].applied && reqs[i-1].applied)
					} else {
						require.Equal(t, prev.Seq+1, cur.Seq, "a new request takes the next number")
					}
				}
				require.Equal(t, 4, retries)
				for _, job := range []string{"job-1", "job-2"} {
					c, _ := l.completion(job)
					require.Len(t, c.outputs, 1)
				}
				s := r.w.Stats()
				require.Equal(t, uint64(4), s.PollRetries)
				require.Equal(t, uint64(2), s.JobsAssigned, "each job was assigned once")
				require.Equal(t, uint64(2), s.JobsCompleted)
				require.Zero(t, s.JobsLost)
			})
		})
	}
}

// The lease of an assignment is measured from the first send of the request
// that got it, even when a retry got the answer.
func TestLeaseMeasuredFromFirstSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLeader(t, testLease)
		// The reply carrying the assignment is lost; the leader is then
		// unreachable, so the lease can only run out.
		l.dropReply = func(req *ck.PollRequest, resp *ck.PollResponse) bool {
			if len(resp.Jobs) > 0 && resp.Jobs[0].Outcome == ck.OutcomeAssigned && !l.down {
				l.down = true
				return true
			}
			return false
		}
		r, m := runHeld(t, l, worker.Config{Concurrency: 1, RetryBackoff: 2 * time.Second, PollInterval: 2 * time.Second}, "job-1")
		synctest.Wait()
		sent := time.Now()
		time.Sleep(time.Second)
		l.mu.Lock()
		l.down = false // the retry, 2s after the first send, gets the recorded assignment
		l.dropReply = nil
		l.mu.Unlock()
		eventually(t, "merging", func() bool { return m.startedCount("job-1") == 1 })
		require.Less(t, time.Since(sent), testLease/2, "assigned before its first renewal is due")
		l.setDown(true)
		time.Sleep(time.Until(sent.Add(testLease - time.Millisecond)))
		synctest.Wait()
		require.Nil(t, m.cancelCause("job-1"))
		time.Sleep(2 * time.Millisecond)
		synctest.Wait()
		require.ErrorIs(t, m.cancelCause("job-1"), lease.ErrLeaseLost,
			"the lease ran out 10s after the first send, not 10s after the retry")
		l.setDown(false)
		r.stopChecked(t, l)
	})
}

// An assignment answered after an outage of the leader longer than the
// lease — the lease, measured from the poll's first send, is over on
// arrival — is not run and not dropped: the worker reports it released at
// once, the leader takes it back without charging a failure (one failure
// would exclude it here), and assigns it again.
func TestLateAssignmentReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLeader(t, testLease)
		l.setDown(true)
		r := run(t, l, worker.Config{Concurrency: 1, RetryBackoff: time.Second, PollInterval: time.Second}, "job-1")
		synctest.Wait()
		time.Sleep(testLease + time.Second) // the poll is retried through the outage
		l.setDown(false)
		eventually(t, "compacted", func() bool { _, ok := l.completion("job-1"); return ok })

		j := l.job("job-1")
		require.Zero(t, j.failures, "no failure charged")
		require.Equal(t, 1, j.releases)
		require.Len(t, j.tokens, 2, "assigned again after the release")
		reps := l.reportsOf("job-1")
		require.Equal(t, ck.ReportReleased, reps[0].update.Status)
		require.Equal(t, ck.OutcomeAccepted, reps[0].answer)
		var firstGrant time.Time
		l.mu.Lock()
		for a, gs := range l.grants {
			if a.job == j.name && (firstGrant.IsZero() || gs[0].at.Before(firstGrant)) {
				firstGrant = gs[0].at
			}
		}
		l.mu.Unlock()
		require.Less(t, reps[0].at.Sub(firstGrant), time.Second, "released at once, not after a poll interval")
		st := r.stopChecked(t, l)
		require.Equal(t, uint64(2), st.JobsAssigned)
		require.Equal(t, uint64(1), st.JobsStarted, "the late assignment was not run")
		require.Equal(t, ended{completed: 1, released: 1}, endedOf(st))
	})
}

func TestShutdownReleasesJobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLeader(t, testLease)
		r, m := runHeld(t, l, worker.Config{Concurrency: 3}, "job-1", "job-2")
		eventually(t, "merging", func() bool { return m.startedCount("job-1") == 1 && m.startedCount("job-2") == 1 })

		require.NoError(t, r.stop(), "a clean shutdown")
		for _, job := range []string{"job-1", "job-2"} {
			require.ErrorIs(t, m.cancelCause(job), worker.ErrShutdown)
			j := l.job(job)
			require.False(t, j.inProgress, "%s was given back", job)
			require.Equal(t, 1, j.releases)
			require.Zero(t, j.failures, "a release counts no failure")
			for _, rep := range l.reportsOf(job) {
				require.Contains(t, []ck.ReportStatus{ck.ReportInProgress, ck.ReportReleased}, rep.update.Status)
			}
		}
		reqs := l.requests()
		last := reqs[len(reqs)-1].req
		require.Zero(t, last.FreeSlots, "the final poll takes no job")
		require.Len(t, last.Updates, 2)
		for _, u := range last.Updates {
			require.Equal(t, ck.ReportReleased, u.Status)
		}
		l.check(t)
		s := r.w.Stats()
		require.Equal(t, ended{released: 2}, endedOf(s))
		require.Zero(t, s.JobsHeld)
		require.Zero(t, s.JobsRunning)
	})
}

// A request left unanswered at shutdown is retried first: the jobs it was
// assigned are released rather than left to expire.
func TestShutdownRetriesPendingRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLeader(t, testLease)
		l.dropReply = func(req *ck.PollRequest, resp *ck.PollResponse) bool { return len(resp.Jobs) > 0 }
		r := run(t, l, worker.Config{Concurrency: 1, RetryBackoff: time.Hour}, "job-1")
		synctest.Wait() // the worker waits to retry
		require.True(t, l.job("job-1").inProgress)
		l.mu.Lock()
		l.dropReply = nil
		l.mu.Unlock()

		require.NoError(t, r.stop())
		j := l.job("job-1")
		require.False(t, j.inProgress)
		require.Equal(t, 1, j.releases)
		reqs := l.requests()
		require.Len(t, reqs, 3, "the request, its retry at shutdown, the final poll")
		require.Equal(t, reqs[0].req, reqs[1].req)
		require.Equal(t, uint64(2), reqs[2].req.Seq)
		require.Equal(t, []ck.StatusUpdate{{Job: j.name, Token: j.tokens[0], Status: ck.ReportReleased}}, reqs[2].req.Updates)
		l.check(t)
		s := r.w.Stats()
		require.Equal(t, uint64(1), s.JobsAssigned)
		require.Zero(t, s.JobsStarted, "not started during shutdown")
		require.Equal(t, uint64(1), s.JobsReleased)
	})
}

func TestShutdownBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLeader(t, testLease)
		r, m := runHeld(t, l, worker.Config{Concurrency: 1, ShutdownTimeout: 5 * time.Second}, "job-1")
		eventually(t, "merging", func() bool { return m.startedCount("job-1") == 1 })
		l.setDown(true)
		begin := time.Now()
		err := r.stop()
		require.ErrorIs(t, err, worker.ErrShutdown)
		require.Equal(t, 5*time.Second, time.Since(begin), "the final poll is retried for the shutdown timeout")
		s := r.w.Stats()
		require.Equal(t, uint64(1), s.JobsLost, "unanswered: the leader will reassign it")
		require.Zero(t, s.JobsHeld)
	})
}

// A job that does not stop when cancelled is released all the same once the
// shutdown stops waiting for it.
func TestShutdownWithStuckJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMerges()
		m.holdJob("job-1")
		m.stubborn["job-1"] = true
		l := newLeader(t, testLease)
		r := runWith(t, l, m, worker.Config{Concurrency: 1, ShutdownTimeout: 2 * time.Second}, "job-1")
		eventually(t, "merging", func() bool { return m.startedCount("job-1") == 1 })

		begin := time.Now()
		err := r.stop()
		require.ErrorIs(t, err, worker.ErrShutdown)
		require.Contains(t, err.Error(), "1 jobs still running")
		require.Equal(t, 2*time.Second, time.Since(begin))
		reqs := l.requests()
		last := reqs[len(reqs)-1].req
		require.Equal(t, []ck.StatusUpdate{{Job: l.job("job-1").name, Token: last.Updates[0].Token, Status: ck.ReportReleased}}, last.Updates)
		require.Zero(t, last.FreeSlots)
		require.Equal(t, 1, l.job("job-1").releases)
		s := r.w.Stats()
		require.Equal(t, uint64(1), s.JobsReleased)
		require.Equal(t, 1, s.JobsRunning)

		m.release("job-1")
		synctest.Wait()
		require.Zero(t, r.w.Stats().JobsRunning)
		require.Empty(t, l.successesOf("job-1"))
		l.check(t)
	})
}

func TestFreeSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLeader(t, testLease)
		jobs := []string{"job-1", "job-2", "job-3", "job-4", "job-5"}
		r, m := runHeld(t, l, worker.Config{Concurrency: 3}, jobs...)

		synctest.Wait()
		reqs := l.requests()
		require.Equal(t, int32(3), reqs[0].req.FreeSlots)
		require.Equal(t, 3, r.w.Stats().JobsRunning)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		reqs = l.requests()
		require.Equal(t, int32(0), reqs[len(reqs)-1].req.FreeSlots)
		require.Len(t, reqs[len(reqs)-1].req.Updates, 3)

		m.release("job-1")
		eventually(t, "job-1 completed", func() bool { _, ok := l.completion("job-1"); return ok })
		synctest.Wait()
		require.Equal(t, 1, m.startedCount("job-4"), "the freed slot took the next job")
		require.Zero(t, m.startedCount("job-5"))
		for _, job := range jobs[1:] {
			m.release(job)
		}
		eventually(t, "all completed", func() bool { return l.numCompleted() == 5 })
		time.Sleep(5 * time.Second)
		synctest.Wait()
		r.stopChecked(t, l)

		// Every request offered the slots not taken by jobs in progress.
		for _, rq := range l.requests() {
			inProgress := 0
			for _, u := range rq.req.Updates {
				if u.Status == ck.ReportInProgress {
					inProgress++
				}
			}
			if rq.req.FreeSlots > 0 || len(rq.req.Updates) > 0 {
				require.Equal(t, int32(3-inProgress), rq.req.FreeSlots, "request %d: %+v", rq.req.Seq, rq.req.Updates)
			}
		}
		reqs = l.requests()
		require.Equal(t, int32(3), reqs[len(reqs)-1].req.FreeSlots, "no job held: no final poll")
		require.Equal(t, uint64(5), r.w.Stats().JobsCompleted)
	})
}

// Every job held is renewed at least every half of its lease, whatever the
// poll interval, and a job that outlives many leases completes.
func TestRenewalsEveryHalfLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMerges()
		l := newLeader(t, testLease)
		// A leader that gives job-2 shorter leases than the state
		// machine's: the worker renews each job by its own lease.
		l.rewrite = func(req *ck.PollRequest, resp *ck.PollResponse) {
			for i, j := range resp.Jobs {
				if labelOf(j.Job, l.plans[j.Job]) == "job-2" && (j.Outcome == ck.OutcomeAssigned || j.Outcome == ck.OutcomeRenewed) {
					resp.Jobs[i].Lease -= 3 * time.Second
					resp.Jobs[i].Deadline -= int64(3 * time.Second)
				}
			}
		}
		m.take["job-1"] = time.Minute
		m.take["job-2"] = time.Minute
		r := runWith(t, l, m, worker.Config{Concurrency: 2, PollInterval: time.Hour}, "job-1", "job-2")

		var renewals = map[string][]time.Time{}
		eventually(t, "renewed for a minute", func() bool {
			for _, job := range []string{"job-1", "job-2"} {
				if j := l.job(job); j.inProgress {
					renewals[job] = j.renewals
				}
			}
			return l.numCompleted() == 2
		})
		for job, half := range map[string]time.Duration{"job-1": 5 * time.Second, "job-2": 3500 * time.Millisecond} {
			times := renewals[job]
			require.GreaterOrEqual(t, len(times), int(time.Minute/half), job)
			for i := 1; i < len(times); i++ {
				require.LessOrEqual(t, times[i].Sub(times[i-1]), half, "%s: renewal %d", job, i)
			}
		}
		s := r.stopChecked(t, l)
		require.Equal(t, uint64(2), s.JobsCompleted)
		require.Zero(t, s.JobsLost)
		require.Positive(t, s.Renewals)
	})
}

func TestTombstonesDeletedAndConfirmed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		store := blockmerge.NewMemStore()
		// Two tombstones, released a second after they were made: the
		// block old-1, dropped by retention, and what another worker
		// left of an attempt it abandoned. A compaction job carries one;
		// a cleanup-only job takes the other.
		cfg := leaderConfig(testLease)
		cfg.Planner.TombstonesPerJob = 1
		cfg.Index.CleanupDelay = time.Second
		l := newLeaderWith(t, cfg, raftfsm.WithCleanupAfter(time.Second))
		l.add(t, writeBlock(t, store, "old", "old-1", "a"))
		l.drop(t, "old")
		orphan := l.abandoned(t, store, "job-x", 2)
		for _, k := range []string{"0", "1"} {
			require.NoError(t, store.Put(ctx, orphan+k, strings.NewReader("orphan")))
		}
		time.Sleep(3 * time.Second)
		l.add(t, mergeSources(t, store, "job-1", 2)...)
		r := start(t, l, store, worker.Config{Concurrency: 2})

		eventually(t, "completed", func() bool { return l.numCompleted() == 2 })
		ok, err := store.Exists(ctx, ck.ObjectKey("old-1"))
		require.NoError(t, err)
		require.False(t, ok, "the tombstoned block is deleted")
		require.NoError(t, store.List(ctx, orphan, func(k string) error {
			t.Errorf("orphan %s left", k)
			return nil
		}))
		c, _ := l.completion("job-1")
		require.Len(t, c.outputs, 1)
		cleanup := l.cleanupJob()
		c, ok = l.completion(cleanup)
		require.True(t, ok)
		require.Empty(t, c.outputs, "a cleanup-only job succeeds without outputs")
		for _, job := range []string{"job-1", cleanup} {
			reps := l.reportsOf(job)
			require.Equal(t, ck.ReportSuccess, reps[len(reps)-1].update.Status, "the success report confirms the tombstones")
		}
		s := r.stopChecked(t, l)
		require.Equal(t, uint64(2), s.TombstonesDeleted)
		require.Equal(t, uint64(2), s.JobsCompleted)
		require.Equal(t, uint64(1), s.BlocksWritten)
	})
}

// failingStore fails the deletion of one key, and blocks deletions by
// prefix until their context is done.
type failingStore struct {
	blockmerge.Store
	failKey       string
	blockPrefixes bool
}

func (s *failingStore) Delete(ctx context.Context, key string) error {
	if key == s.failKey {
		return errors.New("injected: delete refused")
	}
	return s.Store.Delete(ctx, key)
}

func (s *failingStore) DeleteByPrefix(ctx context.Context, prefix string) error {
	if s.blockPrefixes {
		<-ctx.Done()
		return ctx.Err()
	}
	return s.Store.DeleteByPrefix(ctx, prefix)
}

func TestTombstoneDeletionFailureReportsFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mem := blockmerge.NewMemStore()
		store := &failingStore{Store: mem, failKey: ck.ObjectKey("old-1")}
		// Two blocks dropped by retention: the compaction job carries
		// both tombstones once they are released.
		cfg := leaderConfig(testLease)
		cfg.Planner.TombstonesPerJob = 2
		cfg.Index.CleanupDelay = time.Second
		l := newLeaderWith(t, cfg)
		l.add(t, writeBlock(t, mem, "old", "old-1", "a"), writeBlock(t, mem, "old", "old-2", "b"))
		l.drop(t, "old")
		time.Sleep(2 * time.Second)
		l.add(t, mergeSources(t, mem, "job-1", 2)...)
		r := start(t, l, store, worker.Config{Concurrency: 1})

		eventually(t, "failed", func() bool { return l.job("job-1").failures == 1 })
		reps := l.reportsOf("job-1")
		last := reps[len(reps)-1].update
		require.Equal(t, ck.ReportFailure, last.Status)
		require.Contains(t, last.Reason, "old-1")
		require.Contains(t, last.Reason, "injected")
		ok, err := mem.Exists(ctx, ck.ObjectKey("old-2"))
		require.NoError(t, err)
		require.False(t, ok, "the other deletions go ahead")
		require.Equal(t, l.job("job-1").name, last.Job)
		require.NoError(t, mem.List(ctx, ck.AttemptPrefix(last.Job, last.Token), func(k string) error {
			t.Errorf("the merge ran: %s", k)
			return nil
		}))
		s := r.stopChecked(t, l)
		require.Equal(t, uint64(1), s.TombstonesDeleted)
		require.Equal(t, uint64(1), s.JobsFailed)
		require.Zero(t, s.BlocksWritten)
	})
}

func TestCleanupTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &failingStore{Store: blockmerge.NewMemStore(), blockPrefixes: true}
		// What another worker left of an attempt it abandoned: a
		// cleanup-only job deletes it by prefix.
		cfg := leaderConfig(testLease)
		cfg.Index.CleanupDelay = time.Second
		l := newLeaderWith(t, cfg, raftfsm.WithCleanupAfter(time.Second))
		l.abandoned(t, store, "job-x", 2)
		time.Sleep(3 * time.Second)
		r := start(t, l, store, worker.Config{Concurrency: 1, CleanupTimeout: 2 * time.Second})

		begin := time.Now()
		eventually(t, "failed", func() bool { return l.cleanupJob() != "" && l.job(l.cleanupJob()).failures == 1 })
		reps := l.reportsOf(l.cleanupJob())
		last := reps[len(reps)-1]
		require.Equal(t, ck.ReportFailure, last.update.Status)
		require.Contains(t, last.update.Reason, "timed out after 2s")
		require.Equal(t, 2*time.Second, last.at.Sub(begin))
		r.stopChecked(t, l)
	})
}

// A malformed response (one the state machine never gives: an unknown
// outcome, about a job not reported) is ignored, and the worker carries
// on with the next request. The first request is answered by the client
// wrapper without reaching the leader.
func TestInvalidResponseIgnored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := blockmerge.NewMemStore()
		l := newLeader(t, testLease)
		l.add(t, mergeSources(t, store, "job-1", 2)...)
		var seqs []uint64
		client := worker.ClientFunc(func(ctx context.Context, req *ck.PollRequest) (*ck.PollResponse, error) {
			seqs = append(seqs, req.Seq)
			if req.Seq == 1 {
				return &ck.PollResponse{Jobs: []ck.JobReply{{Job: "x", Outcome: 99}}}, nil
			}
			return l.Poll(ctx, req)
		})
		r := start(t, client, store, worker.Config{Concurrency: 1})
		eventually(t, "completed", func() bool { return l.numCompleted() == 1 })
		require.NoError(t, r.stop())
		require.Equal(t, []uint64{1, 2, 3}, seqs[:3])
		s := r.w.Stats()
		require.Equal(t, uint64(1), s.BadResponses)
		require.Equal(t, uint64(1), s.JobsCompleted)
	})
}

// Two assignments of one job: a stale attempt the worker still holds is
// dropped when the leader assigns the job again, and only the new attempt
// reports.
//
// The state machine assigns the job again to the same worker when its
// lease expired and the worker's poll did not report it: here the worker
// reports one job per poll (MaxReports), and the leader's clock jumps
// past the lease just before a poll reporting only job-2.
func TestReassignedJobReplacesStaleAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLeader(t, testLease, func(c *raftfsm.Config) { c.Scheduler.MaxFailures = 0 })
		skewed := false
		l.before = func(req *ck.PollRequest) {
			if !skewed && len(req.Updates) == 1 && labelOf(req.Updates[0].Job, l.plans[req.Updates[0].Job]) == "job-2" {
				skewed = true
				l.skew = testLease + time.Second
			}
		}
		r, m := runHeld(t, l, worker.Config{Concurrency: 3, MaxReports: 1}, "job-1", "job-2")
		eventually(t, "both attempts of job-1 started", func() bool { return m.startedCount("job-1") == 2 })
		require.ErrorIs(t, m.cancelCause("job-1"), lease.ErrLeaseLost, "the stale attempt is cancelled")
		m.release("job-1")
		eventually(t, "completed", func() bool { return r.w.Stats().JobsCompleted == 1 })
		r.stopChecked(t, l)
		j := l.job("job-1")
		require.Len(t, j.tokens, 2)
		second := j.tokens[1]
		successes := l.successesOf("job-1")
		require.NotEmpty(t, successes)
		for _, req := range successes {
			for _, u := range req.Updates {
				if u.Status == ck.ReportSuccess {
					require.Equal(t, ck.OutputID(j.name, second, 0), u.Outputs[0].ID)
					require.Equal(t, second, u.Token)
				}
			}
		}
		for _, rep := range l.reportsOf("job-1") {
			if rep.update.Token != second {
				require.Equal(t, ck.ReportInProgress, rep.update.Status, "the stale attempt only ever reported in progress")
			}
		}
		c, ok := l.completion("job-1")
		require.True(t, ok)
		require.Equal(t, second, c.token)
		s := r.w.Stats()
		require.Equal(t, uint64(3), s.JobsAssigned, "job-1 twice, job-2 once")
		require.Equal(t, ended{completed: 1, released: 1, lost: 1}, endedOf(s), "job-2 released at shutdown")
	})
}

func TestLogging(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf syncBuffer
		store := blockmerge.NewMemStore()
		l := newLeader(t, testLease)
		l.add(t, mergeSources(t, store, "job-1", 2)...)
		w, err := worker.New(l, store, worker.Config{ID: "w-log", Concurrency: 1, Logger: newTextLogger(&buf)})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- w.Run(ctx) }()
		eventually(t, "completed", func() bool { return l.numCompleted() == 1 })
		cancel()
		require.NoError(t, <-done)
		out := buf.String()
		for _, want := range []string{"worker started", "job started", "job succeeded", "worker stopped", "worker=w-log", "job=job-1"} {
			require.Contains(t, out, want)
		}
	})
}

// A request the leader rejects as invalid is not retried: its success
// reports become failure reports, sent in a new request with the next
// sequence number, and the worker carries on.
func TestRejectedRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLeader(t, testLease)
		rejected := 0
		l.reject = func(req *ck.PollRequest) error {
			for _, u := range req.Updates {
				if labelOf(u.Job, l.plans[u.Job]) == "job-1" && u.Status == ck.ReportSuccess {
					rejected++
					return errors.New("outputs do not fit the plan")
				}
			}
			return nil
		}
		r := run(t, l, worker.Config{Concurrency: 1}, "job-1", "job-2")
		eventually(t, "job-1 failed, job-2 completed", func() bool {
			_, ok := l.completion("job-2")
			return ok && l.job("job-1").failures == 1
		})
		r.stopChecked(t, l) // includes: sequence numbers grow by one, retries repeat
		require.Equal(t, 1, rejected, "a rejected request is not retried")

		reqs := l.requests()
		for i, rq := range reqs {
			for _, u := range rq.req.Updates {
				if u.Job == l.job("job-1").name && u.Status == ck.ReportSuccess {
					require.Equal(t, rq.req.Seq+1, reqs[i+1].req.Seq, "the next request takes the next number")
					require.Equal(t, []ck.StatusUpdate{{Job: u.Job, Token: u.Token, Status: ck.ReportFailure,
						Reason: "the leader rejected the success report: fsm leader: compactkit: request rejected by the leader: outputs do not fit the plan"}},
						reqs[i+1].req.Updates)
				}
			}
		}
		s := r.w.Stats()
		require.Equal(t, uint64(1), s.Rejections)
		require.Equal(t, ended{completed: 1, failed: 1}, endedOf(s))
		require.Zero(t, s.PollRetries)
	})
}

// A rejected final poll at shutdown: its successes are reported failed in
// one more request, so nothing is left for the leases to expire.
func TestRejectedFinalPoll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLeader(t, testLease)
		r, m := runHeld(t, l, worker.Config{Concurrency: 2}, "job-1", "job-2")
		eventually(t, "both running", func() bool { return m.startedCount("job-1") == 1 && m.startedCount("job-2") == 1 })
		// job-1 succeeds while the leader is unreachable; the leader is
		// back during the shutdown, and rejects any success.
		l.mu.Lock()
		l.down = true
		l.reject = func(req *ck.PollRequest) error {
			for _, u := range req.Updates {
				if u.Status == ck.ReportSuccess {
					return errors.New("no")
				}
			}
			return nil
		}
		l.mu.Unlock()
		m.release("job-1")
		time.Sleep(3 * time.Second)
		synctest.Wait()
		errc := make(chan error)
		go func() { errc <- r.stop() }()
		time.Sleep(time.Second)
		l.setDown(false)
		require.NoError(t, <-errc)
		l.check(t)

		require.Equal(t, 1, l.job("job-1").failures)
		require.Equal(t, 1, l.job("job-2").releases)
		require.Zero(t, l.job("job-2").failures)
		reqs := l.requests()
		last := reqs[len(reqs)-1].req
		require.Len(t, last.Updates, 2)
		require.Equal(t, ck.ReportFailure, last.Updates[0].Status)
		require.Contains(t, last.Updates[0].Reason, "rejected")
		require.Equal(t, ck.ReportReleased, last.Updates[1].Status)
		s := r.w.Stats()
		require.Equal(t, uint64(1), s.Rejections)
		require.Equal(t, ended{failed: 1, released: 1}, endedOf(s))
		require.Zero(t, s.JobsHeld)
	})
}

// A worker holding more jobs than MaxReports reports them over successive
// polls — final reports first, then the jobs reported longest ago — and
// every job is renewed, completed and, at shutdown, released; a leader
// enforcing the limit never has to refuse a request.
func TestReportsSplitOverMaxReports(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLeader(t, testLease)
		l.reject = func(req *ck.PollRequest) error {
			if len(req.Updates) > 2 {
				return fmt.Errorf("%d updates over the limit of 2", len(req.Updates))
			}
			return nil
		}
		jobs := jobNames(7)
		r, m := runHeld(t, l, worker.Config{Concurrency: 5, MaxReports: 2}, jobs...)
		eventually(t, "five merging", func() bool { return r.w.Stats().JobsRunning == 5 })
		// Several leases long: every job held is renewed all along.
		time.Sleep(3 * testLease)
		synctest.Wait()
		for _, job := range jobs[:5] {
			require.True(t, l.job(job).inProgress, "%s kept its lease", job)
		}
		// Completions come first in the next poll, ahead of renewals.
		m.release("job-3")
		eventually(t, "job-3 completed", func() bool { _, ok := l.completion("job-3"); return ok })
		for _, job := range jobs {
			if job != "job-3" {
				m.release(job)
			}
		}
		eventually(t, "all completed", func() bool { return l.numCompleted() == len(jobs) })
		r.stopChecked(t, l)
		for _, rq := range l.requests() {
			require.LessOrEqual(t, len(rq.req.Updates), 2, "request %d", rq.req.Seq)
		}
		s := r.w.Stats()
		require.Equal(t, ended{completed: uint64(len(jobs))}, endedOf(s))
	})
}

// At shutdown, more jobs than MaxReports are all released, over several
// final polls.
func TestShutdownReleasesOverMaxReports(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLeader(t, testLease)
		jobs := jobNames(5)
		r, _ := runHeld(t, l, worker.Config{Concurrency: 5, MaxReports: 2}, jobs...)
		eventually(t, "five merging", func() bool { return r.w.Stats().JobsRunning == 5 })
		r.stopChecked(t, l)
		for _, job := range jobs {
			j := l.job(job)
			require.False(t, j.inProgress, "%s was given back", job)
			require.Equal(t, 1, j.releases, job)
		}
		for _, rq := range l.requests() {
			require.LessOrEqual(t, len(rq.req.Updates), 2, "request %d", rq.req.Seq)
		}
		require.Equal(t, uint64(5), r.w.Stats().JobsReleased)
	})
}

// jobNames returns the labels job-0 to job-<n-1>.
func jobNames(n int) []string {
	jobs := make([]string, n)
	for i := range jobs {
		jobs[i] = fmt.Sprintf("job-%d", i)
	}
	return jobs
}
