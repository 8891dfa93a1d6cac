package sim

import (
	"fmt"
	"slices"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/policy"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/scheduler"
)

// minutesPerDay is the largest end of a policy window.
const minutesPerDay = 24 * 60

var tenants = []string{"t1", "t2", "t3"}

// ingestBatch is one AddBlocks command the ingester proposes until it
// learns it committed.
type ingestBatch struct {
	blocks []ck.BlockMeta
	entry  *entry
	done   bool
	sentAt int64
}

// ingester writes new blocks and proposes them; it retries a batch whose
// entry was dropped or whose reply was lost (a duplicate ingest).
type ingester struct {
	next    int
	batches []*ingestBatch // not yet acknowledged
	past    []*ingestBatch // acknowledged, for duplicate ingest
}

func (g *ingester) pending() bool { return len(g.batches) > 0 }

// blockKeys are the record keys a block holds, by tenant.
type blockKeys map[string][]string

func (s *Sim) ingestStep() {
	if s.faultOn {
		n := 0
		switch {
		case s.chance(FaultIngestBurst):
			n = 10 + s.rng.IntN(30)
		case s.coin(0.3):
			n = 1 + s.rng.IntN(3)
		}
		if n > 0 {
			b := &ingestBatch{}
			for range n {
				b.blocks = append(b.blocks, s.newBlock())
			}
			s.ing.batches = append(s.ing.batches, b)
			s.proposeBatch(b)
		}
		if s.chance(FaultDuplicateIngest) && len(s.ing.past) > 0 {
			old := s.ing.past[s.rng.IntN(len(s.ing.past))]
			s.tracef("duplicate ingest of %d blocks", len(old.blocks))
			s.propose(&raftfsm.Command{AddBlocks: &raftfsm.AddBlocks{Blocks: old.blocks}}, nil)
		}
	}
	// Retry what was not acknowledged.
	keep := s.ing.batches[:0]
	for _, b := range s.ing.batches {
		switch {
		case b.done:
			s.ing.past = append(s.ing.past, b)
		case s.now-b.sentAt > int64(3*time.Second):
			s.proposeBatch(b)
			keep = append(keep, b)
		default:
			keep = append(keep, b)
		}
	}
	s.ing.batches = keep
}

func (s *Sim) proposeBatch(b *ingestBatch) {
	b.sentAt = s.now
	b.entry = s.propose(&raftfsm.Command{AddBlocks: &raftfsm.AddBlocks{Blocks: b.blocks}}, nil)
	b.entry.batch = b
}

// newBlock writes (data check) or describes a new level-0 block: usually
// one tenant's, sometimes a segment of several tenants.
func (s *Sim) newBlock() ck.BlockMeta {
	s.ing.next++
	id := fmt.Sprintf("seg/%05d", s.ing.next)
	shard := uint32(s.rng.IntN(2))
	var ts []string
	if s.coin(0.2) {
		ts = []string{"t1", "t2", "t3"}[:2+s.rng.IntN(2)]
	} else {
		ts = []string{tenants[s.rng.IntN(len(tenants))]}
	}
	base := s.now - s.rng.Int64N(int64(30*time.Second))
	keys := blockKeys{}
	var sets []blockmerge.Dataset
	meta := ck.BlockMeta{ID: id, Shard: shard, MinTime: base, MaxTime: base}
	if len(ts) == 1 {
		meta.Tenant = ts[0]
	}
	for _, t := range ts {
		for _, name := range []string{"a", "b"}[:1+s.rng.IntN(2)] {
			n := 1 + s.rng.IntN(4)
			d := blockmerge.Dataset{Tenant: t, Name: name}
			dm := ck.DatasetMeta{Name: name, Records: int64(n), Size: int64(n * 20), MinTime: base, MaxTime: base + int64(n)}
			if len(ts) > 1 {
				dm.Tenant = t
			}
			for i := range n {
				k := fmt.Sprintf("%s.%s.%s.%d", id, t, name, i)
				keys[t] = append(keys[t], k)
				d.Records = append(d.Records, blockmerge.Record{Key: []byte(k), Timestamp: base + int64(i), Value: []byte("v")})
			}
			sets = append(sets, d)
			meta.Datasets = append(meta.Datasets, dm)
			meta.Size += dm.Size
			meta.MaxTime = max(meta.MaxTime, dm.MaxTime)
		}
	}
	if s.opt.Data {
		tenant := ""
		if len(ts) == 1 {
			tenant = ts[0]
		}
		m, err := blockmerge.WriteBlock(s.ctx, s.store, blockmerge.BlockInfo{ID: id, Tenant: tenant, Shard: shard}, sets)
		if err != nil {
			s.fail("ingest", "writing %s: %v", id, err)
		}
		meta = m
	}
	s.metas[id] = meta
	s.model.ingested[id] = keys
	return meta
}

// randomPolicy draws a policy command: a tenant's or the default policy
// set (any class, a cap of 1 to 3, a per-shard cap of 1 or 2, a run window around the present, a
// not-before time in the next minutes, backpressure thresholds for the
// tenant and for each of its shards, level
// overrides, a level's run window), cleared, or a compact-now request.
func (s *Sim) randomPolicy() *raftfsm.PolicyCommand {
	pc := &raftfsm.PolicyCommand{By: "sim"}
	if s.coin(0.2) {
		pc.All = true
	} else {
		pc.Tenant = tenants[s.rng.IntN(len(tenants))]
	}
	switch n := s.rng.IntN(10); {
	case n < 5:
		pc.Action = raftfsm.PolicySet
		p := &policy.Tenant{Class: policy.Class(s.rng.IntN(3))}
		if s.coin(0.5) {
			p.MaxInProgress = uint32(1 + s.rng.IntN(3))
		}
		if s.coin(0.3) {
			p.MaxInProgressPerShard = uint32(1 + s.rng.IntN(2))
		}
		if s.coin(0.3) {
			// A window of 2 to 30 minutes starting within the next half
			// hour (of the leader's clock), every day.
			start := uint16((s.leaderClock()/int64(time.Minute) + int64(s.rng.IntN(30))) % minutesPerDay)
			w := policy.Window{Days: policy.EveryDay, Start: start, End: (start + uint16(2+s.rng.IntN(29))) % minutesPerDay}
			if w.End == 0 {
				w.End = minutesPerDay
			}
			p.Run = policy.RunPolicy{Mode: policy.RunMode(s.rng.IntN(2)), Windows: []policy.Window{w}}
		}
		if s.coin(0.1) {
			p.NotBefore = s.leaderClock() + s.rng.Int64N(int64(2*time.Minute))
		}
		if s.coin(0.3) {
			on := int64(5 + s.rng.IntN(45))
			p.Pressure = policy.Thresholds{SlowBlocks: policy.Limit{On: on, Off: on / 2}, StopBlocks: policy.Limit{On: 2 * on, Off: on}}
		}
		if s.coin(0.2) {
			on := int64(3 + s.rng.IntN(20))
			p.ShardPressure = policy.Thresholds{SlowBlocks: policy.Limit{On: on, Off: on / 2}, StopBlocks: policy.Limit{On: 2 * on, Off: on}}
		}
		if s.coin(0.2) {
			p.StaleAfter = time.Duration(10+s.rng.IntN(110)) * time.Second
		}
		if s.coin(0.25) {
			// Level overrides: smaller or larger batches, shorter or
			// longer waits, level 0 or 1 across shards or not.
			for l := range min(2, s.cfg.Planner.FinalLevel) {
				if s.coin(0.5) {
					continue
				}
				o := policy.Level{Level: l, MaxBlocks: s.rng.IntN(8), CrossShard: policy.Toggle(s.rng.IntN(3))}
				if s.coin(0.5) {
					o.MaxAge = time.Duration(1+s.rng.IntN(90)) * time.Second
				}
				if o == (policy.Level{Level: l}) {
					o.MaxBlocks = 1
				}
				p.Levels = append(p.Levels, o)
			}
		}
		if len(p.Run.Windows) == 0 && s.coin(0.2) {
			// A window for level 0 or 1 alone (the tenant's own run policy
			// has none, so the two always meet).
			start := uint16((s.leaderClock()/int64(time.Minute) + int64(s.rng.IntN(30))) % minutesPerDay)
			w := policy.Window{Days: policy.EveryDay, Start: start, End: (start + uint16(2+s.rng.IntN(29))) % minutesPerDay}
			if w.End == 0 {
				w.End = minutesPerDay
			}
			p.LevelRuns = []policy.LevelRun{{Level: uint32(s.rng.IntN(int(min(2, s.cfg.Planner.FinalLevel)))),
				Run: policy.RunPolicy{Mode: policy.RunMode(s.rng.IntN(2)), Windows: []policy.Window{w}}}}
		}
		pc.Policy = p
	case n < 8:
		pc.Action = raftfsm.PolicyClear
	default:
		pc.Action = raftfsm.PolicyCompactNow
		if s.coin(0.5) {
			l := uint32(s.rng.IntN(int(s.cfg.Planner.FinalLevel)))
			pc.Level = &l
		}
	}
	return pc
}

// clearPolicies clears every policy the leader's replica has, so that
// the liveness phase drains.
func (s *Sim) clearPolicies() {
	f := s.leaderReplica().fsm
	ps := f.Policies()
	if !ps.Default.Equal(policy.Tenant{}) {
		s.propose(&raftfsm.Command{Policy: &raftfsm.PolicyCommand{Action: raftfsm.PolicyClear, All: true}}, nil)
	}
	for _, tp := range ps.Tenants {
		s.propose(&raftfsm.Command{Policy: &raftfsm.PolicyCommand{Action: raftfsm.PolicyClear, Tenant: tp.Tenant}}, nil)
	}
}

// operatorStep issues operator commands and retention in the middle of it
// all. The operator reads the leader's replica.
func (s *Sim) operatorStep() {
	r := s.leaderReplica()
	if s.chance(FaultPause) {
		op := &raftfsm.Operator{Action: raftfsm.OpPause}
		switch s.rng.IntN(3) {
		case 0:
			op.Tenant = tenants[s.rng.IntN(len(tenants))]
			if s.coin(0.25) {
				op.Tenant = "" // the empty tenant: the multi-tenant segments and cleanup-only jobs
			}
		case 1:
			// A level across tenants: every tenant is said with All.
			l := uint32(s.rng.IntN(int(s.cfg.Planner.FinalLevel)))
			op.Level, op.All = &l, true
		default:
			l := uint32(s.rng.IntN(int(s.cfg.Planner.FinalLevel)))
			op.Tenant, op.Level = tenants[s.rng.IntN(len(tenants))], &l
		}
		s.pauses = append(s.pauses, op)
		s.propose(&raftfsm.Command{Operator: op}, nil)
	}
	if s.chance(FaultResume) && len(s.pauses) > 0 {
		i := s.rng.IntN(len(s.pauses))
		op := *s.pauses[i]
		op.Action = raftfsm.OpResume
		s.pauses = slices.Delete(s.pauses, i, i+1)
		s.propose(&raftfsm.Command{Operator: &op}, nil)
	}
	if s.chance(FaultRetry) {
		op := &raftfsm.Operator{Action: raftfsm.OpRetry}
		if jobs := allJobs(r.fsm, scheduler.Filter{Status: ck.StatusExcluded}); len(jobs) > 0 && s.coin(0.7) {
			op.Job = jobs[s.rng.IntN(len(jobs))].Name
		}
		s.propose(&raftfsm.Command{Operator: op}, nil)
	}
	if s.chance(FaultCancel) {
		if jobs := allJobs(r.fsm, scheduler.Filter{}); len(jobs) > 0 {
			op := &raftfsm.Operator{Action: raftfsm.OpCancel, Job: jobs[s.rng.IntN(len(jobs))].Name}
			s.propose(&raftfsm.Command{Operator: op}, nil)
		}
	}
	if s.chance(FaultRequeue) {
		if qs, _ := r.fsm.Quarantined("", 0); len(qs) > 0 {
			var ids []string
			for _, q := range qs {
				if s.coin(0.5) {
					ids = append(ids, q.ID)
				}
			}
			if len(ids) == 0 {
				ids = []string{qs[0].ID}
			}
			s.propose(&raftfsm.Command{Operator: &raftfsm.Operator{Action: raftfsm.OpRequeue, Blocks: ids}}, nil)
		}
	}
	if s.chance(FaultMark) {
		view := r.fsm.Index()
		live := view.Blocks("", 0)
		view.Close()
		if len(live) > 0 {
			var ids []string
			for range 1 + s.rng.IntN(3) {
				ids = append(ids, live[s.rng.IntN(len(live))].ID)
			}
			s.propose(&raftfsm.Command{Operator: &raftfsm.Operator{Action: raftfsm.OpMark, Blocks: ids, Reason: "sim: do not compact", By: "sim"}}, nil)
		}
	}
	if s.chance(FaultPolicy) {
		s.propose(&raftfsm.Command{Policy: s.randomPolicy()}, nil)
	}
	if s.chance(FaultSetMaxFailures) {
		s.propose(&raftfsm.Command{Operator: &raftfsm.Operator{Action: raftfsm.OpSetMaxFailures, MaxFailures: uint32(s.rng.IntN(4))}}, nil)
	}
	if s.chance(FaultRetention) {
		ret := &raftfsm.Retention{Before: s.now - int64(time.Duration(20+s.rng.IntN(60))*time.Second)}
		if s.coin(0.3) {
			ret.All = true
		} else {
			ret.Tenant = tenants[s.rng.IntN(len(tenants))]
		}
		s.propose(&raftfsm.Command{Retention: ret}, nil)
	}
	if s.chance(FaultWatermark) {
		s.propose(&raftfsm.Command{Watermark: &raftfsm.Watermark{OldestReader: s.leaderClock() - s.rng.Int64N(int64(time.Minute))}}, nil)
	}
}
