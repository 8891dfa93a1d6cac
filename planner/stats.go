package planner

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// LevelStats describes the queue of one level.
type LevelStats struct {
	// Level is the compaction level.
	Level uint32
	// Keys is the number of keys with queued blocks.
	Keys int
	// Queued is the number of queued blocks.
	Queued int
	// ReadyBatches estimates the number of jobs that could be planned now
	// (at Stats.Now): per key whose head batch is ready, that batch plus one
	// per further MaxBlocks queued blocks (byte and span limits are only
	// applied to the head batch). Readiness is a property of the batches:
	// those of held tenants (see [Planner.SetHold]) and of paused ones
	// count, and forcing ([Force]) is not taken into account.
	ReadyBatches int
	// Oldest is the arrival time (log time) of the oldest queued block, and
	// Lag how long it has waited at Stats.Now: the compaction lag. Both are
	// zero when nothing is queued.
	Oldest int64
	Lag    time.Duration
	// Debt is the compaction debt: the sum over queued blocks of the time
	// they have waited, in block-seconds. It grows with both the backlog and
	// its age, which makes it a backpressure and autoscaling signal.
	Debt int64
	// Claimed is the number of blocks claimed by jobs.
	Claimed int
	// Quarantined is the number of quarantined blocks.
	Quarantined int
}

// Stats describes the planner's state.
type Stats struct {
	// Now is the latest log time the planner applied: the time the
	// readiness, lag and debt figures are computed at.
	Now int64
	// Levels has one entry per level below the final level.
	Levels []LevelStats
	// Keys, Queued, Claimed and Quarantined are the totals over levels;
	// Jobs is the number of jobs that claim blocks.
	Keys, Queued, Jobs, Claimed, Quarantined int
	// Counters count what the planner did.
	Counters Counters
}

// Stats returns the planner's statistics, with readiness, lag and debt
// judged at log time now, or at the planner's own time if that is later
// (0 for the planner's own time): the state machine passes its effective
// time, which moves on entries that do not touch the planner (renewals,
// idle polls). Its cost is linear in the number of keys, jobs and
// quarantined blocks, not in the number of queued blocks.
func (p *Planner) Stats(now int64) Stats { return p.s.stats(max(now, p.s.clock)) }

func (s *state) stats(clock int64) Stats {
	st := Stats{Now: clock, Levels: make([]LevelStats, s.cfg.FinalLevel), Counters: s.counters}
	for i := range st.Levels {
		st.Levels[i].Level = uint32(i)
	}
	nowSec := clock / int64(time.Second)
	level := func(l uint32) *LevelStats {
		if int(l) < len(st.Levels) {
			return &st.Levels[l]
		}
		return &LevelStats{} // not reachable: SetConfig keeps blocks below the final level
	}
	s.keys.Ascend(func(q *queue) bool {
		ls := level(q.k.level)
		ls.Keys++
		ls.Queued += q.n
		if t := q.first().time; ls.Keys == 1 || t < ls.Oldest {
			ls.Oldest = t
		}
		ls.ReadyBatches += s.readyBatches(q, clock)
		ls.Debt += int64(q.n)*nowSec - q.sumSec
		return true
	})
	s.claims.Ascend(func(c *claim) bool {
		level(c.k.level).Claimed += len(c.items)
		st.Jobs++
		return true
	})
	s.quar.Ascend(func(qe *quarEnt) bool {
		level(qe.k.level).Quarantined++
		return true
	})
	for i := range st.Levels {
		ls := &st.Levels[i]
		if ls.Queued > 0 && clock > ls.Oldest {
			ls.Lag = time.Duration(clock - ls.Oldest)
		}
		st.Keys += ls.Keys
		st.Queued += ls.Queued
		st.Claimed += ls.Claimed
		st.Quarantined += ls.Quarantined
	}
	return st
}

// readyBatches estimates the jobs that could be planned from a key's
// queue at log time clock: its head batch, if ready, plus one per further
// MaxBlocks queued blocks (see [LevelStats].ReadyBatches).
func (s *state) readyBatches(q *queue, clock int64) int {
	lc := s.levelOf(q.k.tenant, q.k.level)
	if !q.head.ready(clock, lc) {
		return 0
	}
	return 1 + (q.n-q.head.count)/lc.MaxBlocks
}

// TenantStats describes the queue of one tenant at one level: the
// per-tenant compaction lag and debt.
type TenantStats struct {
	// Tenant is the tenant; empty for multi-tenant level-0 segments.
	Tenant string
	// Level is the compaction level.
	Level uint32
	// Queued is the number of queued blocks, and ReadyBatches the jobs
	// that could be planned now (see LevelStats).
	Queued, ReadyBatches int
	// Oldest is the arrival time of the oldest queued block, Lag how long
	// it has waited, and Debt the sum of the waits in block-seconds (see
	// LevelStats).
	Oldest int64
	Lag    time.Duration
	Debt   int64
}

// Tenants returns the compaction lag and debt of every tenant and level
// with queued blocks, sorted by tenant, then level, judged at log time now
// as [Planner.Stats] is. Its cost is linear in the number of keys, not in
// the number of queued blocks.
func (p *Planner) Tenants(now int64) []TenantStats { return p.s.tenants(max(now, p.s.clock)) }

func (s *state) tenants(clock int64) []TenantStats {
	type tl struct {
		tenant string
		level  uint32
	}
	at := map[tl]int{}
	var out []TenantStats
	nowSec := clock / int64(time.Second)
	s.keys.Ascend(func(q *queue) bool {
		if q.n == 0 {
			return true
		}
		k := tl{q.k.tenant, q.k.level}
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, TenantStats{Tenant: k.tenant, Level: k.level, Oldest: q.first().time})
		}
		ts := &out[i]
		ts.Queued += q.n
		ts.Oldest = min(ts.Oldest, q.first().time)
		ts.ReadyBatches += s.readyBatches(q, clock)
		ts.Debt += int64(q.n)*nowSec - q.sumSec
		return true
	})
	for i := range out {
		if clock > out[i].Oldest {
			out[i].Lag = time.Duration(clock - out[i].Oldest)
		}
	}
	slices.SortFunc(out, func(a, b TenantStats) int {
		if c := strings.Compare(a.Tenant, b.Tenant); c != 0 {
			return c
		}
		return cmp.Compare(a.Level, b.Level)
	})
	return out
}

// Counters count what the planner did since its state began (they are
// replicated state: part of the snapshot).
type Counters struct {
	// Enqueued counts blocks queued by Enqueue.
	Enqueued uint64
	// Claims counts jobs that claimed their sources.
	Claims uint64
	// Completions counts jobs completed.
	Completions uint64
	// Returns counts jobs whose claims ended by Return, and ReturnedBlocks
	// the sources that went back into the queue.
	Returns, ReturnedBlocks uint64
	// Quarantines counts evicted jobs, and QuarantinedBlocks their sources.
	Quarantines, QuarantinedBlocks uint64
	// Requeued counts quarantined blocks an operator re-queued.
	Requeued uint64
	// Dropped counts blocks removed from the queue or the quarantine by
	// retention (Drop).
	Dropped uint64
	// Duplicates counts blocks that were already queued (or quarantined)
	// when Return, Requeue or Quarantine tried to add them again; they were
	// not added twice.
	Duplicates uint64
	// MissedRemovals counts blocks Drop did not find queued, claimed or
	// quarantined.
	MissedRemovals uint64
}
