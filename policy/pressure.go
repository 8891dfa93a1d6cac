package policy

import (
	"fmt"

	"github.com/compactkit/compactkit/internal/enum"
)

// Grade is a backpressure grade: what a host's ingest should do for a
// tenant (or shard).
type Grade uint8

// The grades, from none to most.
const (
	// OK: ingest as usual.
	OK Grade = iota
	// Slow: compaction is falling behind; ingest should slow down (flush
	// larger blocks less often, delay optional work).
	Slow
	// Stop: the backlog is past what compaction can absorb; ingest should
	// hold back what it can. The grade advises: blocks added anyway are
	// still queued.
	Stop
)

// String returns "ok", "slow" or "stop".
func (g Grade) String() string {
	return enum.Name("Grade", g, OK, "ok", "slow", "stop")
}

// Limit is one measure's threshold with hysteresis: the grade is entered
// when the measure reaches On and kept until the measure falls below Off.
// On 0 disables the limit.
type Limit struct {
	On, Off int64
}

// Thresholds grade a load. Each grade has a limit on the queue depth in
// blocks and one on the compaction debt in ready batches (jobs that could
// be planned now: compare them with the fleet's free slots); either
// reaching its On enters the grade. The zero value never grades above OK.
type Thresholds struct {
	SlowBlocks, StopBlocks             Limit
	SlowReadyBatches, StopReadyBatches Limit
}

// Load is what [Thresholds] grade: a tenant's (or shard's) queued blocks
// and its compaction debt in ready batches: per key whose head batch is
// ready (full, or old enough), that batch plus one per further full batch
// queued (planner.LevelStats.ReadyBatches).
type Load struct {
	Blocks       int64
	ReadyBatches int64
}

// validate reports whether th is usable: every limit with 0 ≤ Off ≤ On
// (Off 0 when On is 0), and each Stop limit, when set, at or above the
// matching Slow limit. The error wraps [ErrInvalid].
func (th Thresholds) validate() error {
	for _, l := range []struct {
		name string
		l    Limit
	}{{"slow blocks", th.SlowBlocks}, {"stop blocks", th.StopBlocks}, {"slow ready batches", th.SlowReadyBatches}, {"stop ready batches", th.StopReadyBatches}} {
		if l.l.On < 0 || l.l.Off < 0 || l.l.Off > l.l.On {
			return fmt.Errorf("policy: thresholds: %s: on %d, off %d: want 0 ≤ off ≤ on: %w", l.name, l.l.On, l.l.Off, ErrInvalid)
		}
	}
	for _, p := range []struct {
		name       string
		slow, stop Limit
	}{{"blocks", th.SlowBlocks, th.StopBlocks}, {"ready batches", th.SlowReadyBatches, th.StopReadyBatches}} {
		if p.slow.On > 0 && p.stop.On > 0 && (p.stop.On < p.slow.On || p.stop.Off < p.slow.Off) {
			return fmt.Errorf("policy: thresholds: %s: stop (on %d, off %d) below slow (on %d, off %d): %w",
				p.name, p.stop.On, p.stop.Off, p.slow.On, p.slow.Off, ErrInvalid)
		}
	}
	return nil
}

// reached reports whether v reaches lim's On (entering) or, for a grade
// already held, stays at or above its Off.
func reached(lim Limit, v int64, held bool) bool {
	if lim.On == 0 {
		return false
	}
	if held {
		return v >= lim.Off
	}
	return v >= lim.On
}

// Next returns the grade that follows prev under load l. A grade is
// entered when a measure reaches its On threshold and kept while any
// measure stays at or above its Off threshold. windowHeld says that a run
// window is what holds the tenant's work back; then the grade goes no
// higher than Slow — a closed window alone never stops ingest.
func (th Thresholds) Next(prev Grade, l Load, windowHeld bool) Grade {
	g := OK
	switch {
	case reached(th.StopBlocks, l.Blocks, prev == Stop) || reached(th.StopReadyBatches, l.ReadyBatches, prev == Stop):
		g = Stop
	case reached(th.SlowBlocks, l.Blocks, prev >= Slow) || reached(th.SlowReadyBatches, l.ReadyBatches, prev >= Slow):
		g = Slow
	}
	if windowHeld && g == Stop {
		g = Slow
	}
	return g
}
