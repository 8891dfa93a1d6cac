package bucketlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/compactkit/compactkit/blockmerge"
)

// The low-water mark: objects <prefix>/lowwater/<C, 20 digits>, created
// if absent, the mark being the largest C. It only grows: two truncations
// at once create two objects, never lower one.

func (l *Log) markKey(c uint64) string { return fmt.Sprintf("%s/lowwater/%020d", l.prefix, c) }

// mark returns the low-water mark: entries at or below it may be deleted.
func (l *Log) mark(ctx context.Context) (uint64, error) {
	var c uint64
	err := l.store.List(ctx, l.prefix+"/lowwater/", func(k string) error {
		if v, err := strconv.ParseUint(strings.TrimPrefix(k, l.prefix+"/lowwater/"), 10, 64); err == nil {
			c = max(c, v)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("bucketlog: low-water mark: %w", err)
	}
	return c, nil
}

// Truncate raises the low-water mark to the newest checkpoint and deletes
// the entries at or below it and the older checkpoints. A coordinator that
// was paused behind the mark restores that checkpoint before it appends
// (see Propose), so it never re-creates a deleted index. Deletion happens
// only after the mark is written: run it with a delay after raising the
// mark if coordinators may read entries slowly (a reader that finds an
// entry gone below the mark restores the checkpoint too). It returns the
// new mark (0: no checkpoint yet, nothing truncated).
func (l *Log) Truncate(ctx context.Context) (uint64, error) {
	var cps []uint64
	if err := l.store.List(ctx, l.prefix+"/checkpoint/", func(k string) error {
		if v, err := strconv.ParseUint(strings.TrimPrefix(k, l.prefix+"/checkpoint/"), 10, 64); err == nil {
			cps = append(cps, v)
		}
		return nil
	}); err != nil {
		return 0, fmt.Errorf("bucketlog: truncate: %w", err)
	}
	if len(cps) == 0 {
		return 0, nil
	}
	c := cps[len(cps)-1] // listed in key order: the newest
	if err := l.cond.PutIfAbsent(ctx, l.markKey(c), bytes.NewReader(nil)); err != nil && !errors.Is(err, blockmerge.ErrExists) {
		return 0, fmt.Errorf("bucketlog: truncate: raise the mark to %d: %w", c, err)
	}
	for _, cp := range cps[:len(cps)-1] {
		if err := l.store.Delete(ctx, l.checkpointKey(cp)); err != nil {
			return c, fmt.Errorf("bucketlog: truncate: %w", err)
		}
	}
	var old []string
	if err := l.store.List(ctx, l.prefix+"/log/", func(k string) error {
		if v, err := strconv.ParseUint(strings.TrimPrefix(k, l.prefix+"/log/"), 10, 64); err == nil && v <= c {
			old = append(old, k)
		}
		return nil
	}); err != nil {
		return c, fmt.Errorf("bucketlog: truncate: %w", err)
	}
	for _, k := range old {
		if err := l.store.Delete(ctx, k); err != nil {
			return c, fmt.Errorf("bucketlog: truncate: %w", err)
		}
	}
	l.log.Info("bucketlog: truncated", "mark", c, "entries_deleted", len(old))
	return c, nil
}

// behindMark handles entry n missing: if the low-water mark has reached
// it, the entries this replica needs were truncated, and it restores the
// checkpoint at the mark. It reports whether it restored.
func (l *Log) behindMark(ctx context.Context, n uint64) (bool, error) {
	c, err := l.mark(ctx)
	if err != nil || c < n {
		return false, err
	}
	data, err := l.read(ctx, l.checkpointKey(c))
	if err != nil {
		return false, err
	}
	if data == nil {
		l.failed = fmt.Errorf("bucketlog: entry %d is below the low-water mark %d and the checkpoint at the mark is gone: %w", n, c, ErrCorrupt)
		return false, l.failed
	}
	if err := l.restoreFrom(c, data); err != nil {
		l.failed = fmt.Errorf("bucketlog: checkpoint %d at the low-water mark: %w", c, err)
		return false, l.failed
	}
	l.log.Warn("bucketlog: this replica was behind the low-water mark: restored its checkpoint", "entry", n, "mark", c)
	return true, nil
}
