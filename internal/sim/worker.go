package sim

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/fencing"
)

// msg is a message in flight: a poll request to the leader, or a response
// to a worker.
type msg struct {
	at     int64
	id     uint64
	req    *ck.PollRequest
	worker string
	seq    uint64
	resp   *ck.PollResponse
}

// send puts a message on the network, which may lose, duplicate or delay
// it.
func (s *Sim) send(m *msg) {
	lose, dup, delay := FaultLoseRequest, FaultDupRequest, FaultDelayRequest
	if m.resp != nil {
		lose, dup, delay = FaultLoseResponse, FaultDupResponse, FaultDelayResponse
	}
	if s.chance(lose) {
		return
	}
	copies := 1
	if s.chance(dup) {
		copies = 2
	}
	for range copies {
		c := *m
		c.at = s.now + int64(10*time.Millisecond) + s.rng.Int64N(int64(100*time.Millisecond))
		if s.chance(delay) {
			c.at += s.rng.Int64N(int64(3 * time.Second))
		}
		s.msgSeq++
		c.id = s.msgSeq
		s.net = append(s.net, &c)
	}
}

// deliver hands over the messages that are due, in (time, id) order.
func (s *Sim) deliver() {
	var due, keep []*msg
	for _, m := range s.net {
		if m.at <= s.now {
			due = append(due, m)
		} else {
			keep = append(keep, m)
		}
	}
	s.net = keep
	slices.SortFunc(due, func(a, b *msg) int {
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	for _, m := range due {
		if m.req != nil {
			s.handleRequest(m.req)
			continue
		}
		w := s.workerByID(m.worker)
		if w == nil {
			continue
		}
		if s.now < w.stalledUntil {
			m.at = w.stalledUntil
			s.net = append(s.net, m)
			continue
		}
		s.onResponse(w, m.seq, m.resp)
	}
}

// worker is a simulated compaction worker.
type worker struct {
	id           string
	capacity     int
	seq          uint64
	out          *outstanding
	jobs         []*wjob
	stalledUntil int64
	nextPoll     int64
	shutdown     bool
}

type outstanding struct {
	req    *ck.PollRequest
	sentAt int64 // first send: the lease keeper measures from here
	last   int64
	tries  int
}

// wjob is a job as the worker sees it.
type wjob struct {
	name     string
	token    fencing.Token
	plan     *ck.JobPlan
	leaseEnd int64 // local clock
	doneAt   int64
	status   ck.ReportStatus
	outputs  []ck.BlockMeta
}

func (s *Sim) addWorker() {
	s.nextWID++
	w := &worker{id: fmt.Sprintf("w%d", s.nextWID), capacity: 1 + s.rng.IntN(3), nextPoll: s.now}
	s.workers = append(s.workers, w)
	s.tracef("worker %s joins (capacity %d)", w.id, w.capacity)
}

func (s *Sim) removeWorker(w *worker) {
	s.workers = slices.DeleteFunc(s.workers, func(x *worker) bool { return x == w })
	s.addWorker()
}

func (s *Sim) workerByID(id string) *worker {
	for _, w := range s.workers {
		if w.id == id {
			return w
		}
	}
	return nil
}

func (s *Sim) workerStep(w *worker) {
	if s.now < w.stalledUntil {
		return
	}
	if s.chance(FaultWorkerCrash) {
		s.tracef("worker %s crashes holding %d jobs", w.id, len(w.jobs))
		s.removeWorker(w)
		return
	}
	if !w.shutdown && s.chance(FaultWorkerRelease) {
		w.shutdown = true
		for _, j := range w.jobs {
			if j.status == ck.ReportInProgress {
				j.status = ck.ReportReleased
			}
		}
		s.tracef("worker %s shuts down", w.id)
	}
	finished := false
	for _, j := range w.jobs {
		if j.status == ck.ReportInProgress && s.now >= j.doneAt {
			s.finishJob(w, j)
			finished = true
		}
	}
	// The lease keeper stops work whose lease was not renewed in time.
	w.jobs = slices.DeleteFunc(w.jobs, func(j *wjob) bool {
		if j.status == ck.ReportInProgress && s.now > j.leaseEnd {
			s.tracef("worker %s: lease of %s/%d lost, work stopped", w.id, j.name, j.token)
			return true
		}
		return false
	})
	if w.out != nil {
		timeout := s.now-w.out.last > int64(3*time.Second)
		if timeout || s.chance(FaultRetryPoll) {
			if timeout {
				s.rep.Faults[FaultRetryPoll]++
			}
			if w.out.tries >= 4 && timeout {
				// Give up on this sequence: the next poll reports again.
				s.tracef("worker %s gives up on seq %d", w.id, w.out.req.Seq)
				w.out = nil
				if w.shutdown {
					s.removeWorker(w)
				}
				return
			}
			w.out.tries++
			w.out.last = s.now
			s.tracef("worker %s retries seq %d", w.id, w.out.req.Seq)
			s.send(&msg{req: w.out.req})
		}
		return
	}
	if s.now >= w.nextPoll || finished || w.shutdown {
		s.poll(w)
	}
}

// poll sends a new request: every job's status, and the free slots.
func (s *Sim) poll(w *worker) {
	w.seq++
	req := &ck.PollRequest{WorkerID: w.id, Seq: w.seq}
	for _, j := range w.jobs {
		u := ck.StatusUpdate{Job: j.name, Token: j.token, Status: j.status}
		if j.status == ck.ReportSuccess {
			u.Outputs = j.outputs
		}
		req.Updates = append(req.Updates, u)
	}
	if !w.shutdown {
		req.FreeSlots = int32(max(0, w.capacity-len(w.jobs)))
	}
	w.out = &outstanding{req: req, sentAt: s.now, last: s.now}
	s.tracef("worker %s polls seq %d: %s", w.id, w.seq, describeUpdates(req))
	s.send(&msg{req: req})
}

func (s *Sim) onResponse(w *worker, seq uint64, resp *ck.PollResponse) {
	if w.out == nil || w.out.req.Seq != seq {
		return // a late or duplicated answer to an older request
	}
	if err := resp.Validate(); err != nil {
		s.fail("response", "response to %s seq %d does not validate: %v", w.id, seq, err)
	}
	sent := w.out.sentAt
	w.out = nil
	w.nextPoll = s.now + int64(lease/4)
	s.tracef("worker %s gets seq %d: %s", w.id, seq, describeResponse(resp))
	for i := range resp.Jobs {
		r := &resp.Jobs[i]
		idx := slices.IndexFunc(w.jobs, func(j *wjob) bool { return j.name == r.Job })
		switch r.Outcome {
		case ck.OutcomeAssigned:
			if w.shutdown {
				continue // it will never report: the lease expires
			}
			j := &wjob{name: r.Job, token: r.Token, plan: r.Plan, leaseEnd: sent + int64(r.Lease), status: ck.ReportInProgress}
			j.doneAt = s.now + int64(time.Duration(500+s.rng.IntN(8000))*time.Millisecond)
			if idx >= 0 {
				if w.jobs[idx].token >= r.Token {
					s.fail("tokens", "worker %s assigned %s token %d while holding token %d", w.id, r.Job, r.Token, w.jobs[idx].token)
				}
				w.jobs[idx] = j
			} else {
				w.jobs = append(w.jobs, j)
			}
			if s.chance(FaultSlowWorker) {
				// The process stalls well past its lease, finishes the
				// job, then reports with its stale token.
				w.stalledUntil = s.now + int64(float64(lease)*(1.2+1.3*s.rng.Float64())) // at most stallMax
				j.doneAt = s.now
				s.tracef("worker %s stalls until %.1fs", w.id, float64(w.stalledUntil-t0)/1e9)
			}
		case ck.OutcomeRenewed:
			if idx >= 0 && w.jobs[idx].token == r.Token {
				w.jobs[idx].leaseEnd = sent + int64(r.Lease)
			}
		case ck.OutcomeCompleted, ck.OutcomeAccepted, ck.OutcomeNoLease:
			if idx >= 0 && w.jobs[idx].token == r.Token {
				w.jobs = slices.Delete(w.jobs, idx, idx+1)
			}
		}
	}
	if w.shutdown {
		s.removeWorker(w)
	}
}

// finishJob runs the job: merge the sources (data check) or compute the
// outputs' metadata, delete the tombstones the plan carries.
func (s *Sim) finishJob(w *worker, j *wjob) {
	if s.chance(FaultWorkerFail) {
		j.status = ck.ReportFailure
		return
	}
	plan := j.plan
	if !plan.CleanupOnly() {
		if s.opt.Data {
			outs, err := blockmerge.Merge(s.ctx, s.store, plan, j.token)
			if err != nil {
				// A source object is gone: only legitimate if the job
				// lost its sources (retention) — the data check catches
				// a live block without its object.
				s.tracef("worker %s: merge of %s failed: %v", w.id, j.name, err)
				j.status = ck.ReportFailure
				return
			}
			j.outputs = outs
		} else {
			outs, ok := s.synthOutputs(plan, j.token)
			if !ok {
				j.status = ck.ReportFailure
				return
			}
			j.outputs = outs
		}
		for _, o := range j.outputs {
			s.metas[o.ID] = o
		}
	}
	s.model.checkDeletion(w.id, j.name, plan.Tombstones)
	if s.opt.Data {
		if _, err := blockmerge.ObjectLayout.DeleteTombstones(s.ctx, s.store, plan.Tombstones); err != nil {
			s.fail("cleanup", "worker %s deleting the tombstones of %s: %v", w.id, j.name, err)
		}
	}
	j.status = ck.ReportSuccess
}

// synthOutputs computes, without data, the outputs a merge would write:
// one block per tenant, one level up, with the sources' datasets merged
// by name.
func (s *Sim) synthOutputs(plan *ck.JobPlan, token fencing.Token) ([]ck.BlockMeta, bool) {
	type dsKey struct{ tenant, name string }
	sets := map[dsKey]*ck.DatasetMeta{}
	var keys []dsKey
	level := uint32(0)
	for _, id := range plan.Sources {
		b, ok := s.metas[id]
		if !ok {
			return nil, false
		}
		level = max(level, b.Level+1)
		for i := range b.Datasets {
			d := &b.Datasets[i]
			k := dsKey{b.DatasetTenant(d), d.Name}
			m, ok := sets[k]
			if !ok {
				m = &ck.DatasetMeta{Name: d.Name, MinTime: d.MinTime, MaxTime: d.MaxTime}
				sets[k] = m
				keys = append(keys, k)
			}
			m.Size += d.Size
			m.Records += d.Records
			m.MinTime, m.MaxTime = min(m.MinTime, d.MinTime), max(m.MaxTime, d.MaxTime)
		}
	}
	sort.Slice(keys, func(a, b int) bool {
		if keys[a].tenant != keys[b].tenant {
			return keys[a].tenant < keys[b].tenant
		}
		return keys[a].name < keys[b].name
	})
	var outs []ck.BlockMeta
	for _, k := range keys {
		if len(outs) == 0 || outs[len(outs)-1].Tenant != k.tenant {
			outs = append(outs, ck.BlockMeta{
				ID: ck.OutputID(plan.Name, token, len(outs)), Tenant: k.tenant, Shard: plan.Shard, Level: level,
				MinTime: sets[k].MinTime, MaxTime: sets[k].MaxTime,
			})
		}
		o := &outs[len(outs)-1]
		d := *sets[k]
		o.Datasets = append(o.Datasets, d)
		o.Size += d.Size
		o.MinTime, o.MaxTime = min(o.MinTime, d.MinTime), max(o.MaxTime, d.MaxTime)
	}
	return outs, true
}

func describeUpdates(req *ck.PollRequest) string {
	var b strings.Builder
	for _, u := range req.Updates {
		fmt.Fprintf(&b, "%s/%d:%s ", u.Job, u.Token, u.Status)
	}
	fmt.Fprintf(&b, "free=%d", req.FreeSlots)
	return b.String()
}

func describeResponse(resp *ck.PollResponse) string {
	var b strings.Builder
	for _, j := range resp.Jobs {
		fmt.Fprintf(&b, "%s/%d:%s ", j.Job, j.Token, j.Outcome)
		if j.Plan != nil && len(j.Plan.Tombstones) > 0 {
			fmt.Fprintf(&b, "%v ", j.Plan.Tombstones)
		}
	}
	return b.String()
}
