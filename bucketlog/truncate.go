package bucketlog

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/compactkit/compactkit/blockmerge"
)

// The low-water mark is a set of marker objects
// <prefix>/lowwater/<k·markStep, 20 digits>, created if absent, one for
// every multiple of markStep up to the mark D: entries at or below D may
// be deleted, and D is always a multiple of markStep. It only grows (two
// truncations at once create markers, never remove one). Whether entry n
// may have been deleted is one existence check: the marker at the first
// multiple of markStep at or above n exists exactly when D ≥ n.
const markStep = 64

func (l *Log) markKey(c uint64) string { return fmt.Sprintf("%s/lowwater/%020d", l.prefix, c) }

// truncated reports whether entry n is at or below the low-water mark.
// A check that found n above the mark is remembered (clear, clearAt):
// an append right after a catch-up that found its entry missing need not
// check again.
func (l *Log) truncated(ctx context.Context, n uint64) (bool, error) {
	at := time.Now()
	ok, err := l.store.Exists(ctx, l.markKey((n+markStep-1)/markStep*markStep))
	if err != nil {
		return false, fmt.Errorf("bucketlog: low-water mark: %w", err)
	}
	if !ok {
		l.clear, l.clearAt = n, at
	}
	return ok, nil
}

// checkedClear returns when entry n was last found above the mark, if
// that was recently enough for an append to rely on it: within a tenth of
// the grace (with no grace, never).
func (l *Log) checkedClear(n uint64) (time.Time, bool) {
	if l.clear != n || l.grace == 0 || time.Since(l.clearAt) >= l.grace/10 {
		return time.Time{}, false
	}
	return l.clearAt, true
}

// indexes lists the indexes that name the objects under <prefix>/<dir>/
// (entries, checkpoints, low-water markers), lowest first; a key that is
// no index is skipped.
func (l *Log) indexes(ctx context.Context, dir string) ([]uint64, error) {
	var ns []uint64
	p := l.prefix + "/" + dir + "/"
	err := l.store.List(ctx, p, func(k string) error {
		if n, err := strconv.ParseUint(strings.TrimPrefix(k, p), 10, 64); err == nil {
			ns = append(ns, n)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("bucketlog: list %s: %w", p, err)
	}
	slices.Sort(ns)
	return ns, nil
}

// defaultTruncateGrace is the default time between raising the low-water
// mark over an entry and deleting it ([WithTruncateGrace]).
const defaultTruncateGrace = time.Minute

// Truncate raises the low-water mark to the newest checkpoint, rounded
// down to a multiple of 64, deletes the checkpoints older than the newest,
// and deletes the entries at or below the part of the mark raised at least
// the grace period ago ([WithTruncateGrace], by the truncating
// coordinator's clock; call it periodically, and each call deletes what
// the previous ones marked). The grace period covers a coordinator between
// its check of the mark and its create of the next entry, and a reader
// between reading an entry and its time: one that finds its entry gone
// below the mark restores the newest checkpoint instead, and one that
// created an entry below the mark after a stall longer than half the grace
// deletes it again and restores. It returns the new mark (0: no checkpoint
// yet, nothing truncated).
func (l *Log) Truncate(ctx context.Context) (uint64, error) {
	cps, err := l.indexes(ctx, "checkpoint")
	if err != nil {
		return 0, fmt.Errorf("bucketlog: truncate: %w", err)
	}
	if len(cps) == 0 {
		return 0, nil
	}
	c := cps[len(cps)-1] / markStep * markStep
	if c == 0 {
		return 0, nil
	}
	marks, err := l.indexes(ctx, "lowwater")
	if err != nil {
		return 0, fmt.Errorf("bucketlog: low-water mark: %w", err)
	}
	var prev uint64
	if len(marks) > 0 {
		prev = marks[len(marks)-1]
	}
	// Markers first, lowest first, every one up to c: the existence check
	// of any deleted entry finds one. Each holds the time it was raised.
	now := l.clock()
	stamp := binary.BigEndian.AppendUint64(nil, uint64(now.UnixNano()))
	for m := prev + markStep; m <= c; m += markStep {
		if err := l.cond.PutIfAbsent(ctx, l.markKey(m), bytes.NewReader(stamp)); err != nil && !errors.Is(err, blockmerge.ErrExists) {
			return 0, fmt.Errorf("bucketlog: truncate: raise the mark to %d: %w", m, err)
		}
		marks = append(marks, m)
	}
	for _, cp := range cps[:len(cps)-1] {
		if err := l.store.Delete(ctx, l.checkpointKey(cp)); err != nil {
			return c, fmt.Errorf("bucketlog: truncate: %w", err)
		}
	}
	// The deletion bound: the highest marker raised the grace ago.
	var d uint64
	for i := len(marks) - 1; i >= 0 && d == 0; i-- {
		at, err := l.markTime(ctx, marks[i])
		if err != nil {
			return c, fmt.Errorf("bucketlog: truncate: %w", err)
		}
		if now.Sub(at) >= l.grace {
			d = marks[i]
		}
	}
	entries, err := l.indexes(ctx, "log")
	if err != nil {
		return c, fmt.Errorf("bucketlog: truncate: %w", err)
	}
	deleted := 0
	for _, n := range entries {
		if n > d {
			break
		}
		if err := l.store.Delete(ctx, l.entryKey(n)); err != nil {
			return c, fmt.Errorf("bucketlog: truncate: %w", err)
		}
		deleted++
	}
	l.log.Info("bucketlog: truncated", "mark", c, "deleted_through", d, "entries_deleted", deleted)
	return c, nil
}

// markTime is when marker m was raised: the time in its body (none in a
// marker written before markers were timed: long ago).
func (l *Log) markTime(ctx context.Context, m uint64) (time.Time, error) {
	data, err := l.read(ctx, l.markKey(m))
	if err != nil || len(data) != 8 {
		return time.Time{}, err
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(data))), nil
}

// behindMark handles entry n missing: if the low-water mark has reached
// it, the entries this replica needs were truncated, and it restores the
// newest checkpoint (at or above the mark). It reports whether it
// restored.
func (l *Log) behindMark(ctx context.Context, n uint64) (bool, error) {
	if behind, err := l.truncated(ctx, n); err != nil || !behind {
		return false, err
	}
	cps, err := l.indexes(ctx, "checkpoint")
	if err != nil {
		return false, err
	}
	var (
		c    uint64
		data []byte
	)
	if len(cps) > 0 {
		c = cps[len(cps)-1]
		if data, err = l.read(ctx, l.checkpointKey(c)); err != nil {
			return false, err
		}
	}
	if data == nil || c < n {
		l.failed = fmt.Errorf("bucketlog: entry %d is below the low-water mark and no checkpoint covers it: %w", n, ErrCorrupt)
		return false, l.failed
	}
	if err := l.restoreFrom(c, data); err != nil {
		l.failed = fmt.Errorf("bucketlog: checkpoint %d at the low-water mark: %w", c, err)
		return false, l.failed
	}
	l.log.Warn("bucketlog: this replica was behind the low-water mark: restored its checkpoint", "entry", n, "mark", c)
	return true, nil
}
