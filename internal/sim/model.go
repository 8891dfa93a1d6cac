package sim

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/index"
	"github.com/compactkit/compactkit/planner"
	"github.com/compactkit/compactkit/policy"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/scheduler"
)

// model is the harness's own account of the committed state, built from
// the commands and the results of Apply: the blocks ever added and where
// each went, the jobs and their tokens, the attempts that ended, the
// tombstones. It is what the state machine is checked against.
type model struct {
	s        *Sim
	ingested map[string]blockKeys // record keys of every block written
	blocks   map[string]*mblock
	live     map[string]bool
	liveVer  uint64
	// changed lists the blocks added or removed since the last check,
	// compared with the index at every check; all of them are compared
	// every fullEvery steps.
	changed []string
	fullAt  int // the step of the last full comparison
	// judged is the latest time of an entry Apply reached the command of,
	// refused or not (never before now): Apply judges the policies' windows and not-before
	// times at an entry's time before its command, so a command refused
	// after that (a stale poll, a refused operator command) leaves them
	// judged at its time, though the log's time does not move.
	judged  int64
	jobs    map[string]*mjob
	claimed map[string]string // block → job
	quar    map[string]bool
	// completed remembers, per job, the token of its completion.
	completed map[string]fencing.Token
	// attempts ended, by output prefix: when, and whether committed.
	ended     map[string]int64
	committed map[string]bool
	// attached tombstones → job; confirmed ones may never come back.
	attached  map[string]string
	confirmed map[string]bool
	wm        int64
	hasWM     bool
	now       int64
	// records maps the sources of a replacement applied from cluster
	// version 6 on to the sources of its tombstone record, sorted: they
	// are attached together, to one job.
	records map[string][]ck.Tombstone
	// version is the cluster version as of the entries fed so far.
	version byte
	// policies are the scheduling policies in force (cluster version 5):
	// the default and the tenants' own.
	defPolicy policy.Tenant
	policies  map[string]policy.Tenant
}

// policyOf returns a tenant's effective policy.
func (m *model) policyOf(tenant string) policy.Tenant {
	if p, ok := m.policies[tenant]; ok {
		return p
	}
	return m.defPolicy
}

// inProgress counts the tenant's jobs with an attempt in progress.
func (m *model) inProgress(tenant string) int {
	n := 0
	for _, j := range m.jobs {
		if j.attempt != 0 && j.plan.Tenant == tenant {
			n++
		}
	}
	return n
}

// shardInProgress counts the jobs in progress of a tenant's shard (the
// shard of their plans).
func (m *model) shardInProgress(tenant string, shard uint32) int {
	n := 0
	for _, j := range m.jobs {
		if j.attempt != 0 && j.plan.Tenant == tenant && j.plan.Shard == shard {
			n++
		}
	}
	return n
}

// feedPolicy applies a policy command to the model's copy.
func (m *model) feedPolicy(pc *raftfsm.PolicyCommand, res *raftfsm.Result) {
	switch pc.Action {
	case raftfsm.PolicySet:
		if pc.All {
			m.defPolicy = *pc.Policy
		} else {
			m.policies[pc.Tenant] = *pc.Policy
		}
	case raftfsm.PolicyClear:
		if pc.All {
			m.defPolicy = policy.Tenant{}
		} else {
			delete(m.policies, pc.Tenant)
		}
	}
}

// mblock is a block ever added to the index.
type mblock struct {
	meta      ck.BlockMeta
	keys      blockKeys
	removedAt int64
	removed   string // "" while live, else "replaced by <job>" or "retention"
}

type mjob struct {
	plan    ck.JobPlan
	token   fencing.Token // the latest token handed out
	attempt fencing.Token // the attempt in progress, 0 if none
	last    fencing.Token // the latest attempt's token
}

func newModel(s *Sim) *model {
	m := &model{
		s: s, ingested: map[string]blockKeys{}, blocks: map[string]*mblock{}, live: map[string]bool{},
		jobs: map[string]*mjob{}, claimed: map[string]string{}, quar: map[string]bool{},
		completed: map[string]fencing.Token{}, ended: map[string]int64{}, committed: map[string]bool{},
		attached: map[string]string{}, confirmed: map[string]bool{}, policies: map[string]policy.Tenant{},
		records: map[string][]ck.Tombstone{}, version: s.cfg.StartVersion,
	}
	if m.version == 0 {
		m.version = raftfsm.CommandVersion
	}
	return m
}

func (m *model) fail(invariant, format string, args ...any) { m.s.fail(invariant, format, args...) }

// feed applies one committed entry's command and result to the model. r
// is the replica that applied it first (for queries right after Apply).
func (m *model) feed(r *replica, e *entry, res *raftfsm.Result, err error) {
	cmd := e.cmd
	if err != nil {
		switch {
		case cmd.Operator != nil && cmd.Operator.Action == raftfsm.OpMark && errors.Is(err, raftfsm.ErrOperator):
			if !m.markRefused(cmd.Operator.Blocks) {
				m.fail("marks", "mark of %v refused (%v), though every block is live, unclaimed and below the final level", cmd.Operator.Blocks, err)
			}
			m.judge(e, cmd)
			return // refused: nothing changed but the policies' judgement
		case cmd.Poll != nil && errors.Is(err, raftfsm.ErrStaleRequest),
			cmd.Operator != nil && errors.Is(err, raftfsm.ErrOperator):
			m.judge(e, cmd)
			return // refused: nothing changed but the policies' judgement
		}
		m.fail("apply", "entry %d (%s) refused: %v", e.Index, describe(cmd), err)
	}
	m.now = res.Now
	m.judged = max(m.judged, res.Now)
	switch {
	case cmd.AddBlocks != nil:
		m.feedAdd(cmd.AddBlocks, res)
	case cmd.Poll != nil:
		m.feedPoll(r, e, cmd.Poll, res)
	case cmd.Retention != nil:
		for _, id := range res.Dropped {
			b := m.blocks[id]
			if b == nil || !m.live[id] {
				m.fail("nothing lost, nothing twice", "retention dropped %s, which is not live", id)
			}
			m.remove(id, "retention")
		}
		m.cancelled(res.Cancelled)
	case cmd.ClusterVersion != nil:
		// From version 6 replaced sources become tombstone records.
		m.version = max(m.version, cmd.ClusterVersion.Version)
	case cmd.Operator != nil:
		switch cmd.Operator.Action {
		case raftfsm.OpCancel:
			m.cancelled(res.Cancelled)
		case raftfsm.OpRequeue:
			n := 0
			for _, id := range cmd.Operator.Blocks {
				if m.quar[id] {
					delete(m.quar, id)
					n++
				}
			}
			if n != res.Count {
				m.fail("quarantine", "requeue of %v re-queued %d blocks, %d were quarantined", cmd.Operator.Blocks, res.Count, n)
			}
		case raftfsm.OpMark:
			if m.markRefused(cmd.Operator.Blocks) {
				m.fail("marks", "mark of %v applied, though a block is claimed, not live or at the final level", cmd.Operator.Blocks)
			}
			n := 0
			for _, id := range cmd.Operator.Blocks {
				if !m.quar[id] {
					m.quar[id] = true
					n++
				}
			}
			if n != res.Count {
				m.fail("marks", "mark of %v marked %d blocks, the model %d", cmd.Operator.Blocks, res.Count, n)
			}
		}
	case cmd.Watermark != nil:
		m.wm, m.hasWM = min(cmd.Watermark.OldestReader, res.Now), true
	case cmd.Policy != nil:
		m.feedPolicy(cmd.Policy, res)
	}
}

// markRefused reports whether a mark of ids must be refused: one of them
// is not live, is claimed by a job or lies at or beyond the final level.
func (m *model) markRefused(ids []string) bool {
	for _, id := range ids {
		if _, c := m.claimed[id]; c || !m.live[id] || m.blocks[id].meta.Level >= m.s.cfg.Planner.FinalLevel {
			return true
		}
	}
	return false
}

func (m *model) remove(id, why string) {
	b := m.blocks[id]
	delete(m.live, id)
	b.removed, b.removedAt = why, m.now
	m.liveVer++
	m.changed = append(m.changed, id)
	if m.quar[id] {
		delete(m.quar, id)
	}
}

func (m *model) feedAdd(a *raftfsm.AddBlocks, res *raftfsm.Result) {
	if len(res.Blocks) != len(a.Blocks) {
		m.fail("apply", "add blocks: %d results for %d blocks", len(res.Blocks), len(a.Blocks))
	}
	for i, br := range res.Blocks {
		b := &a.Blocks[i]
		if br.Err != nil {
			if !errors.Is(br.Err, index.ErrDuplicate) {
				m.fail("apply", "block %s refused: %v", b.ID, br.Err)
			}
			if m.blocks[b.ID] == nil && !batchHas(a.Blocks[:i], b.ID) {
				m.fail("nothing lost, nothing twice", "block %s refused as a duplicate, but was never added", b.ID)
			}
			continue
		}
		if m.blocks[b.ID] != nil {
			m.fail("idempotence", "block %s added twice (duplicate ingest accepted)", b.ID)
		}
		m.blocks[b.ID] = &mblock{meta: b.Clone(), keys: m.ingested[b.ID]}
		m.live[b.ID] = true
		m.liveVer++
		m.changed = append(m.changed, b.ID)
		m.s.rep.Blocks++
		if queued := b.Level < m.s.cfg.Planner.FinalLevel; br.Queued != queued {
			m.fail("apply", "block %s at level %d: queued=%t", b.ID, b.Level, br.Queued)
		}
	}
}

func batchHas(bs []ck.BlockMeta, id string) bool {
	return slices.ContainsFunc(bs, func(b ck.BlockMeta) bool { return b.ID == id })
}

// endAttempt records that the job's attempt in progress ended without
// being committed.
func (m *model) endAttempt(j *mjob, name string) {
	if j.attempt != 0 {
		m.ended[ck.AttemptPrefix(name, j.attempt)] = m.now
		j.attempt = 0
	}
}

func (m *model) dropJob(name string) {
	j := m.jobs[name]
	for _, id := range j.plan.Sources {
		if m.claimed[id] == name {
			delete(m.claimed, id)
		}
	}
	for _, t := range j.plan.Tombstones {
		if m.attached[t.String()] == name {
			delete(m.attached, t.String())
		}
	}
	delete(m.jobs, name)
}

func (m *model) cancelled(names []string) {
	for _, name := range names {
		j := m.jobs[name]
		if j == nil {
			m.fail("apply", "cancelled unknown job %s", name)
		}
		m.endAttempt(j, name)
		m.dropJob(name)
	}
}

func (m *model) feedPoll(r *replica, e *entry, p *raftfsm.Poll, res *raftfsm.Result) {
	if res.Poll == nil {
		m.fail("apply", "poll entry %d without a response", e.Index)
	}
	if res.Replayed {
		if len(res.Changes) != 0 {
			m.fail("idempotence", "replayed poll %s seq %d acted on %d changes", p.WorkerID, p.Seq, len(res.Changes))
		}
		return
	}
	if len(res.Changes) != len(p.Update.Changes) {
		m.fail("apply", "poll: %d results for %d changes", len(res.Changes), len(p.Update.Changes))
	}
	tokenIdx := e.Index
	if p.Update.TokenIndex != 0 {
		tokenIdx = p.Update.TokenIndex
	}
	for i := range p.Update.Changes {
		c := &p.Update.Changes[i]
		cr := &res.Changes[i]
		if !cr.Applied {
			continue
		}
		j := m.jobs[c.Job]
		if c.Kind != ck.ChangeAdd && j == nil {
			m.fail("apply", "%s of unknown job %s applied", c.Kind, c.Job)
		}
		switch c.Kind {
		case ck.ChangeAdd:
			if p := m.policyOf(c.Plan.Tenant); !mayStartLevel(p, res.Now, c.Plan.Level) {
				m.fail("policies", "job %s of tenant %q at level %d added at %s, when its policy lets no job start (%+v, levels %+v)", c.Job, c.Plan.Tenant, c.Plan.Level, time.Unix(0, res.Now).UTC(), p.Run, p.LevelRuns)
			}
			m.addJob(r, e, tokenIdx, c, cr)
		case ck.ChangeAssign:
			if j.attempt == 0 {
				// A new attempt (not the reassignment of an expired one,
				// which the job's count already holds): the tenant's
				// window must let it start, and its cap leave room.
				p := m.policyOf(j.plan.Tenant)
				if !mayStartLevel(p, res.Now, j.plan.Level) {
					m.fail("policies", "job %s of tenant %q at level %d started at %s, when its policy lets no job start (%+v, levels %+v, not before %d)", c.Job, j.plan.Tenant, j.plan.Level, time.Unix(0, res.Now).UTC(), p.Run, p.LevelRuns, p.NotBefore)
				}
				if n := m.inProgress(j.plan.Tenant); p.MaxInProgress > 0 && n >= int(p.MaxInProgress) {
					m.fail("policies", "job %s of tenant %q started with %d jobs in progress, cap %d", c.Job, j.plan.Tenant, n, p.MaxInProgress)
				}
				if p.MaxInProgressPerShard > 0 {
					if n := m.shardInProgress(j.plan.Tenant, j.plan.Shard); n >= int(p.MaxInProgressPerShard) {
						m.fail("policies", "job %s of tenant %q shard %d started with %d jobs of the shard in progress, cap %d per shard", c.Job, j.plan.Tenant, j.plan.Shard, n, p.MaxInProgressPerShard)
					}
				}
				if p.MaxInProgress > 0 || p.MaxInProgressPerShard > 0 || len(p.Run.Windows) > 0 || len(p.LevelRuns) > 0 || p.NotBefore > 0 {
					m.s.rep.PolicyStarts++
				}
			}
			if cr.Token <= j.last || cr.Token < j.token || cr.Token != fencing.Token(tokenIdx) {
				m.fail("tokens only grow", "job %s assigned token %d, previous attempt %d, token %d, entry %d token index %d", c.Job, cr.Token, j.last, j.token, e.Index, tokenIdx)
			}
			m.endAttempt(j, c.Job)
			j.token, j.attempt, j.last = cr.Token, cr.Token, cr.Token
		case ck.ChangeRenew:
			if c.Token != j.attempt {
				m.fail("at most one token", "renewal of %s with token %d applied, attempt in progress %d", c.Job, c.Token, j.attempt)
			}
		case ck.ChangeComplete:
			m.complete(c, cr, j, m.version >= recordsVersion)
		case ck.ChangeFail, ck.ChangeRelease:
			if c.Token != j.attempt {
				m.fail("at most one token", "%s of %s with token %d applied, attempt in progress %d", c.Kind, c.Job, c.Token, j.attempt)
			}
			m.endAttempt(j, c.Job)
		case ck.ChangeExclude:
			m.endAttempt(j, c.Job)
		case ck.ChangeEvict:
			m.endAttempt(j, c.Job)
			for _, id := range j.plan.Sources {
				if m.live[id] {
					m.quar[id] = true
				}
			}
			m.dropJob(c.Job)
			m.s.rep.Evictions++
		case ck.ChangeCancel:
			m.endAttempt(j, c.Job)
			m.dropJob(c.Job)
		}
	}
	// An excluded job's tombstones go back to the pool: its plan forgets
	// them, and an excluded cleanup-only job is removed.
	for i := range p.Update.Changes {
		c := &p.Update.Changes[i]
		if !res.Changes[i].Applied || c.Kind != ck.ChangeExclude && c.Kind != ck.ChangeFail {
			continue
		}
		j := m.jobs[c.Job]
		js, _, ok := r.fsm.Job(c.Job)
		switch {
		case ok && js.Status == ck.StatusExcluded:
			m.detach(c.Job)
			if j != nil {
				j.plan.Tombstones = nil
			}
		case !ok && j != nil && j.plan.CleanupOnly():
			m.detach(c.Job)
			m.dropJob(c.Job)
		}
	}
	m.checkReplies(p, res)
}

// detach returns the tombstones job holds to the pool.
func (m *model) detach(job string) {
	for k, j := range m.attached {
		if j == job {
			delete(m.attached, k)
		}
	}
}

func (m *model) addJob(r *replica, e *entry, tokenIdx uint64, c *ck.Change, cr *raftfsm.ChangeResult) {
	// A cleanup-only job is named after its tombstones: the same name may
	// come back once the first is forgotten (its tombstones were not
	// confirmed, e.g. it was excluded, retried and held none).
	if _, done := m.completed[c.Job]; done && !c.Plan.CleanupOnly() || m.jobs[c.Job] != nil {
		m.fail("job names", "job %s created twice", c.Job)
	}
	if c.Plan == nil || cr.Token != fencing.Token(e.Index) && cr.Token != fencing.Token(tokenIdx) {
		m.fail("tokens", "job %s created at entry %d with token %d", c.Job, e.Index, cr.Token)
	}
	// The plan as admitted: the tombstones the index accepted.
	_, plan, ok := r.fsm.Job(c.Job)
	if !ok {
		// Created and removed in the same entry (evicted or cancelled by a
		// later change of the same poll): take the proposed plan.
		plan = c.Plan.Clone()
		plan.Tombstones = nil
	}
	if !slices.Equal(plan.Sources, c.Plan.Sources) {
		m.fail("apply", "job %s admitted with sources %v, proposed %v", c.Job, plan.Sources, c.Plan.Sources)
	}
	for _, id := range plan.Sources {
		if !m.live[id] {
			m.fail("nothing lost, nothing twice", "job %s claims %s, which is not live (%s)", c.Job, id, m.why(id))
		}
		if other, ok := m.claimed[id]; ok {
			m.fail("no block in two jobs", "job %s claims %s, already claimed by %s", c.Job, id, other)
		}
		if m.quar[id] {
			m.fail("nothing lost, nothing twice", "job %s claims quarantined block %s", c.Job, id)
		}
		m.claimed[id] = c.Job
	}
	for _, t := range plan.Tombstones {
		// A record is attached whole: a source prepared for the job brings
		// the record's other sources.
		rec := m.recordOf(t)
		if !slices.Contains(c.Plan.Tombstones, t) && !slices.ContainsFunc(rec, func(s ck.Tombstone) bool { return slices.Contains(c.Plan.Tombstones, s) }) {
			m.fail("tombstones", "job %s carries tombstone %s it was not prepared with", c.Job, t)
		}
		for _, s := range rec {
			if !slices.Contains(plan.Tombstones, s) {
				m.fail("tombstones", "job %s carries %s but not %s of the same record %v", c.Job, t, s, rec)
			}
		}
		m.checkRelease(c.Job, t)
		if other, ok := m.attached[t.String()]; ok {
			info, _ := r.fsm.Index().Tombstone(t)
			js, op, _ := r.fsm.Job(other)
			m.fail("tombstones", "tombstone %s attached to %s and %s (index: job %q created %d; %s is %s, plan tombstones %v)", t, other, c.Job, info.Job, info.Created, other, js.Status, op.Tombstones)
		}
		m.attached[t.String()] = c.Job
	}
	if plan.CleanupOnly() {
		m.s.rep.CleanupJobs++
	}
	m.jobs[c.Job] = &mjob{plan: plan, token: cr.Token}
}

// recordOf returns the sources of the record t is a source of, or nil if
// t stands alone.
func (m *model) recordOf(t ck.Tombstone) []ck.Tombstone {
	if t.Kind != ck.TombstoneBlock {
		return nil
	}
	return m.records[t.Target]
}

func (m *model) why(id string) string {
	b := m.blocks[id]
	switch {
	case b == nil:
		return "never added"
	case b.removed == "":
		return "live"
	default:
		return b.removed
	}
}

// checkRelease: a tombstone is released (attached to a job) only after the
// entry that created it committed and its delay passed (ARCHITECTURE.md, contract 5),
// and the reader watermark allows it.
func (m *model) checkRelease(job string, t ck.Tombstone) {
	var created int64
	switch t.Kind {
	case ck.TombstoneBlock:
		b := m.blocks[t.Target]
		if b == nil || b.removed == "" {
			m.fail("tombstone release", "job %s carries block tombstone %s, which is %s", job, t.Target, m.why(t.Target))
		}
		created = b.removedAt
	case ck.TombstonePrefix:
		at, ok := m.ended[t.Target]
		if !ok {
			m.fail("tombstone release", "job %s carries prefix tombstone %s of an attempt that has not ended (committed=%t)", job, t.Target, m.committed[t.Target])
		}
		created = at
	}
	cfg := m.s.cfg.Index
	if m.now < created+int64(cfg.CleanupDelay) {
		m.fail("tombstone release", "job %s carries %s at %d, created at %d: cleanup delay %s not passed", job, t, m.now, created, cfg.CleanupDelay)
	}
	if m.hasWM && !(created < m.wm) && !(cfg.ReaderTimeout > 0 && m.now >= created+int64(cfg.ReaderTimeout)) {
		m.fail("tombstone release", "job %s carries %s created at %d, reader watermark %d", job, t, created, m.wm)
	}
	if m.confirmed[t.String()] {
		m.fail("tombstones", "job %s carries %s, confirmed earlier", job, t)
	}
}

// checkDeletion is the worker about to delete what the tombstones name:
// nothing live may be under them.
func (m *model) checkDeletion(worker, job string, ts []ck.Tombstone) {
	for _, t := range ts {
		switch t.Kind {
		case ck.TombstoneBlock:
			if m.live[t.Target] {
				m.fail("tombstone release", "worker %s (job %s) deletes live block %s", worker, job, t.Target)
			}
		case ck.TombstonePrefix:
			id := strings.TrimPrefix(t.Target, ck.BlockPrefix)
			for l := range m.live {
				if strings.HasPrefix(l, id) {
					m.fail("tombstone release", "worker %s (job %s) deletes prefix %s over live block %s", worker, job, t.Target, l)
				}
			}
		}
	}
}

// recordsVersion is the first cluster version at which a replacement's
// sources become one tombstone record.
const recordsVersion = 6

// complete follows an applied completion; records tells that the cluster
// version makes tombstone records of replaced sources.
func (m *model) complete(c *ck.Change, cr *raftfsm.ChangeResult, j *mjob, records bool) {
	if c.Token != j.attempt || c.Token != j.token {
		m.fail("at most one token", "completion of %s with token %d applied; attempt %d, token %d", c.Job, c.Token, j.attempt, j.token)
	}
	m.completed[c.Job] = c.Token
	prefix := ck.AttemptPrefix(c.Job, c.Token)
	m.s.rep.Completions++
	for _, t := range j.plan.Tombstones {
		if m.attached[t.String()] == c.Job {
			m.confirmed[t.String()] = true
			delete(m.records, t.Target)
		}
	}
	if j.plan.CleanupOnly() {
		m.ended[prefix] = m.now
		j.attempt = 0
		m.dropJob(c.Job)
		return
	}
	rr := cr.Replace
	if rr == nil {
		m.fail("apply", "completion of %s without a replacement result", c.Job)
	}
	if !rr.Applied {
		m.s.rep.Refusals++
		m.ended[prefix] = m.now
		j.attempt = 0
		if !slices.ContainsFunc(j.plan.Sources, func(id string) bool { return !m.live[id] }) {
			m.fail("apply", "completion of %s refused (%s: %s) although every source is live", c.Job, rr.Reason, rr.Detail)
		}
		m.dropJob(c.Job)
		return
	}
	m.committed[prefix] = true
	j.attempt = 0
	// Every record of the sources goes to the output of its tenant.
	outs := map[string]*mblock{}
	for i := range c.Outputs {
		o := &c.Outputs[i]
		if m.blocks[o.ID] != nil {
			m.fail("nothing lost, nothing twice", "output %s of %s added twice", o.ID, c.Job)
		}
		if o.Level >= 64 || o.Level != j.plan.Level+1 {
			m.fail("apply", "output %s of %s at level %d, job level %d", o.ID, c.Job, o.Level, j.plan.Level)
		}
		b := &mblock{meta: o.Clone(), keys: blockKeys{}}
		m.blocks[o.ID] = b
		m.live[o.ID] = true
		m.changed = append(m.changed, o.ID)
		outs[o.Tenant] = b
	}
	for _, id := range j.plan.Sources {
		src := m.blocks[id]
		if !m.live[id] || m.claimed[id] != c.Job {
			m.fail("no block compacted twice", "job %s compacted %s, which is %s (claimed by %q)", c.Job, id, m.why(id), m.claimed[id])
		}
		for t, ks := range src.keys {
			o := outs[t]
			if o == nil {
				m.fail("harness", "job %s: no output for tenant %s of source %s", c.Job, t, id)
			}
			o.keys[t] = append(o.keys[t], ks...)
		}
		m.remove(id, "replaced by "+c.Job)
	}
	if records {
		rec := make([]ck.Tombstone, len(j.plan.Sources))
		for i, id := range j.plan.Sources {
			rec[i] = ck.Tombstone{Kind: ck.TombstoneBlock, Target: id}
		}
		slices.SortFunc(rec, func(a, b ck.Tombstone) int { return strings.Compare(a.Target, b.Target) })
		for _, id := range j.plan.Sources {
			m.records[id] = rec
		}
	}
	m.dropJob(c.Job)
}

// checkReplies: what the response says about each job agrees with the
// model: renewed, completed and accepted only for the token that holds.
func (m *model) checkReplies(p *raftfsm.Poll, res *raftfsm.Result) {
	for _, r := range res.Poll.Jobs {
		switch r.Outcome {
		case ck.OutcomeAssigned:
			j := m.jobs[r.Job]
			if j == nil || j.attempt != r.Token {
				m.fail("at most one token", "%s assigned %s token %d; model attempt %v", p.WorkerID, r.Job, r.Token, j)
			}
		case ck.OutcomeRenewed:
			j := m.jobs[r.Job]
			if j == nil || j.attempt != r.Token {
				m.fail("at most one token", "%s renewed %s token %d; model %v", p.WorkerID, r.Job, r.Token, j)
			}
		case ck.OutcomeCompleted:
			if tok, ok := m.completed[r.Job]; !ok || tok != r.Token {
				m.fail("at most one token", "%s told %s token %d completed; completed with %d (%t)", p.WorkerID, r.Job, r.Token, tok, ok)
			}
		}
	}
}

// check compares the state machine (the reference replica, at the commit
// index) with the model: the live blocks, the jobs and their claims, the
// quarantine, the planner's queue — every added block in exactly one
// state of ARCHITECTURE.md's contract 5.
func (m *model) check() {
	f := m.s.replicas[0].fsm
	view := f.Index()
	if view.Len() != len(m.live) {
		m.fail("nothing lost, nothing twice", "%d live blocks in the index, %d in the model", view.Len(), len(m.live))
	}
	// Equal counts and every model block live in the index: equal sets.
	// Between full comparisons, the blocks the model added or removed
	// since the last check are compared (a divergence elsewhere is caught
	// by the counts or, at the latest, by the next full comparison).
	if m.s.step-m.fullAt >= fullEvery || m.s.phase == "end" {
		m.fullAt = m.s.step
		for id := range m.live {
			if !view.Live(id) {
				m.fail("nothing lost, nothing twice", "block %s live in the model, not in the index", id)
			}
		}
	}
	for _, id := range m.changed {
		if view.Live(id) != m.live[id] {
			m.fail("nothing lost, nothing twice", "block %s: live in the index %t, in the model %t (%s)", id, view.Live(id), m.live[id], m.why(id))
		}
	}
	m.changed = m.changed[:0]
	jobs := allJobs(f, scheduler.Filter{})
	if len(jobs) != len(m.jobs) {
		m.fail("jobs", "%d jobs in the scheduler, %d in the model", len(jobs), len(m.jobs))
	}
	claimed := 0
	for _, js := range jobs {
		mj := m.jobs[js.Name]
		if mj == nil {
			m.fail("jobs", "job %s in the scheduler, not in the model", js.Name)
		}
		_, plan, _ := f.Job(js.Name)
		if !slices.Equal(plan.Sources, mj.plan.Sources) {
			m.fail("jobs", "job %s sources %v, model %v", js.Name, plan.Sources, mj.plan.Sources)
		}
		if js.Token != mj.token {
			m.fail("at most one token", "job %s token %d, model %d", js.Name, js.Token, mj.token)
		}
		if (js.Status == ck.StatusInProgress) != (mj.attempt != 0) {
			m.fail("at most one token", "job %s %s, model attempt %d", js.Name, js.Status, mj.attempt)
		}
		for _, id := range plan.Sources {
			if !m.live[id] {
				m.fail("nothing lost, nothing twice", "job %s holds %s, which is %s", js.Name, id, m.why(id))
			}
			claimed++
		}
	}
	for _, t := range view.Tombstones(ck.Tombstone{}, 0) {
		if want := m.attached[t.Tombstone.String()]; t.Job != want {
			m.fail("tombstones", "tombstone %s attached to %q, model %q", t.Tombstone, t.Job, want)
		}
	}
	quar := allQuarantined(f)
	if len(quar) != len(m.quar) {
		m.fail("quarantine", "%d quarantined blocks, %d in the model", len(quar), len(m.quar))
	}
	for _, q := range quar {
		if !m.quar[q.ID] {
			m.fail("quarantine", "block %s quarantined, model says %s (claimed by %q)", q.ID, m.why(q.ID), m.claimed[q.ID])
		}
		if q.Reason == "" {
			m.fail("quarantine", "block %s quarantined without a reason", q.ID)
		}
	}
	final := m.s.cfg.Planner.FinalLevel
	queued := 0
	for id := range m.live {
		b := m.blocks[id]
		_, c := m.claimed[id]
		if b.meta.Level >= final {
			if c || m.quar[id] {
				m.fail("nothing lost, nothing twice", "final-level block %s claimed=%t quarantined=%t", id, c, m.quar[id])
			}
			continue
		}
		if c && m.quar[id] {
			m.fail("nothing lost, nothing twice", "block %s both claimed and quarantined", id)
		}
		if !c && !m.quar[id] {
			queued++
		}
	}
	st := f.Stats()
	if st.Planner.Queued != queued || st.Planner.Claimed != claimed || st.Planner.Quarantined != len(m.quar) {
		m.fail("nothing lost, nothing twice", "planner queued/claimed/quarantined %d/%d/%d, model %d/%d/%d",
			st.Planner.Queued, st.Planner.Claimed, st.Planner.Quarantined, queued, claimed, len(m.quar))
	}
	m.s.rep.Quarantined = max(m.s.rep.Quarantined, len(m.quar))
	m.checkPressure(f, &st)
}

// settled returns "" once the model and the state machine are at the
// fixed point: no job, no tombstone, and every live block at the final
// level, quarantined, or queued in a batch that will never be ready.
func (m *model) settled() string {
	f := m.s.replicas[0].fsm
	st := f.Stats()
	if st.Scheduler.Jobs > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "%d jobs left:", st.Scheduler.Jobs)
		for i, js := range allJobs(f, scheduler.Filter{}) {
			if i == 3 {
				break
			}
			fmt.Fprintf(&b, " %s %s token %d failures %d worker %q deadline-now %s;", js.Name, js.Status, js.Token, js.Failures, js.Worker, time.Duration(js.Deadline-st.Now))
		}
		fmt.Fprintf(&b, " paused %v", st.Scheduler.Paused)
		return b.String()
	}
	if ts := f.Index().Tombstones(ck.Tombstone{}, 0); len(ts) > 0 {
		return fmt.Sprintf("%d tombstones not confirmed (first %s)", len(ts), ts[0].Tombstone)
	}
	for i, l := range st.Planner.Levels {
		lc := m.s.cfg.Planner.Levels[i]
		if l.ReadyBatches > 0 || (lc.MaxAge > 0 && l.Queued > 0) {
			return fmt.Sprintf("level %d: %d queued, %d ready batches, lag %s (max age %s); paused %v", l.Level, l.Queued, l.ReadyBatches, l.Lag, lc.MaxAge, st.Scheduler.Paused)
		}
	}
	return ""
}

// progress changes whenever the system gets anything done: a
// completion, a change of the live blocks, a confirmed tombstone.
func (m *model) progress() [3]int {
	return [3]int{m.s.rep.Completions, int(m.liveVer), len(m.confirmed)}
}

// checkTokens: at most one worker holds a token the state machine would
// accept for a job.
func (s *Sim) checkTokens() {
	f := s.replicas[0].fsm
	holders := map[string]string{}
	for _, w := range s.workers {
		for _, j := range w.jobs {
			js, _, ok := f.Job(j.name)
			if !ok || js.Status != ck.StatusInProgress || js.Token != j.token {
				continue
			}
			if other, dup := holders[j.name]; dup {
				s.fail("at most one token", "workers %s and %s both hold %s with its current token %d", other, w.id, j.name, j.token)
			}
			holders[j.name] = w.id
		}
	}
}

// judge notes the time of an entry whose command Apply refused after
// judging the policies at it (see model.judged).
func (m *model) judge(e *entry, cmd *raftfsm.Command) {
	t := cmd.Time
	if t == 0 {
		t = e.Time
	}
	m.judged = max(m.judged, t)
}

func describe(c *raftfsm.Command) string {
	switch {
	case c == nil:
		return "nil"
	case c.AddBlocks != nil:
		return fmt.Sprintf("add %d blocks (%s..)", len(c.AddBlocks.Blocks), c.AddBlocks.Blocks[0].ID)
	case c.Poll != nil:
		var b strings.Builder
		fmt.Fprintf(&b, "poll %s seq %d tokidx %d [", c.Poll.WorkerID, c.Poll.Seq, c.Poll.Update.TokenIndex)
		for _, ch := range c.Poll.Update.Changes {
			fmt.Fprintf(&b, " %s %s v%d t%d", ch.Kind, ch.Job, ch.Version, ch.Token)
		}
		b.WriteString(" ]")
		return b.String()
	case c.Config != nil:
		return "config"
	case c.TookOffice != nil:
		return "took office " + c.TookOffice.Leader
	case c.Retention != nil:
		return fmt.Sprintf("retention %q all=%t before %d", c.Retention.Tenant, c.Retention.All, c.Retention.Before)
	case c.Watermark != nil:
		return fmt.Sprintf("watermark %d", c.Watermark.OldestReader)
	case c.Operator != nil:
		o := c.Operator
		lvl := "*"
		if o.Level != nil {
			lvl = strconv.Itoa(int(*o.Level))
		}
		return fmt.Sprintf("operator %s tenant=%q level=%s job=%q blocks=%v max=%d", o.Action, o.Tenant, lvl, o.Job, o.Blocks, o.MaxFailures)
	case c.PreparePoll != nil:
		return fmt.Sprintf("prepare poll %s seq %d", c.PreparePoll.WorkerID, c.PreparePoll.Seq)
	case c.ClusterVersion != nil:
		return "cluster version"
	case c.Policy != nil:
		p := c.Policy
		lvl := "*"
		if p.Level != nil {
			lvl = strconv.Itoa(int(*p.Level))
		}
		pol := "none"
		if p.Policy != nil {
			pol = fmt.Sprintf("%+v", *p.Policy)
		}
		return fmt.Sprintf("policy %s tenant=%q all=%t level=%s policy=%s", p.Action, p.Tenant, p.All, lvl, pol)
	}
	return "?"
}

func describeResult(res *raftfsm.Result, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	var b strings.Builder
	for _, c := range res.Changes {
		fmt.Fprintf(&b, "%s %s applied=%t", c.Kind, c.Job, c.Applied)
		if !c.Applied {
			fmt.Fprintf(&b, " (%s)", c.Why())
		}
		if c.Replace != nil && !c.Replace.Applied {
			fmt.Fprintf(&b, " refused %s", c.Replace.Detail)
		}
		b.WriteString("; ")
	}
	if res.Replayed {
		b.WriteString("replayed; ")
	}
	if len(res.Dropped) > 0 {
		fmt.Fprintf(&b, "dropped %v; ", res.Dropped)
	}
	if len(res.Cancelled) > 0 {
		fmt.Fprintf(&b, "cancelled %v; ", res.Cancelled)
	}
	return b.String()
}

// allJobs lists every job of f matching flt, page by page.
func allJobs(f *raftfsm.FSM, flt scheduler.Filter) []ck.JobState {
	var out []ck.JobState
	cursor := ""
	for {
		page, next := f.Jobs(flt, cursor, 1000)
		out = append(out, page...)
		if next == "" || len(page) == 0 {
			return out
		}
		cursor = next
	}
}

// allQuarantined lists every quarantined block of f.
func allQuarantined(f *raftfsm.FSM) []planner.QuarantinedBlock {
	var out []planner.QuarantinedBlock
	cursor := ""
	for {
		page, next := f.Quarantined(cursor, 1000)
		out = append(out, page...)
		if next == "" || len(page) == 0 {
			return out
		}
		cursor = next
	}
}

// mayStartLevel reports whether a tenant's new jobs at a level may start
// at log time now under its policy: its run policy and not-before time,
// and the level's run policy.
func mayStartLevel(p policy.Tenant, now int64, level uint32) bool {
	return p.MayStart(now) && policy.ClosedLevels(p.LevelRuns, now)&(1<<level) == 0
}
