package sim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/bucketlog"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/raftfsm"
)

// bucketSim is the log in bucket mode (Options.Bucket): the replicas are
// the coordinators of one bucket log (package bucketlog) on a memory store
// whose clock is the simulation's, behind a store that injects faults —
// races for an entry, creates that time out having succeeded or not,
// creates that succeeded answered "exists", failed reads — while
// coordinators restart from checkpoints and the log is truncated under
// replicas that lag. Any coordinator may append; the one serving workers
// changes at random. Proposals are queued and appended at the step's log
// phase, each coordinator's in one batch.
type bucketSim struct {
	s       *Sim
	mem     memStore
	store   *faultStore
	every   uint64
	jump    int // WithCatchUpLimit (0: none)
	queue   []*entry
	gen     int
	skew    int64 // the store's clock ahead of the simulation's
	current int   // the coordinator appending now, -1 if none
	racing  bool
	opening bool // a coordinator is starting
	// behind counts the replicas found behind the low-water mark (they
	// restored a checkpoint instead of reading truncated entries).
	behind int
}

func newBucketSim(s *Sim) *bucketSim {
	b := &bucketSim{s: s, every: uint64(2 + s.rng.IntN(14)), current: -1}
	if s.rng.IntN(2) == 0 {
		b.jump = 1 + s.rng.IntN(8) // replicas behind restore checkpoints
	}
	b.mem = blockmerge.NewMemStore(blockmerge.WithMemClock(func() time.Time { return time.Unix(0, s.now+b.skew) })).(memStore)
	b.store = &faultStore{memStore: b.mem, b: b}
	return b
}

const bucketPrefix = "sim"

// open (re)starts replica r as a coordinator: a new state machine,
// restored from the newest checkpoint, then the entries after it. A read
// fault fails the start; the coordinator tries again.
func (b *bucketSim) open(r *replica) {
	s := b.s
	for try := 0; ; try++ {
		f, err := raftfsm.New(s.cfg, r.opts...)
		if err != nil {
			s.fail("config", "%v", err)
		}
		r.fsm = f
		b.gen++
		b.opening = true
		l, err := bucketlog.Open(s.ctx, b.store, bucketPrefix, f, fmt.Sprintf("r%d.%d", r.id, b.gen),
			bucketlog.WithCheckpointEvery(b.every), bucketlog.WithTruncateGrace(0),
			bucketlog.WithCatchUpLimit(b.jump),
			bucketlog.WithClock(func() time.Time { return time.Unix(0, s.leaderClock()) }),
			bucketlog.WithObserver(func(cmd []byte, a leader.Applied) { s.observed(r, cmd, a) }),
			bucketlog.WithLogger(s.discard))
		b.opening = false
		if err == nil {
			r.blog, r.pos = l, l.Index()
			r.gen++
			return
		}
		if !errors.Is(err, errInjected) || try == 20 {
			s.fail("bucket log", "coordinator %d cannot start: %v", r.id, err)
		}
	}
}

// observed is a coordinator's replica applying one command of the log:
// the first replica to reach an index records it (and feeds the model);
// the others must have read the same bytes and got the same result.
func (s *Sim) observed(r *replica, data []byte, a leader.Applied) {
	i := a.Index
	switch {
	case i == uint64(len(s.log))+1:
		cmd, err := raftfsm.DecodeCommand(data)
		if err != nil {
			s.fail("bucket log", "replica %d: index %d does not decode: %v", r.id, i, err)
		}
		s.log = append(s.log, &entry{Entry: ck.Entry{Index: i, Term: 1}, data: bytes.Clone(data), cmd: cmd, leader: r.id})
		s.commit = i
	case i > uint64(len(s.log)):
		s.fail("bucket log", "replica %d applied index %d; the log so far has %d", r.id, i, len(s.log))
	case !bytes.Equal(s.log[i-1].data, data):
		s.fail("bucket log", "replica %d: index %d holds other bytes than another replica read (a fork)", r.id, i)
	}
	if i != r.pos+1 {
		// It restored a checkpoint first: starting, or behind the
		// low-water mark.
		r.gen++
		if !s.bucket.opening {
			s.bucket.behind++
			s.tracef("replica %d was behind the low-water mark: restored a checkpoint, from %d to %d", r.id, r.pos, i-1)
		}
	}
	if a.Result != nil && a.Result.Skipped {
		s.fail("apply", "replica %d: index %d skipped", r.id, i)
	}
	e := s.log[i-1]
	d := digest(a.Result, a.Err)
	if i > s.fed {
		s.feedDigest(i, d)
		s.tracef("apply %d %s -> %s (bucket, replica %d)", i, describe(e.cmd), describeResult(a.Result, a.Err), r.id)
		s.model.feed(r, e, a.Result, a.Err)
	} else if s.digests[i] != d {
		s.fail("replica equality", "replica %d: result of index %d differs: %s", r.id, i, describeResult(a.Result, a.Err))
	}
	r.pos = i
}

// step is the log's phase of a simulation step: faults of the bucket and
// the coordinators, then the queued proposals, appended in order, every
// run of one coordinator's proposals as one batch.
func (b *bucketSim) step() {
	s := b.s
	if s.chance(FaultBucketPause) {
		r := s.replicas[1+s.rng.IntN(len(s.replicas)-1)]
		r.paused = s.step + 40 + s.rng.IntN(120)
		s.tracef("coordinator %d paused until step %d", r.id, r.paused)
	}
	if s.chance(FaultLeaderChange) || s.replicas[s.leader].paused > s.step {
		// A paused coordinator serves nobody: its requests go elsewhere.
		for s.leader = s.rng.IntN(len(s.replicas)); s.replicas[s.leader].paused > s.step; s.leader = (s.leader + 1) % len(s.replicas) {
		}
		s.tracef("coordinator %d serves", s.leader)
	}
	if s.chance(FaultBucketStoreClock) {
		b.skew += int64(time.Duration(11+s.rng.IntN(30)) * time.Second)
		s.tracef("store clock jumps ahead, skew %s", time.Duration(b.skew))
	}
	q := b.queue
	b.queue = nil
	for len(q) > 0 {
		if s.replicas[q[0].leader].paused > s.step {
			q = q[1:] // the paused process holds it: lost
			continue
		}
		n := 1
		for n < len(q) && q[n].leader == q[0].leader {
			n++
		}
		b.append(q[:n])
		q = q[n:]
	}
}

// append proposes es through their coordinator, in one batch.
func (b *bucketSim) append(es []*entry) {
	s := b.s
	r := s.replicas[es[0].leader]
	ps := make([]bucketlog.Proposal, len(es))
	for i, e := range es {
		ps[i] = bucketlog.Proposal{Cmd: e.data, PreparedAt: e.preparedAt}
	}
	b.current = r.id
	before := len(s.log)
	ps = r.blog.ProposeBatch(s.ctx, ps)
	b.current = -1
	b.caughtUp(r)
	b.appliedAsAnswered(r, ps, s.log[before:])
	for i, e := range es {
		p := ps[i]
		switch {
		case p.Err == nil:
			e.Index = p.Applied.Index
			s.reply(e, p.Applied.Result, p.Applied.Err)
		case errors.Is(p.Err, leader.ErrConflict) && e.preparedAt == 0:
			s.tracef("append of %s lost a race: again", describe(e.cmd))
			b.queue = append(b.queue, e)
		case errors.Is(p.Err, leader.ErrConflict) && e.cmd.Poll != nil && s.coin(0.5):
			// As a node's service does after lost races
			// (leader.WithStaleAfter): the prepared poll goes in on
			// whatever state it meets, and Apply judges every change.
			s.tracef("append of %s lost a race: again, stale", describe(e.cmd))
			e.preparedAt = 0
			b.queue = append(b.queue, e)
		case errors.Is(p.Err, leader.ErrConflict), errors.Is(p.Err, leader.ErrOutcomeUnknown), errors.Is(p.Err, errInjected):
			s.tracef("append of %s: %v", describe(e.cmd), p.Err)
		default:
			s.fail("bucket log", "coordinator %d: append of %s: %v", r.id, describe(e.cmd), p.Err)
		}
	}
}

// appliedAsAnswered checks that the commands of ps were applied as their
// answers say, counting the entries applied during their append (applied):
// each command as many times as it was answered appended, more only by
// outcomes answered unknown. A command applied but answered "not appended"
// (a create of the coordinator's own entry taken for another's) would be
// appended and applied again.
func (b *bucketSim) appliedAsAnswered(r *replica, ps []bucketlog.Proposal, applied []*entry) {
	type count struct{ ok, unknown, applied int }
	counts := make(map[string]*count, len(ps))
	for _, p := range ps {
		c := counts[string(p.Cmd)]
		if c == nil {
			c = &count{}
			counts[string(p.Cmd)] = c
		}
		switch {
		case p.Err == nil:
			c.ok++
		case !errors.Is(p.Err, leader.ErrConflict):
			c.unknown++
		}
	}
	for _, e := range applied {
		if c := counts[string(e.data)]; c != nil {
			c.applied++
		}
	}
	for _, e := range applied {
		c := counts[string(e.data)]
		if c != nil && (c.applied < c.ok || c.applied > c.ok+c.unknown) {
			b.s.fail("bucket log", "coordinator %d: %s applied %d times (index %d) while its append was answered %d times appended, %d times unknown",
				r.id, describe(e.cmd), c.applied, e.Index, c.ok, c.unknown)
		}
	}
}

// caughtUp notes a replica that jumped past entries it did not read (it
// restored a checkpoint behind the low-water mark).
func (b *bucketSim) caughtUp(r *replica) {
	if i := r.blog.Index(); i != r.pos {
		r.pos = i
		r.gen++
		b.s.tracef("replica %d restored a checkpoint at %d", r.id, i)
	}
}

// barrier brings replica r to the tip; injected read faults are retried.
func (b *bucketSim) barrier(r *replica) {
	s := b.s
	for try := 0; ; try++ {
		err := r.blog.Barrier(s.ctx)
		b.caughtUp(r)
		if err == nil {
			return
		}
		if !errors.Is(err, errInjected) || try == 50 {
			s.fail("bucket log", "replica %d cannot catch up: %v", r.id, err)
		}
	}
}

// applyAll: replica 0 reads up to the tip; the others lag at random.
func (b *bucketSim) applyAll() {
	s := b.s
	for _, r := range s.replicas {
		if r.id != 0 && (s.faultOn && s.coin(0.3) || r.paused > s.step) {
			continue
		}
		b.barrier(r)
	}
}

// replicaFaults: restarts from checkpoints, truncations, corrupt
// snapshots refused, re-applied entries skipped.
func (b *bucketSim) replicaFaults() {
	s := b.s
	if s.chance(FaultBucketRestart) {
		r := s.replicas[s.rng.IntN(len(s.replicas))]
		r.paused = 0
		b.open(r)
		s.tracef("coordinator %d restarted at %d", r.id, r.pos)
	}
	if s.chance(FaultBucketTruncate) {
		r := s.replicas[0] // a coordinator that is not paused
		mark, err := r.blog.Truncate(s.ctx)
		if err != nil && !errors.Is(err, errInjected) {
			s.fail("bucket log", "truncate by %d: %v", r.id, err)
		}
		s.tracef("coordinator %d truncated to mark %d", r.id, mark)
	}
	if s.chance(FaultCorruptRestore) {
		s.corruptRestore(s.replicas[s.rng.IntN(len(s.replicas))])
	}
	if s.chance(FaultReapply) {
		s.reapply(s.replicas[s.rng.IntN(len(s.replicas))])
	}
}

// errInjected marks the faults the store injects.
var errInjected = errors.New("sim: injected store fault")

// memStore is blockmerge's memory store with the optional interfaces it
// implements.
type memStore interface {
	blockmerge.Store
	blockmerge.ConditionalPutter
	blockmerge.Timestamper
}

// faultStore is the bucket as the coordinators see it.
type faultStore struct {
	memStore
	b *bucketSim
}

func isEntry(key string) bool { return strings.HasPrefix(key, bucketPrefix+"/log/") }

// PutIfAbsent: another coordinator may win the race for the entry first;
// the create may fail, time out after it succeeded, or succeed and be
// answered "exists".
func (f *faultStore) PutIfAbsent(ctx context.Context, key string, r io.Reader) error {
	b, s := f.b, f.b.s
	if !isEntry(key) || b.racing {
		return f.memStore.PutIfAbsent(ctx, key, r)
	}
	if s.chance(FaultBucketRace) {
		b.race()
	}
	if s.chance(FaultBucketPutFail) {
		return fmt.Errorf("create %s: %w (not created)", key, errInjected)
	}
	err := f.memStore.PutIfAbsent(ctx, key, r)
	if err == nil && s.chance(FaultBucketLostAck) {
		return fmt.Errorf("create %s: %w (created)", key, errInjected)
	}
	if err == nil && s.chance(FaultBucketExistsAck) {
		return fmt.Errorf("create %s: created, answered: %w", key, blockmerge.ErrExists)
	}
	return err
}

// Get of an entry may fail.
func (f *faultStore) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if isEntry(key) && !f.b.racing && f.b.s.chance(FaultBucketReadFail) {
		return nil, fmt.Errorf("get %s: %w", key, errInjected)
	}
	return f.memStore.Get(ctx, key)
}

// race has another coordinator than the appending one append first: a
// new service taking office on it.
func (b *bucketSim) race() {
	s := b.s
	if len(s.replicas) < 2 {
		return
	}
	o := s.replicas[s.rng.IntN(len(s.replicas))]
	if o.id == b.current {
		o = s.replicas[(o.id+1)%len(s.replicas)]
	}
	if o.paused > s.step || o.id == b.current {
		return
	}
	data, err := o.fsm.Encode(&raftfsm.Command{TookOffice: &raftfsm.TookOffice{Leader: fmt.Sprintf("r%d", o.id)}}, s.leaderClock())
	if err != nil {
		s.fail("encode", "%v", err)
	}
	b.racing = true
	_, err = o.blog.Propose(s.ctx, data, 0)
	b.racing = false
	if err != nil {
		s.fail("bucket log", "racing coordinator %d: %v", o.id, err)
	}
	b.caughtUp(o)
	s.tracef("coordinator %d won a race", o.id)
}
