package demo

import (
	"time"

	"github.com/compactkit/compactkit/raftfsm"
)

// StateConfig returns the replicated configuration the examples start
// from: the library's defaults with batching shrunk to a demo's scale
// (level 0 batches of 10 segments or 1 s, level 1 of 6 blocks or 1.5 s,
// level 2 compacted across shards in batches of 6 or 2 s, final level 3),
// 3 s leases so that a lost worker's jobs are reassigned quickly, and a
// cleanup delay of half a second so that replaced blocks are deleted
// during the run.
func StateConfig() raftfsm.Config {
	c := raftfsm.DefaultConfig()
	p := &c.Planner
	p.Levels[0].MaxBlocks, p.Levels[0].MaxAge = 10, time.Second
	p.Levels[1].MaxBlocks, p.Levels[1].MaxAge = 6, 1500*time.Millisecond
	p.Levels[2].MaxBlocks, p.Levels[2].MaxAge, p.Levels[2].CrossShard = 6, 2*time.Second, true
	for i := range p.Levels {
		p.Levels[i].AgingThreshold = 4 * p.Levels[i].MaxAge
		p.Levels[i].MaxSpan = 6 * time.Hour
	}
	p.TombstonesPerJob = 16
	p.TombstoneMaxLevel = 2
	c.Scheduler.LeaseDuration = 3 * time.Second
	c.Scheduler.AgingThreshold = []time.Duration{0, 4 * time.Second, 8 * time.Second}
	c.Index.CleanupDelay = 500 * time.Millisecond
	c.Index.ReaderTimeout = time.Minute
	return c
}

// FSMOptions are the local state-machine settings of the examples: a
// released tombstone waits at most 300 ms for a compaction job before a
// cleanup-only job takes it.
func FSMOptions() []raftfsm.Option {
	return []raftfsm.Option{raftfsm.WithCleanupAfter(300 * time.Millisecond)}
}
