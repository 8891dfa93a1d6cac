package blockmerge

import (
	"context"
	"errors"
	"fmt"

	"github.com/compactkit/compactkit"
)

// DeleteTombstone deletes the objects a tombstone names: the block's
// object (compactkit.ObjectKey(target)) for a TombstoneBlock, every object
// under the prefix for a TombstonePrefix. It is idempotent: objects already
// gone are not an error, so a worker can retry it and report the tombstone
// confirmed once it returns nil. An invalid tombstone is refused with the
// error of its Validate.
func DeleteTombstone(ctx context.Context, store Store, t compactkit.Tombstone) error {
	if err := t.Validate(); err != nil {
		return fmt.Errorf("blockmerge: delete %s: %w", t, err)
	}
	var err error
	switch t.Kind {
	case compactkit.TombstoneBlock:
		err = store.Delete(ctx, compactkit.ObjectKey(t.Target))
	case compactkit.TombstonePrefix:
		err = store.DeleteByPrefix(ctx, t.Target)
	}
	if err != nil {
		return fmt.Errorf("blockmerge: delete %s: %w", t, err)
	}
	return nil
}

// DeleteTombstones deletes the objects of every tombstone (see
// [DeleteTombstone]), carrying on past failures, and returns the
// tombstones whose deletion succeeded, in order — those a worker reports
// as confirmed — with the failures joined into one error.
func DeleteTombstones(ctx context.Context, store Store, ts []compactkit.Tombstone) ([]compactkit.Tombstone, error) {
	var (
		done []compactkit.Tombstone
		errs []error
	)
	for _, t := range ts {
		if err := DeleteTombstone(ctx, store, t); err != nil {
			errs = append(errs, err)
			continue
		}
		done = append(done, t)
	}
	return done, errors.Join(errs...)
}
