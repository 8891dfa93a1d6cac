package blockmerge

import (
	"context"
	"errors"
	"fmt"

	"github.com/compactkit/compactkit"
)

// Layout says which objects make up a block in the store. Whatever the
// layout, every object of the block with ID id lies under
// compactkit.ObjectKey(id), so the objects of an attempt's outputs lie
// under its compactkit.AttemptPrefix and an orphaned attempt is deleted
// whole by its prefix tombstone.
type Layout uint8

// The layouts.
const (
	// ObjectLayout: a block is the one object compactkit.ObjectKey(id), as
	// blockmerge writes it. The default.
	ObjectLayout Layout = iota
	// PrefixLayout: a block is every object under
	// compactkit.ObjectKey(id) + "/" — for formats that write several
	// objects per block (a TSDB directory, Parquet files and an index).
	PrefixLayout
)

// deleteBlock deletes the objects of the block with the given ID. Deleting
// a block that is already gone is not an error.
func (l Layout) deleteBlock(ctx context.Context, store Store, id string) error {
	switch l {
	case ObjectLayout:
		return store.Delete(ctx, compactkit.ObjectKey(id))
	case PrefixLayout:
		return store.DeleteByPrefix(ctx, compactkit.ObjectKey(id)+"/")
	default:
		return fmt.Errorf("blockmerge: delete block %s: layout %d: %w", id, uint8(l), ErrInvalidKey)
	}
}

// deleteTombstone deletes the objects of one tombstone (see
// [Layout.DeleteTombstones]).
func (l Layout) deleteTombstone(ctx context.Context, store Store, t compactkit.Tombstone) error {
	if err := t.Validate(); err != nil {
		return fmt.Errorf("blockmerge: delete %s: %w", t, err)
	}
	var err error
	switch t.Kind {
	case compactkit.TombstoneBlock:
		err = l.deleteBlock(ctx, store, t.Target)
	case compactkit.TombstonePrefix:
		err = store.DeleteByPrefix(ctx, t.Target)
	}
	if err != nil {
		return fmt.Errorf("blockmerge: delete %s: %w", t, err)
	}
	return nil
}

// DeleteTombstones deletes the objects the tombstones name: the block's
// objects in this layout for a TombstoneBlock, every object under the
// prefix for a TombstonePrefix. It carries on past failures and returns
// the tombstones whose deletion succeeded, in order — those a worker
// reports as confirmed — with the failures joined into one error. It is
// idempotent: objects already gone are not an error, so a worker can retry
// it. An invalid tombstone fails with the error of its Validate.
func (l Layout) DeleteTombstones(ctx context.Context, store Store, ts []compactkit.Tombstone) ([]compactkit.Tombstone, error) {
	var (
		done []compactkit.Tombstone
		errs []error
	)
	for _, t := range ts {
		if err := l.deleteTombstone(ctx, store, t); err != nil {
			errs = append(errs, err)
			continue
		}
		done = append(done, t)
	}
	return done, errors.Join(errs...)
}
