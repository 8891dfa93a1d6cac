package index

import (
	"errors"
	"fmt"
	"time"

	"github.com/compactkit/compactkit/internal/ident"
)

// Sentinel errors of the package. Functions return them wrapped, with a
// message naming the offending value; test with errors.Is.
var (
	// ErrDuplicate reports a block that [Index.Add] refuses because its ID
	// is live, tombstoned, was deleted less than the deduplication horizon
	// ago, or lies under an orphaned attempt prefix.
	ErrDuplicate = errors.New("index: duplicate block")
	// ErrLiveUnderPrefix reports an orphan prefix that covers a live block:
	// tombstoning it would delete committed data.
	ErrLiveUnderPrefix = errors.New("index: live block under prefix")
)

// Config is the index's replicated configuration. It affects Apply, so it
// is part of the replicated state: change it only through [Index.SetConfig]
// when the state machine applies a configuration command. Every duration is
// measured in log time.
type Config struct {
	// DedupHorizon is how long after a block's deletion was confirmed its
	// ID is still refused by [Index.Add] (and by replacement outputs), so
	// that a delayed ingest retry cannot resurrect a deleted block. The
	// same horizon applies to confirmed orphan prefixes. Zero forgets a
	// deletion as soon as it is confirmed.
	DedupHorizon time.Duration
	// CleanupDelay is how long a tombstone waits after its creation before
	// it may be released, so that readers that listed the removed blocks
	// can finish. It also covers workers that outlive their leases: the
	// output prefix of an attempt that ends uncommitted is tombstoned, and
	// what a worker stalled past its lease writes there after the prefix's
	// deletion is left behind. So it must exceed the longest a worker may
	// run past its lease plus how far the leader's clock may gain on the
	// workers' clocks meanwhile.
	CleanupDelay time.Duration
	// CompletedRetention is how long the result of a replacement is
	// remembered, so that replaying the same (job, token) returns the same
	// result instead of acting again.
	CompletedRetention time.Duration
	// ReaderTimeout bounds how long a reader watermark can hold a
	// tombstone back: a tombstone created at time c is releasable from
	// c + ReaderTimeout (and its cleanup delay) whatever the watermark says.
	// Hosts must abort reads that run longer. Zero removes the bound: a
	// stale watermark then holds tombstones back until a newer watermark
	// arrives (the safe choice for hosts that cannot bound read times).
	// See [Index.SetWatermark].
	ReaderTimeout time.Duration
}

// DefaultConfig returns the default configuration: a 24 h deduplication
// horizon and result retention, a 15 min cleanup delay and a 1 h reader
// timeout.
func DefaultConfig() Config {
	return Config{
		DedupHorizon:       24 * time.Hour,
		CleanupDelay:       15 * time.Minute,
		CompletedRetention: 24 * time.Hour,
		ReaderTimeout:      time.Hour,
	}
}

// Validate reports whether c is usable: no duration may be negative (the
// error wraps [compactkit.ErrInvalid]).
func (c Config) Validate() error {
	for _, f := range []struct {
		name string
		d    time.Duration
	}{
		{"dedup horizon", c.DedupHorizon},
		{"cleanup delay", c.CleanupDelay},
		{"completed retention", c.CompletedRetention},
		{"reader timeout", c.ReaderTimeout},
	} {
		if f.d < 0 {
			return fmt.Errorf("index config: %s %v is negative: %w", f.name, f.d, ident.ErrNegative)
		}
	}
	return nil
}

// addSat returns t + d, saturating at the int64 bounds.
func addSat(t int64, d time.Duration) int64 {
	s := t + int64(d)
	switch {
	case d > 0 && s < t:
		return maxInt64
	case d < 0 && s > t:
		return minInt64
	}
	return s
}

const (
	maxInt64 = int64(^uint64(0) >> 1)
	minInt64 = -maxInt64 - 1
)
