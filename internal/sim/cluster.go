package sim

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/bucketlog"
	"github.com/compactkit/compactkit/raftfsm"
)

// entry is one entry of the modelled Raft log.
type entry struct {
	ck.Entry
	data    []byte
	cmd     *raftfsm.Command
	leader  int // the replica that proposed it
	req     *ck.PollRequest
	batch   *ingestBatch
	replied bool
	// preparedAt is the log index the leader's replica had applied when
	// it prepared the command (bucket mode: a prepared command whose
	// state moved on is not appended).
	preparedAt uint64
}

// replica is one replica of the state machine, with its position in the
// log (entries processed; an entry whose Apply returned an error still
// counts).
type replica struct {
	id        int
	fsm       *raftfsm.FSM
	blog      *bucketlog.Log // bucket mode: the coordinator's log
	paused    int            // bucket mode: the step until which it is paused
	opts      []raftfsm.Option
	pos       uint64
	gen       int // bumped when the FSM is replaced or restored
	hashedPos uint64
	hashedGen int
	// checkedPos and checkedGen: the last state digest compared.
	checkedPos uint64
	checkedGen int
}

// heldCmd is a prepared command held back before it is proposed.
type heldCmd struct {
	cmd   *raftfsm.Command
	req   *ck.PollRequest
	until int
	term  uint64
	at    uint64 // the log index it was prepared at
}

func (s *Sim) newReplica(id int) *replica {
	// Local options differ per replica: they must not affect Apply.
	opts := []raftfsm.Option{
		raftfsm.WithLogger(s.discard),
		raftfsm.WithCleanupAfter(time.Duration(s.rng.IntN(10)) * time.Second),
		raftfsm.WithCleanupBatch(8 + s.rng.IntN(57)),
		raftfsm.WithCleanupUrgentAfter(time.Duration(30+s.rng.IntN(270)) * time.Second),
	}
	f, err := raftfsm.New(s.cfg, opts...)
	if err != nil {
		panic(fmt.Sprintf("sim: config: %v", err))
	}
	return &replica{id: id, fsm: f, opts: opts}
}

func (s *Sim) leaderClock() int64 { return s.now + s.skew }

func (s *Sim) leaderReplica() *replica { return s.replicas[s.leader] }

// propose appends a command to the leader's log (uncommitted).
func (s *Sim) propose(cmd *raftfsm.Command, req *ck.PollRequest) *entry {
	return s.proposePrepared(cmd, req, 0)
}

// proposePrepared is propose for a command prepared on the leader's
// replica at log index at. In bucket mode the proposal is queued for the
// step's log phase.
func (s *Sim) proposePrepared(cmd *raftfsm.Command, req *ck.PollRequest, at uint64) *entry {
	clock := s.leaderClock()
	if cmd.Time == 0 && cmd.Poll == nil && s.coin(0.8) {
		cmd.Time = clock
	}
	// The version the leader's replica allows, as FSM.Encode writes.
	data, err := cmd.MarshalVersion(s.leaderReplica().fsm.ClusterVersion())
	if err != nil {
		s.fail("encode", "command %+v: %v", cmd, err)
	}
	if cmd.Poll != nil {
		// The leader's replica encodes the poll too, as a host does, so
		// that it applies the entry from the poll it kept (FSM.Encode)
		// where the bytes are the same, and decodes it where they are not
		// (Encode stamps a later time). Nothing else changes.
		c := *cmd
		_, _ = s.leaderReplica().fsm.Encode(&c, cmd.Time)
	}
	e := &entry{
		Entry: ck.Entry{Index: uint64(len(s.log)) + 1, Term: s.term, Time: clock},
		data:  data, cmd: cmd, leader: s.leader, req: req, preparedAt: at,
	}
	if s.bucket != nil {
		e.Index = 0 // known once appended
		s.bucket.queue = append(s.bucket.queue, e)
		s.tracef("queue %s at coordinator %d", describe(cmd), s.leader)
		return e
	}
	s.log = append(s.log, e)
	s.tracef("propose %d/%d %s", e.Index, e.Term, describe(cmd))
	return e
}

// raftStep commits part of the tail, and maybe changes the leader.
func (s *Sim) raftStep() {
	if s.bucket != nil {
		s.bucket.step()
		return
	}
	if s.chance(FaultLeaderChange) {
		s.electLeader()
	}
	last := uint64(len(s.log))
	if s.commit < last {
		if !s.faultOn || s.coin(0.85) {
			if s.faultOn {
				s.commit = min(last, s.commit+1+uint64(s.rng.IntN(4)))
			} else {
				s.commit = last
			}
		}
	}
}

func (s *Sim) electLeader() {
	old := s.leader
	s.leader = s.rng.IntN(len(s.replicas))
	s.term++
	tail := uint64(len(s.log)) - s.commit
	dropped := false
	if tail > 0 {
		if s.chance(FaultDropTail) {
			s.log = s.log[:s.commit]
			dropped = true
		} else {
			s.rep.Faults[FaultKeepTail]++
		}
	}
	// Held commands of the old leader are lost with its term.
	s.held = nil
	s.tracef("leader %d -> %d, term %d, tail of %d dropped=%t", old, s.leader, s.term, tail, dropped)
	s.propose(&raftfsm.Command{TookOffice: &raftfsm.TookOffice{Leader: fmt.Sprintf("r%d", s.leader)}}, nil)
}

// applyAll: the reference replica (0) applies every committed entry; the
// others lag at random.
func (s *Sim) applyAll() {
	if s.bucket != nil {
		s.bucket.applyAll()
		return
	}
	for _, r := range s.replicas {
		target := s.commit
		if r.id != 0 && s.faultOn && s.coin(0.3) {
			target = r.pos + uint64(s.rng.IntN(3))
		}
		for r.pos < min(target, s.commit) {
			s.applyNext(r)
		}
	}
}

func (s *Sim) applyNext(r *replica) {
	e := s.log[r.pos]
	res, err := r.fsm.Apply(e.Entry, e.data)
	if res != nil && res.Skipped {
		s.fail("apply", "replica %d: entry %d skipped at position %d", r.id, e.Index, r.pos)
	}
	d := digest(res, err)
	if e.Index > s.fed {
		s.feedDigest(e.Index, d)
		s.tracef("apply %d %s -> %s", e.Index, describe(e.cmd), describeResult(res, err))
		s.model.feed(r, e, res, err)
	} else if s.digests[e.Index] != d {
		s.fail("replica equality", "replica %d: result of entry %d differs: %s", r.id, e.Index, describeResult(res, err))
	}
	r.pos++
	if r.id == s.leader && e.leader == s.leader && e.Term == s.term && !e.replied {
		e.replied = true
		s.reply(e, res, err)
	}
}

// reply is the leader's answer once its replica applied an entry it
// proposed.
func (s *Sim) reply(e *entry, res *raftfsm.Result, err error) {
	switch {
	case e.cmd.PreparePoll != nil:
		if err != nil {
			s.fail("apply", "prepare poll entry %d: %v", e.Index, err)
		}
		s.prepare(e.req, e.Index)
	case e.cmd.Poll != nil:
		if err != nil || s.chance(FaultLostReply) {
			return
		}
		s.send(&msg{worker: e.req.WorkerID, seq: e.req.Seq, resp: res.Poll})
	case e.batch != nil:
		if !s.chance(FaultLostReply) {
			e.batch.done = true
		}
	}
}

// handleRequest is the leader receiving a poll request.
func (s *Sim) handleRequest(req *ck.PollRequest) {
	r := s.leaderReplica()
	if resp, ok := r.fsm.Recorded(req.WorkerID, req.Seq); ok && s.chance(FaultRecordedReply) {
		s.tracef("leader answers %s seq %d from the poll log", req.WorkerID, req.Seq)
		s.send(&msg{worker: req.WorkerID, seq: req.Seq, resp: resp})
		return
	}
	two := s.twoMode == 1 || s.twoMode == 2 && s.coin(0.5)
	if two {
		s.propose(&raftfsm.Command{PreparePoll: &raftfsm.PreparePoll{WorkerID: req.WorkerID, Seq: req.Seq}}, req)
		return
	}
	s.prepare(req, 0)
}

// prepare prepares a poll on the leader's replica and proposes it (or
// holds it back).
func (s *Sim) prepare(req *ck.PollRequest, tokenIndex uint64) {
	r := s.leaderReplica()
	at, _, _ := r.fsm.LastApplied()
	now := s.leaderClock()
	if r.blog != nil {
		// A bucket coordinator prepares at the log's time as it can tell
		// it, as bucketlog.OpenNode's service does.
		now = r.blog.Now().UnixNano()
	}
	cmd, err := r.fsm.Prepare(req, now)
	if err != nil {
		if errors.Is(err, raftfsm.ErrStaleRequest) {
			s.tracef("prepare %s seq %d: stale", req.WorkerID, req.Seq)
			return
		}
		s.fail("prepare", "honest request %s seq %d refused: %v", req.WorkerID, req.Seq, err)
	}
	if err := checkPrepared(cmd, req); err != nil {
		s.fail("prepare", "%v", err)
	}
	if tokenIndex != 0 {
		cmd.Poll.Update.TokenIndex = tokenIndex
	}
	if s.chance(FaultStalePrepare) {
		s.held = append(s.held, &heldCmd{cmd: cmd, req: req, until: s.step + 1 + s.rng.IntN(5), term: s.term, at: at})
		return
	}
	s.proposePrepared(cmd, req, at)
}

// checkPrepared checks what Prepare returned is the command for req.
func checkPrepared(cmd *raftfsm.Command, req *ck.PollRequest) error {
	if cmd == nil || cmd.Poll == nil || cmd.Poll.WorkerID != req.WorkerID || cmd.Poll.Seq != req.Seq {
		return fmt.Errorf("prepare for %s seq %d returned %s", req.WorkerID, req.Seq, describe(cmd))
	}
	if err := cmd.Validate(); err != nil {
		return fmt.Errorf("prepared command does not validate: %w", err)
	}
	return nil
}

func (s *Sim) releaseHeld() {
	keep := s.held[:0]
	for _, h := range s.held {
		if h.until > s.step {
			keep = append(keep, h)
			continue
		}
		if h.term == s.term {
			s.proposePrepared(h.cmd, h.req, h.at)
		}
	}
	s.held = keep
}

// replicaFaults: snapshot and restore, corrupt snapshots, rebuilds,
// re-applied entries.
func (s *Sim) replicaFaults() {
	if s.bucket != nil {
		s.bucket.replicaFaults()
		return
	}
	if s.chance(FaultSnapshotRestore) {
		r := s.replicas[s.rng.IntN(len(s.replicas))]
		snap := s.snapshot(r)
		if s.coin(0.5) {
			if err := r.fsm.Restore(bytes.NewReader(snap)); err != nil {
				s.fail("restore", "replica %d: %v", r.id, err)
			}
		} else {
			f, err := raftfsm.Restore(bytes.NewReader(snap), r.opts...)
			if err != nil {
				s.fail("restore", "replica %d: %v", r.id, err)
			}
			r.fsm = f
		}
		r.gen++
		if again := s.snapshot(r); !bytes.Equal(again, snap) {
			s.fail("history independence", "replica %d: Restore(Snapshot(s)) re-snapshots to different bytes", r.id)
		}
		s.tracef("replica %d snapshot+restore at %d", r.id, r.pos)
	}
	if s.chance(FaultCorruptRestore) {
		s.corruptRestore(s.replicas[s.rng.IntN(len(s.replicas))])
	}
	if s.chance(FaultRebuildReplica) {
		r := s.replicas[s.rng.IntN(len(s.replicas))]
		from := s.replicas[s.rng.IntN(len(s.replicas))]
		snap := s.snapshot(from)
		f, err := raftfsm.Restore(bytes.NewReader(snap), r.opts...)
		if err != nil {
			s.fail("restore", "rebuild of replica %d from %d: %v", r.id, from.id, err)
		}
		// The host resumes after the snapshot's last applied index.
		idx, _, _ := f.LastApplied()
		if idx > from.pos {
			s.fail("restore", "snapshot of replica %d at position %d says last applied %d", from.id, from.pos, idx)
		}
		r.fsm, r.pos = f, idx
		r.gen++
		s.tracef("replica %d rebuilt from replica %d's snapshot at %d", r.id, from.id, idx)
	}
	if s.chance(FaultReapply) {
		s.reapply(s.replicas[s.rng.IntN(len(s.replicas))])
	}
}

// corruptRestore hands replica r a corrupt or truncated snapshot, which
// it must refuse with its state intact.
func (s *Sim) corruptRestore(r *replica) {
	snap := s.snapshot(r)
	bad := bytes.Clone(snap)
	if s.coin(0.5) {
		bad = bad[:s.rng.IntN(len(bad))]
	} else {
		bad[s.rng.IntN(len(bad))] ^= byte(1 + s.rng.IntN(255))
	}
	if err := r.fsm.Restore(bytes.NewReader(bad)); err == nil {
		// A flipped byte may, rarely, still decode to a valid state
		// (a checksum collision is not expected, so flag it).
		s.fail("no panics on input", "replica %d accepted a corrupt snapshot", r.id)
	}
	if again := s.snapshot(r); !bytes.Equal(again, snap) {
		s.fail("restore", "replica %d: a refused snapshot changed the state", r.id)
	}
}

// reapply hands replica r an entry it already applied: skipped, nothing
// changes.
func (s *Sim) reapply(r *replica) {
	if idx, _, _ := r.fsm.LastApplied(); idx > 0 {
		e := s.log[s.rng.IntN(int(idx))]
		before := sha256.Sum256(s.snapshot(r))
		res, err := r.fsm.Apply(e.Entry, e.data)
		if err != nil || !res.Skipped {
			s.fail("idempotence", "replica %d re-applying entry %d (last applied %d): skipped=%t err=%v", r.id, e.Index, idx, res != nil && res.Skipped, err)
		}
		if sha256.Sum256(s.snapshot(r)) != before {
			s.fail("idempotence", "replica %d: re-applying entry %d changed the state", r.id, e.Index)
		}
	}
}

func (s *Sim) clockFaults() {
	if s.chance(FaultClockBackward) {
		s.skew -= int64(time.Duration(1+s.rng.IntN(30)) * time.Second)
		s.tracef("leader clock jumps back, skew %s", time.Duration(s.skew))
	}
	if s.chance(FaultClockForward) {
		jump := min(int64(time.Duration(1+s.rng.IntN(30))*time.Second), s.forwardBudget())
		if jump > 0 {
			s.skew += jump
			s.fwdJumps = append(s.fwdJumps, clockJump{at: s.now, d: jump})
			s.tracef("leader clock jumps forward, skew %s", time.Duration(s.skew))
		} else {
			s.rep.Faults[FaultClockForward]--
		}
	}
	if !s.faultOn && s.skew < 0 {
		// Once faults stop the leader's clock is right again (it never
		// goes back: log time is the max anyway).
		s.skew = min(0, s.skew+int64(5*time.Second))
	}
}

// clockJump is a forward jump of the leader's clock: when, and by how much.
type clockJump struct{ at, d int64 }

// Stalled workers and forward clock jumps, together, are bounded by the
// cleanup delay: an attempt's prefix is deleted a cleanup delay (log time)
// after it ends, at the earliest when its lease expires, and a worker
// stalled past its lease writes its outputs up to stallMax after the
// assignment reached it (see onResponse), delivery up to msgSlack after
// the assignment was applied. If the leader's clock gains more than
// cleanupDelay - (stallMax - lease) - msgSlack in that window, the prefix
// can be deleted before the late outputs land, and they are left behind
// (see index.Config.CleanupDelay). forwardBudget keeps the simulated
// clock faults within that bound.
const (
	stallMax = lease * 5 / 2
	msgSlack = 10 * time.Second
)

// forwardBudget returns how far the leader's clock may still jump forward
// now: the bound above, less the jumps of the last stallMax + msgSlack.
func (s *Sim) forwardBudget() int64 {
	window := int64(stallMax + msgSlack)
	s.fwdJumps = slices.DeleteFunc(s.fwdJumps, func(j clockJump) bool { return s.now-j.at > window })
	budget := int64(s.cfg.Index.CleanupDelay - (stallMax - lease) - msgSlack)
	for _, j := range s.fwdJumps {
		budget -= j.d
	}
	return budget
}

// digest summarises an Apply result, to compare replicas.
func digest(res *raftfsm.Result, err error) [32]byte {
	h := sha256.New()
	if err != nil {
		fmt.Fprintf(h, "err %v", err)
		return [32]byte(h.Sum(nil))
	}
	fmt.Fprintf(h, "%d %d %d %t %d %v %v\n", res.Index, res.Term, res.Now, res.Replayed, res.Count, res.Cancelled, res.Dropped)
	if res.Poll != nil {
		for _, j := range res.Poll.Jobs {
			fmt.Fprintf(h, "reply %s %s %d %d %d\n", j.Job, j.Outcome, j.Token, j.Deadline, j.Lease)
			if j.Plan != nil {
				fmt.Fprintf(h, "plan %+v\n", *j.Plan)
			}
		}
	}
	for _, c := range res.Changes {
		fmt.Fprintf(h, "c %d %s %t %s %d %t %d %d", c.Kind, c.Job, c.Applied, c.Why(), c.Token, c.Excluded, c.Quarantined, c.Level)
		if c.Replace != nil {
			fmt.Fprintf(h, " %+v", *c.Replace)
		}
		h.Write([]byte{'\n'})
	}
	for _, b := range res.Blocks {
		fmt.Fprintf(h, "b %s %t %v %d\n", b.ID, b.Queued, b.Err, b.Pressure)
	}
	return [32]byte(h.Sum(nil))
}
