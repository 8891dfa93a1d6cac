package planner

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Bounds on the configuration, stated in the fields' documentation. They
// keep job plans within the codec's message limits and the per-level
// tables small.
const (
	// maxLevels bounds Config.FinalLevel.
	maxLevels = 64
	// maxBlocksPerJob bounds LevelConfig.MaxBlocks: a plan of that many
	// sources of maximal ID length still fits one command.
	maxBlocksPerJob = 4096
	// maxTombstonesPerJob bounds Config.TombstonesPerJob.
	maxTombstonesPerJob = 1024
)

// LevelConfig is the batching policy of one compaction level.
//
// A batch is formed from the oldest queued blocks of a key: blocks are
// taken in arrival order until MaxBlocks are taken, or the next block would
// push the batch beyond MaxBytes or MaxSpan (the remainder stays queued, in
// order). The first block is always taken, so a single block larger than
// the limits still forms a batch. A batch is ready when it is full (it
// reached MaxBlocks or MaxBytes, or it was cut by MaxBytes or MaxSpan), or
// when its oldest block has waited longer than MaxAge at the planning time.
type LevelConfig struct {
	// MaxBlocks is the maximum number of sources of a job, 1 to
	// 4096.
	MaxBlocks int
	// MaxBytes is the maximum total size of a job's sources; 0 means
	// unlimited.
	MaxBytes int64
	// MaxAge is how long the oldest block of a batch may wait before the
	// batch is planned although it is not full; 0 means never: only full
	// batches are planned.
	MaxAge time.Duration
	// MaxSpan is the maximum time span of a job's sources (the latest
	// MaxTime minus the earliest MinTime); 0 means unlimited.
	MaxSpan time.Duration
	// AgingThreshold: a batch that has been ready for longer than this
	// competes as if it were level 0, at rank 0 (see [Terms]),
	// so that higher levels are never starved by a busy level 0 and
	// tenants of high ranks never by those of lower ranks. At level 0 it
	// lifts only the rank. 0 disables aging.
	AgingThreshold time.Duration
	// CrossShard leaves the shard out of the compaction key: a tenant's
	// blocks of this level are compacted across shards, and the plans carry
	// [compactkit.AnyShard].
	CrossShard bool
}

// Config is the planner's replicated configuration. The state machine
// changes it only by applying a config command (see [Planner.SetConfig]).
type Config struct {
	// Levels holds the policy of each level below the final level:
	// Levels[l] is level l's. It has exactly FinalLevel entries.
	Levels []LevelConfig
	// FinalLevel is the first level that is not compacted further: blocks
	// at or beyond it are never queued. 1 to 64.
	FinalLevel uint32
	// TombstonesPerJob is the maximum number of tombstones attached to one
	// job, 0 to 1024; 0 attaches none.
	TombstonesPerJob int
	// TombstoneMinLevel and TombstoneMaxLevel bound the levels of the jobs
	// that carry tombstones (inclusive).
	TombstoneMinLevel, TombstoneMaxLevel uint32
}

// DefaultConfig returns Pyroscope's values: level 0 batches of 20 blocks
// or 36 s, level 1 of 10 blocks or 12 min, level 2 of 10 blocks or 3 h,
// final level 3; no byte limit; a maximum span of 3 h per job; an aging
// threshold of four times the level's max age; shard-keyed levels; at most
// 2 tombstones per job, on jobs of levels 0 and 1.
func DefaultConfig() Config {
	level := func(blocks int, age time.Duration) LevelConfig {
		return LevelConfig{MaxBlocks: blocks, MaxAge: age, MaxSpan: 3 * time.Hour, AgingThreshold: 4 * age}
	}
	return Config{
		Levels: []LevelConfig{
			level(20, 36*time.Second),
			level(10, 12*time.Minute),
			level(10, 3*time.Hour),
		},
		FinalLevel:        3,
		TombstonesPerJob:  2,
		TombstoneMinLevel: 0,
		TombstoneMaxLevel: 1,
	}
}

// Validate reports whether c is usable; the error wraps [ErrInvalidConfig].
func (c Config) Validate() error {
	if c.FinalLevel < 1 || c.FinalLevel > maxLevels {
		return fmt.Errorf("final level %d, want 1 to %d: %w", c.FinalLevel, maxLevels, ErrInvalidConfig)
	}
	if len(c.Levels) != int(c.FinalLevel) {
		return fmt.Errorf("%d level policies for final level %d, want one per level below it: %w", len(c.Levels), c.FinalLevel, ErrInvalidConfig)
	}
	for i, l := range c.Levels {
		switch {
		case l.MaxBlocks < 1 || l.MaxBlocks > maxBlocksPerJob:
			return fmt.Errorf("level %d: max blocks %d, want 1 to %d: %w", i, l.MaxBlocks, maxBlocksPerJob, ErrInvalidConfig)
		case l.MaxBytes < 0:
			return fmt.Errorf("level %d: max bytes %d: %w", i, l.MaxBytes, ErrInvalidConfig)
		case l.MaxAge < 0:
			return fmt.Errorf("level %d: max age %s: %w", i, l.MaxAge, ErrInvalidConfig)
		case l.MaxSpan < 0:
			return fmt.Errorf("level %d: max span %s: %w", i, l.MaxSpan, ErrInvalidConfig)
		case l.AgingThreshold < 0:
			return fmt.Errorf("level %d: aging threshold %s: %w", i, l.AgingThreshold, ErrInvalidConfig)
		}
	}
	if c.TombstonesPerJob < 0 || c.TombstonesPerJob > maxTombstonesPerJob {
		return fmt.Errorf("tombstones per job %d, want 0 to %d: %w", c.TombstonesPerJob, maxTombstonesPerJob, ErrInvalidConfig)
	}
	if c.TombstoneMinLevel > c.TombstoneMaxLevel {
		return fmt.Errorf("tombstone levels [%d, %d]: %w", c.TombstoneMinLevel, c.TombstoneMaxLevel, ErrInvalidConfig)
	}
	return nil
}

// clone returns a deep copy, so that a configuration held by a view is
// never changed by the caller or by a later SetConfig.
func (c Config) clone() Config {
	c.Levels = slices.Clone(c.Levels)
	return c
}

// tombstoneLevel reports whether jobs of the level carry tombstones.
func (c *Config) tombstoneLevel(level uint32) bool {
	return c.TombstonesPerJob > 0 && level >= c.TombstoneMinLevel && level <= c.TombstoneMaxLevel
}

// level returns the policy of a level below the final level.
func (c *Config) level(l uint32) *LevelConfig { return &c.Levels[l] }

// SetConfig replaces the configuration; the state machine calls it when it
// applies a config command. Every queued block stays queued; batches are
// formed under the new policy from now on. Keys keep their shape: after
// CrossShard changes for a level, the blocks queued under the former shape
// stay in their keys and are planned there until drained, while new blocks
// are queued under the new shape.
//
// Lowering the final level below a level that still holds queued, claimed
// or quarantined blocks is refused (ErrInvalidConfig): those blocks would be
// stranded. An invalid configuration is refused too; on error nothing
// changes.
func (p *Planner) SetConfig(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("planner: %w", err)
	}
	if cfg.FinalLevel < p.s.cfg.FinalLevel {
		if l, ok := p.s.highestLevel(); ok && l >= cfg.FinalLevel {
			return fmt.Errorf("planner: final level %d: level %d still holds blocks: %w", cfg.FinalLevel, l, ErrInvalidConfig)
		}
	}
	p.s.cfg = cfg.clone()
	p.s.reconfigureLevels()
	var qs []*queue
	p.s.keys.Ascend(func(q *queue) bool {
		qs = append(qs, q)
		return true
	})
	p.s.full.Mut(p.s.vmu).Clear(false)
	p.s.timed.Mut(p.s.vmu).Clear(false)
	p.s.aging.Mut(p.s.vmu).Clear(false)
	p.s.nextRipe, p.s.agedN = math.MaxInt64, 0
	for _, q := range qs {
		q = p.own(q)
		q.head = formBatch(q, 0, p.s.levelOf(q.k.tenant, q.k.level))
		p.s.indexHead(q.k, &q.head, true)
	}
	return nil
}

// highestLevel returns the highest level that holds queued, claimed or
// quarantined blocks.
func (s *state) highestLevel() (uint32, bool) {
	var l uint32
	found := false
	see := func(k key) {
		if !found || k.level > l {
			l, found = k.level, true
		}
	}
	s.keys.Ascend(func(q *queue) bool { see(q.k); return true })
	s.claims.Ascend(func(c *claim) bool { see(c.k); return true })
	s.quar.Ascend(func(qe *quarEnt) bool { see(qe.k); return true })
	return l, found
}
