package sim

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/internal/codec"
	"github.com/compactkit/compactkit/planner"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/scheduler"
)

// Options configure one run. The zero value of a field means its default;
// each seed further randomises the system's shape (replicas, workers,
// batch sizes, queue limit, commit mode) within these bounds.
type Options struct {
	// Steps is the number of steps with faults (default 400).
	Steps int
	// LivenessSteps bounds the steps, once faults stop, within which the
	// system must reach its fixed point. The default grows with the work
	// left when faults stop: 2,000 steps plus 40 per block awaiting
	// compaction (and per 8 tombstones awaiting cleanup) per worker slot.
	LivenessSteps int
	// StallSteps bounds the steps, once faults stop, without any progress
	// (a completion, a change of the live blocks, a confirmed tombstone)
	// before the fixed point (default 1,500).
	StallSteps int
	// Bucket runs the log as a bucket log (package bucketlog): the
	// replicas are coordinators appending to one bucket, with races,
	// unknown outcomes, checkpoints, restarts and truncation (see
	// bucketSim).
	Bucket bool
	// Data runs the data check: real blocks in a blockmerge.NewMemStore,
	// merged by the workers, with every live block's records compared
	// with the records ingested after every change of the live set.
	Data bool
	// Prob overrides the probability of each fault; nil means
	// DefaultProb scaled by a per-seed intensity.
	Prob *[NumFaults]float64
	// Disable sets the probability of these faults to zero.
	Disable []Fault
	// Trace records a trace of every event (slower); a violation then
	// carries the last TraceLen events (default 150).
	Trace    bool
	TraceLen int
	// FullReplicaCheck snapshots every replica after every step (see
	// checkReplicas for the default).
	FullReplicaCheck bool
	// KnownIssues lists checks to skip while the bug they catch is being
	// fixed (see KnownIssue*). Empty in CI.
	KnownIssues []string

	// tamper, set only by this package's tests, breaks the system or the
	// harness on purpose after a step's actions and before its checks, to
	// show that the checks catch what they are meant to.
	tamper func(s *Sim)
}

// Report says what one run did.
type Report struct {
	Seed uint64
	// Shape of the run.
	Replicas, Workers int
	Mode              string
	// Steps run with faults, and steps until the fixed point.
	Steps, LivenessSteps int
	// Entries is the number of committed log entries.
	Entries uint64
	// Faults counts the faults injected, by kind.
	Faults [NumFaults]int
	// Counters of interesting outcomes.
	Blocks, Completions, Refusals, Evictions, Quarantined, CleanupJobs, DataChecks int
	// PolicyStarts counts the new attempts started while the job's tenant
	// had a cap, a run window or a not-before time: each was checked
	// against them.
	PolicyStarts int
	// Upgrades is 1 for a run whose log began at the oldest cluster version
	// and was raised to the newest mid-run (a rolling upgrade).
	Upgrades int
	// Digest is a chained SHA-256 over the result of every committed
	// entry, in log order, then over every replica's final snapshot, in
	// replica order (for a run that broke an invariant, as far as it got).
	// Two runs of a seed with equal digests applied the same commands with
	// the same results and ended in the same state: a change that leaves
	// every seed's digest equal changed no behaviour.
	Digest [32]byte
}

// Violation is an invariant broken by a run.
type Violation struct {
	Seed      uint64
	Step      int
	Phase     string
	Invariant string
	Detail    string
	// Trace holds the last events before the violation (when tracing).
	Trace []string
	// Disabled are the faults disabled in the run (after shrinking).
	Disabled []Fault
	// Data reports a run with the data check; Bucket one on the bucket log.
	Data, Bucket bool
}

// Error implements error.
func (v *Violation) Error() string {
	return fmt.Sprintf("seed %d step %d (%s): %s: %s", v.Seed, v.Step, v.Phase, v.Invariant, v.Detail)
}

// Replay returns the command that replays the run.
func (v *Violation) Replay() string {
	var b strings.Builder
	fmt.Fprintf(&b, "go test ./internal/sim/ -run 'TestSimulation$' -v -sim.seed=%d", v.Seed)
	if v.Data {
		b.WriteString(" -sim.data=1")
	}
	if v.Bucket {
		b.WriteString(" -sim.bucket=1")
	}
	if len(v.Disabled) > 0 {
		names := make([]string, len(v.Disabled))
		for i, f := range v.Disabled {
			names[i] = f.String()
		}
		fmt.Fprintf(&b, " -sim.disable=%s", strings.Join(names, ","))
	}
	return b.String()
}

// stop is panicked (only inside the harness) to end a run at a violation.
type stop struct{ v *Violation }

// oldestVersion is the oldest cluster version the state machine runs at:
// the first release's.
const oldestVersion = 5

const (
	t0      = int64(1_700_000_000_000_000_000)
	lease   = 10 * time.Second
	horizon = 24 * time.Hour
)

// Sim is one simulated cluster.
type Sim struct {
	seed    uint64
	opt     Options
	rng     *rand.Rand
	prob    [NumFaults]float64
	faultOn bool
	known   map[string]bool
	rep     Report
	phase   string
	step    int

	cfg     raftfsm.Config
	twoMode int // 0 single-commit, 1 two-commit, 2 mixed
	now     int64
	skew    int64
	// fwdJumps are the leader clock's recent forward jumps (forwardBudget).
	fwdJumps []clockJump
	// upgradeAt is the step from which the operator raises the cluster
	// version (0: the log starts at the newest version).
	upgradeAt int
	log       []*entry
	commit    uint64
	term      uint64
	leader    int
	replicas  []*replica
	hashes    map[uint64][32]byte
	states    map[uint64][32]byte
	digests   map[uint64][32]byte
	fed       uint64
	held      []*heldCmd
	bucket    *bucketSim // bucket mode: the log is a bucket log

	net    []*msg
	msgSeq uint64

	workers  []*worker
	nextWID  int
	ing      ingester
	pauses   []*raftfsm.Operator
	model    *model
	store    blockmerge.Store
	metas    map[string]ck.BlockMeta
	dataVer  uint64
	records  map[string]blockRecords // live blocks' records at the last data check
	modelPos uint64                  // replica 0's position and generation at the last model check
	modelGen int
	ctx      context.Context
	trace    []string
	traceAt  int
	tracing  bool
	discard  *slog.Logger
	lastWMAt int64
}

// Run runs the simulation of one seed: faults for opt.Steps steps, with
// every invariant checked after each step, then healthy steps until the
// fixed point. It returns the report, and a *Violation if an invariant
// broke (a panic in the system under test is a violation too).
func Run(seed uint64, opt Options) (rep *Report, err error) {
	s := newSim(seed, opt)
	defer func() {
		if r := recover(); r != nil {
			st, ok := r.(stop)
			if !ok {
				st = stop{s.violation("no panics", fmt.Sprintf("panic: %v\n%s", r, debug.Stack()))}
			}
			rep, err = &s.rep, st.v
		}
	}()
	s.run()
	return &s.rep, nil
}

func newSim(seed uint64, opt Options) *Sim {
	if opt.Steps == 0 {
		opt.Steps = 400
	}
	if opt.StallSteps == 0 {
		opt.StallSteps = 1500
	}
	if opt.TraceLen == 0 {
		opt.TraceLen = 150
	}
	s := &Sim{
		seed: seed, opt: opt,
		rng:     rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		now:     t0,
		hashes:  map[uint64][32]byte{},
		states:  map[uint64][32]byte{},
		digests: map[uint64][32]byte{},
		metas:   map[string]ck.BlockMeta{},
		ctx:     context.Background(),
		tracing: opt.Trace,
		discard: slog.New(slog.NewTextHandler(io.Discard, nil)),
		known:   map[string]bool{},
		faultOn: true,
		phase:   "faults",
	}
	for _, k := range opt.KnownIssues {
		s.known[k] = true
	}
	s.rep.Seed = seed
	// The seed's intensity scales every fault's probability.
	intensity := []float64{0.3, 1, 1, 2, 3}[s.rng.IntN(5)]
	if opt.Prob != nil {
		s.prob = *opt.Prob
	} else {
		s.prob = DefaultProb()
		for f := range NumFaults {
			if f != FaultDropTail && f != FaultKeepTail && f != FaultRecordedReply {
				s.prob[f] = min(1, s.prob[f]*intensity)
			}
		}
	}
	for _, f := range opt.Disable {
		s.prob[f] = 0
	}
	if opt.Data {
		s.store = blockmerge.NewMemStore()
	}
	s.cfg = s.randomConfig()
	if s.rng.IntN(4) == 0 {
		// A log begun by the oldest release this one reads: the replicas
		// start at its cluster version and the cluster is upgraded to the
		// newest mid-run (nothing to raise while they are the same).
		s.cfg.StartVersion = oldestVersion
		s.upgradeAt = 1 + s.rng.IntN(opt.Steps)
	}
	s.twoMode = s.rng.IntN(3)
	s.rep.Mode = []string{"single-commit", "two-commit", "mixed"}[s.twoMode]
	if seed%3 == 2 && s.upgradeAt == 0 {
		// One seed in three compacts level 0 across shards: the outputs,
		// with AnyShard, are queued at level 1 (not on the seeds that run
		// a rolling upgrade). Decided by the seed, not drawn, so that the
		// other seeds' runs are unchanged.
		s.cfg.Planner.Levels[0].CrossShard = true
		s.rep.Mode += "+crossshard"
	}
	if seed%5 == 4 && s.upgradeAt == 0 {
		// One seed in five begins its log at cluster version 5 (the
		// previous release's newest) and is upgraded to the newest
		// mid-run. Decided by the seed, not drawn, so that the other
		// seeds' runs are unchanged.
		s.cfg.StartVersion = 5
		s.upgradeAt = 1 + int(seed/5)%opt.Steps
		s.rep.Mode += "+from5"
	}
	n := 3 + s.rng.IntN(3)
	s.rep.Replicas = n
	for i := range n {
		s.replicas = append(s.replicas, s.newReplica(i))
	}
	nw := 2 + s.rng.IntN(5)
	s.rep.Workers = nw
	for range nw {
		s.addWorker()
	}
	s.model = newModel(s)
	s.term = 1
	s.leader = s.rng.IntN(n)
	if opt.Bucket {
		s.rep.Mode += "+bucket"
		s.bucket = newBucketSim(s)
		for _, r := range s.replicas {
			s.bucket.open(r)
		}
	}
	return s
}

// randomConfig returns the replicated configuration of the seed: small
// batches, short leases and delays, a small queue, so that every path is
// taken in a few hundred steps.
func (s *Sim) randomConfig() raftfsm.Config {
	cfg := raftfsm.DefaultConfig()
	final := uint32(2 + s.rng.IntN(2))
	cfg.Planner.FinalLevel = final
	cfg.Planner.Levels = cfg.Planner.Levels[:0]
	for l := range final {
		lc := planLevel(s.rng, l)
		cfg.Planner.Levels = append(cfg.Planner.Levels, lc)
	}
	cfg.Planner.TombstonesPerJob = s.rng.IntN(4)
	cfg.Planner.TombstoneMaxLevel = final - 1
	cfg.Scheduler.MaxFailures = uint32(1 + s.rng.IntN(3))
	cfg.Scheduler.LeaseDuration = lease
	cfg.Scheduler.MaxQueueSize = []int{4, 8, 16, 0}[s.rng.IntN(4)]
	cfg.Scheduler.MaxSlotsPerRequest = 1 + s.rng.IntN(4)
	cfg.Scheduler.AgingThreshold = []time.Duration{0, time.Minute, 2 * time.Minute}
	cfg.Scheduler.CompletedRetention = time.Minute
	cfg.Index.CleanupDelay = time.Duration(30+s.rng.IntN(31)) * time.Second
	cfg.Index.DedupHorizon = horizon
	cfg.Index.CompletedRetention = horizon
	cfg.Index.ReaderTimeout = 5 * time.Minute
	return cfg
}

func planLevel(rng *rand.Rand, l uint32) (lc planner.LevelConfig) {
	lc.MaxBlocks = 2 + rng.IntN(4)
	lc.MaxAge = time.Duration(3+rng.IntN(15)) * time.Second
	if l > 0 && rng.IntN(4) == 0 {
		lc.MaxAge = 0 // partial batches wait for more blocks
	}
	lc.MaxSpan = 3 * time.Hour
	lc.AgingThreshold = 4 * lc.MaxAge
	return lc
}

func (s *Sim) chance(f Fault) bool {
	x := s.rng.Float64()
	if !s.faultOn {
		return false
	}
	if x < s.prob[f] {
		s.rep.Faults[f]++
		return true
	}
	return false
}

func (s *Sim) coin(p float64) bool { return s.rng.Float64() < p }

func (s *Sim) tracef(format string, args ...any) {
	if !s.tracing {
		return
	}
	line := fmt.Sprintf("[%d %s t=%.1fs] ", s.step, s.phase, float64(s.now-t0)/1e9) + fmt.Sprintf(format, args...)
	if len(s.trace) < s.opt.TraceLen {
		s.trace = append(s.trace, line)
		return
	}
	s.trace[s.traceAt] = line
	s.traceAt = (s.traceAt + 1) % len(s.trace)
}

func (s *Sim) violation(invariant, detail string) *Violation {
	v := &Violation{Seed: s.seed, Step: s.step, Phase: s.phase, Invariant: invariant, Detail: detail, Data: s.opt.Data, Bucket: s.opt.Bucket}
	v.Trace = append(append([]string(nil), s.trace[s.traceAt:]...), s.trace[:s.traceAt]...)
	v.Disabled = append([]Fault(nil), s.opt.Disable...)
	return v
}

// fail ends the run with a violation.
func (s *Sim) fail(invariant, format string, args ...any) {
	panic(stop{s.violation(invariant, fmt.Sprintf(format, args...))})
}

func (s *Sim) run() {
	for s.step = 1; s.step <= s.opt.Steps; s.step++ {
		s.stepOnce()
		s.tamperStep()
		s.check()
	}
	s.rep.Steps = s.opt.Steps
	s.faultOn = false
	s.phase = "liveness"
	s.calm()
	bound := s.livenessBound()
	lastMark, lastProgress := s.model.progress(), 0
	for i := 1; i <= bound; i++ {
		s.step++
		s.stepOnce()
		s.tamperStep()
		s.check()
		if s.fixedPoint() == "" {
			s.rep.LivenessSteps = i
			s.rep.Entries = s.commit
			s.finalCheck()
			return
		}
		if mark := s.model.progress(); mark != lastMark {
			lastMark, lastProgress = mark, i
		} else if i-lastProgress > s.opt.StallSteps {
			s.fail("liveness", "no progress in the %d steps since step %d after the faults stopped: %s", s.opt.StallSteps, lastProgress, s.fixedPoint())
		}
	}
	s.fail("liveness", "no fixed point %d steps after the faults stopped: %s", bound, s.fixedPoint())
}

// livenessBound is Options.LivenessSteps, or by default 2,000 steps plus
// 40 per block awaiting compaction (and per 8 tombstones awaiting cleanup)
// per worker slot: a fleet of two single-slot workers facing 500 blocks in
// batches of two needs thousands of steps, and that is not a liveness bug.
func (s *Sim) livenessBound() int {
	if s.opt.LivenessSteps > 0 {
		return s.opt.LivenessSteps
	}
	st := s.replicas[0].fsm.Stats()
	work := st.Planner.Queued + st.Planner.Claimed +
		st.Tombstones/8
	slots := 0
	for _, w := range s.workers {
		slots += w.capacity
	}
	return 2000 + 40*work/max(slots, 1)
}

func (s *Sim) tamperStep() {
	if s.opt.tamper != nil {
		s.opt.tamper(s)
	}
}

// stepOnce advances the clock and runs one round of every actor.
func (s *Sim) stepOnce() {
	s.now += int64(50*time.Millisecond) + s.rng.Int64N(int64(900*time.Millisecond))
	s.clockFaults()
	s.upgradeStep()
	s.ingestStep()
	s.operatorStep()
	s.deliver()
	for _, w := range slices.Clone(s.workers) {
		s.workerStep(w)
	}
	s.releaseHeld()
	s.raftStep()
	s.replicaFaults()
	s.applyAll()
	if !s.faultOn && s.now-s.lastWMAt > int64(10*time.Second) {
		// Readers are done: the hosts report it.
		s.propose(&raftfsm.Command{Watermark: &raftfsm.Watermark{OldestReader: s.leaderClock()}}, nil)
		s.lastWMAt = s.now
		// The operator retries the jobs excluded since (abandoned
		// attempts of the fault phase still count as failures).
		if len(allJobs(s.leaderReplica().fsm, scheduler.Filter{Status: ck.StatusExcluded})) > 0 {
			s.propose(&raftfsm.Command{Operator: &raftfsm.Operator{Action: raftfsm.OpRetry}}, nil)
		}
		s.resumeAll()
		s.clearPolicies()
	}
}

// upgradeStep raises the cluster version once the run reaches upgradeAt,
// proposing again every 20 steps until the reference replica applied it
// (a dropped log tail may lose the proposal). The upgrade waits, up to 200
// steps, for cleanup in flight (tombstones not yet deleted), so that
// tombstones of the old version and records of the new one are pending
// side by side.
func (s *Sim) upgradeStep() {
	ref := s.replicas[0].fsm
	if s.upgradeAt == 0 || s.step < s.upgradeAt || (s.step-s.upgradeAt)%20 != 0 ||
		ref.ClusterVersion() >= raftfsm.CommandVersion {
		return
	}
	if ref.Stats().Tombstones == 0 && s.step-s.upgradeAt < 200 {
		return
	}
	s.propose(&raftfsm.Command{ClusterVersion: &raftfsm.SetClusterVersion{Version: raftfsm.CommandVersion}}, nil)
	s.rep.Upgrades = 1
}

// calm is the start of the liveness phase: the operator undoes what it
// did (resume every pause, retry every excluded job), the network heals,
// and every worker is alive.
func (s *Sim) calm() {
	s.resumeAll()
	s.clearPolicies()
	s.propose(&raftfsm.Command{Operator: &raftfsm.Operator{Action: raftfsm.OpRetry}}, nil)
	s.propose(&raftfsm.Command{Watermark: &raftfsm.Watermark{OldestReader: s.leaderClock()}}, nil)
	s.lastWMAt = s.now
	s.tracef("faults stop")
}

// resumeAll resumes every pause rule the leader's replica has.
func (s *Sim) resumeAll() {
	f := s.leaderReplica().fsm
	for _, p := range f.Stats().Scheduler.Paused {
		op := &raftfsm.Operator{Action: raftfsm.OpResume, Tenant: p.Tenant, All: p.AllTenants}
		if !p.AllLevels {
			l := p.Level
			op.Level = &l
		}
		s.propose(&raftfsm.Command{Operator: op}, nil)
	}
	s.pauses = nil
}

// snapshot returns a replica's snapshot bytes.
func (s *Sim) snapshot(r *replica) []byte {
	var b bytes.Buffer
	if err := r.fsm.Snapshot(&b); err != nil {
		s.fail("snapshot", "replica %d: %v", r.id, err)
	}
	return b.Bytes()
}

// checkReplicas: replicas at the same position have byte-identical
// snapshots. What is remembered for every position is compared with
// whichever replica reached it first, at any time.
//
// Every entry's result is compared for every replica as it applies it
// (applyNext). After every step, the observable state (statistics and
// counters of every component, jobs, quarantine) is compared by digest
// for the reference replica, one other replica drawn at random, and every
// replica restored or rebuilt since its last check; snapshot bytes are
// compared every fullEvery steps for the reference replica and the drawn
// one, for every replica restored or rebuilt, and for all of them at the
// end. Options.FullReplicaCheck compares every replica's digest and
// snapshot after every step.
func (s *Sim) checkReplicas() {
	full := s.opt.FullReplicaCheck || s.step%fullEvery == 0
	pick := 1 + s.rng.IntN(len(s.replicas)-1)
	for _, r := range s.replicas {
		drawn := s.opt.FullReplicaCheck || r.id == 0 || r.id == pick || r.checkedGen != r.gen
		if drawn && (r.checkedPos != r.pos || r.checkedGen != r.gen) {
			r.checkedPos, r.checkedGen = r.pos, r.gen
			d := s.stateDigest(r)
			if prev, ok := s.states[r.pos]; ok {
				if prev != d {
					s.fail("replica equality", "replica %d at position %d: state differs from another replica's at the same position", r.id, r.pos)
				}
			} else {
				s.states[r.pos] = d
			}
		}
		if r.hashedPos == r.pos && r.hashedGen == r.gen {
			continue
		}
		if r.hashedGen == r.gen && !(full && (r.id == 0 || r.id == pick)) && !s.opt.FullReplicaCheck {
			continue
		}
		s.hashReplica(r)
	}
}

const fullEvery = 25

// hashReplica compares replica r's snapshot with what another replica
// had at the same position, and returns its hash.
func (s *Sim) hashReplica(r *replica) [32]byte {
	h := sha256.Sum256(s.snapshot(r))
	r.hashedPos, r.hashedGen = r.pos, r.gen
	if prev, ok := s.hashes[r.pos]; ok {
		if prev != h {
			s.fail("replica equality", "replica %d at position %d: snapshot differs from another replica's at the same position", r.id, r.pos)
		}
	} else {
		s.hashes[r.pos] = h
	}
	return h
}

// feedDigest records the result digest d of the entry at index i, applied for
// the first time, and chains it into the run's digest.
func (s *Sim) feedDigest(i uint64, d [32]byte) {
	s.fed = i
	s.digests[i] = d
	s.rep.Digest = chain(s.rep.Digest, binary.BigEndian.AppendUint64(d[:], i))
}

// chain returns SHA-256(prev || data): the next link of a chained digest.
func chain(prev [32]byte, data []byte) [32]byte {
	h := sha256.New()
	h.Write(prev[:])
	h.Write(data)
	return [32]byte(h.Sum(nil))
}

// stateDigest digests what the queries of a replica show, encoded with
// the deterministic codec (maps sorted), which is an order of magnitude
// cheaper than formatting them. The skip counts are left out: they are
// the replica's own, counted afresh after a restore.
func (s *Sim) stateDigest(r *replica) [32]byte {
	f := r.fsm
	st := f.Stats()
	st.SkippedChanges = [scheduler.NumSkips]uint64{}
	return hashOf(struct {
		Stats       raftfsm.Stats
		Jobs        []ck.JobState
		Quarantined []planner.QuarantinedBlock
	}{st, allJobs(f, scheduler.Filter{}), allQuarantined(f)})
}

// hashOf digests v's deterministic encoding.
func hashOf(v any) [32]byte {
	b, err := codec.Default.Marshal(v)
	if err != nil {
		// Only a harness bug (a type the codec cannot encode) gets here.
		panic(err)
	}
	return sha256.Sum256(b)
}

func (s *Sim) check() {
	s.checkReplicas()
	// The model and the reference replica change only by applying
	// entries (or by the replica being replaced): compare them again only
	// then.
	if r := s.replicas[0]; r.pos != s.modelPos || r.gen != s.modelGen {
		s.modelPos, s.modelGen = r.pos, r.gen
		s.model.check()
	}
	s.checkTokens()
	if s.opt.Data && s.model.liveVer != s.dataVer {
		s.dataVer = s.model.liveVer
		s.checkData()
	}
}

// fixedPoint returns "" at the fixed point, or what is not settled yet.
func (s *Sim) fixedPoint() string {
	// Idle workers keep polling: messages and poll entries still flow at
	// the fixed point, but nothing changes any more.
	if len(s.held) > 0 {
		return "prepared commands held"
	}
	for _, w := range s.workers {
		if len(w.jobs) > 0 || s.now < w.stalledUntil {
			msg := fmt.Sprintf("worker %s busy (stalled %t, outstanding %v)", w.id, s.now < w.stalledUntil, w.out != nil)
			for _, j := range w.jobs {
				js, _, ok := s.replicas[0].fsm.Job(j.name)
				msg += fmt.Sprintf("; holds %s token %d %s (state machine: exists %t %s token %d worker %q)", j.name, j.token, j.status, ok, js.Status, js.Token, js.Worker)
			}
			return msg
		}
	}
	if s.ing.pending() {
		return "ingest pending"
	}
	return s.model.settled()
}

func (s *Sim) finalCheck() {
	for _, r := range s.replicas {
		if s.bucket != nil {
			s.bucket.barrier(r)
		}
		for r.pos < s.commit {
			s.applyNext(r)
		}
		h := s.hashReplica(r)
		s.rep.Digest = chain(s.rep.Digest, h[:])
	}
	s.phase = "end"
	s.model.check()
	if s.opt.Data {
		s.checkStore()
	}
}
