package compactkit

import (
	"fmt"
	"slices"

	"github.com/compactkit/compactkit/internal/dups"
	"github.com/compactkit/compactkit/internal/ident"
)

// BlockMeta describes one immutable block in the object store.
//
// A block belongs to one tenant, shard and compaction level and covers a
// time range. Ingest writes level-0 blocks (segments); each compaction
// writes blocks one level up. A level-0 segment may hold datasets of several
// tenants: its Tenant is then empty and each dataset names its own tenant.
// All times are unix nanoseconds.
type BlockMeta struct {
	_ struct{} `cbor:",toarray"`
	// ID identifies the block; its object is stored at ObjectKey(ID). IDs
	// are relative object paths: 1 to 512 bytes of valid UTF-8 without
	// control characters or backslashes, in '/'-separated segments none of
	// which is empty, "." or "..".
	ID string
	// Tenant owns the block; empty for a level-0 segment that holds
	// datasets of several tenants.
	Tenant string
	// Shard is the shard the block was written for.
	Shard uint32
	// Level is the compaction level: 0 for ingested segments.
	Level uint32
	// MinTime and MaxTime bound the timestamps of the block's data
	// (inclusive).
	MinTime int64
	MaxTime int64
	// Size is the size of the block's object in bytes.
	Size int64
	// Datasets are the block's datasets, each with its own tenant, name and
	// statistics. No two datasets share (tenant, name).
	Datasets []DatasetMeta
}

// DatasetMeta describes one dataset inside a block: the data of one tenant
// and one name (in Pyroscope, one service) with its statistics.
type DatasetMeta struct {
	_ struct{} `cbor:",toarray"`
	// Tenant owns the dataset. In a single-tenant block it may be left
	// empty, meaning the block's tenant.
	Tenant string
	// Name identifies the dataset within its tenant.
	Name string
	// Size is the dataset's size in bytes.
	Size int64
	// Records is the number of records in the dataset.
	Records int64
	// MinTime and MaxTime bound the dataset's timestamps (inclusive).
	MinTime int64
	MaxTime int64
}

// DatasetTenant returns the tenant of d within block b: the dataset's own
// tenant, or the block's when the dataset leaves it empty.
func (b *BlockMeta) DatasetTenant(d *DatasetMeta) string {
	if d.Tenant != "" {
		return d.Tenant
	}
	return b.Tenant
}

// Tenants returns the distinct tenants whose data the block holds, in
// sorted order.
func (b *BlockMeta) Tenants() []string {
	if b.Tenant != "" {
		return []string{b.Tenant}
	}
	var ts []string
	for i := range b.Datasets {
		t := b.Datasets[i].Tenant
		if !slices.Contains(ts, t) {
			ts = append(ts, t)
		}
	}
	slices.Sort(ts)
	return ts
}

// Records returns the total number of records in the block's datasets.
func (b *BlockMeta) Records() int64 {
	var n int64
	for i := range b.Datasets {
		n += b.Datasets[i].Records
	}
	return n
}

// Clone returns a deep copy of b.
func (b *BlockMeta) Clone() BlockMeta {
	c := *b
	c.Datasets = append([]DatasetMeta(nil), b.Datasets...)
	return c
}

// Validate reports whether b is well-formed: a valid ID, a time range with
// MinTime ≤ MaxTime, non-negative sizes, datasets inside the block's time
// range with distinct (tenant, name), and — for a block without a tenant —
// at least one dataset, each naming its tenant.
func (b *BlockMeta) Validate() error {
	if err := ident.ValidateID(b.ID); err != nil {
		return fmt.Errorf("block: %w", err)
	}
	if err := ident.ValidateName("tenant", b.Tenant, true); err != nil {
		return fmt.Errorf("block %s: %w", b.ID, err)
	}
	if b.MinTime > b.MaxTime {
		return fmt.Errorf("block %s: min time %d after max time %d: %w", b.ID, b.MinTime, b.MaxTime, ident.ErrTimeRange)
	}
	if b.Size < 0 {
		return fmt.Errorf("block %s: size %d: %w", b.ID, b.Size, ident.ErrNegative)
	}
	if b.Tenant == "" && len(b.Datasets) == 0 {
		return fmt.Errorf("block %s: no tenant and no datasets: %w", b.ID, ident.ErrInconsistent)
	}
	type dsKey struct{ tenant, name string }
	var seen dups.Tracker[dsKey]
	for i := range b.Datasets {
		d := &b.Datasets[i]
		if err := b.validateDataset(d); err != nil {
			return err
		}
		if seen.Seen(dsKey{b.DatasetTenant(d), d.Name}) {
			return fmt.Errorf("block %s: dataset %s/%s appears twice: %w", b.ID, b.DatasetTenant(d), d.Name, ident.ErrInconsistent)
		}
	}
	return nil
}

func (b *BlockMeta) validateDataset(d *DatasetMeta) error {
	// The context is built only on error: validation runs for every block
	// ingested, and most blocks are valid.
	if err := ident.ValidateName("name", d.Name, false); err != nil {
		return fmt.Errorf("block %s: dataset %s: %w", b.ID, d.Name, err)
	}
	if err := ident.ValidateName("tenant", d.Tenant, true); err != nil {
		return fmt.Errorf("block %s: dataset %s: %w", b.ID, d.Name, err)
	}
	if err := b.checkDataset(d); err != nil {
		return fmt.Errorf("block %s: dataset %s: %w", b.ID, d.Name, err)
	}
	return nil
}

func (b *BlockMeta) checkDataset(d *DatasetMeta) error {
	switch {
	case b.Tenant == "" && d.Tenant == "":
		return fmt.Errorf("no tenant in a multi-tenant block: %w", ident.ErrInconsistent)
	case b.Tenant != "" && d.Tenant != "" && d.Tenant != b.Tenant:
		return fmt.Errorf("tenant %q in a block of tenant %q: %w", d.Tenant, b.Tenant, ident.ErrInconsistent)
	case d.Size < 0:
		return fmt.Errorf("size %d: %w", d.Size, ident.ErrNegative)
	case d.Records < 0:
		return fmt.Errorf("records %d: %w", d.Records, ident.ErrNegative)
	case d.MinTime > d.MaxTime:
		return fmt.Errorf("min time %d after max time %d: %w", d.MinTime, d.MaxTime, ident.ErrTimeRange)
	case d.MinTime < b.MinTime || d.MaxTime > b.MaxTime:
		return fmt.Errorf("range [%d, %d] outside the block's [%d, %d]: %w", d.MinTime, d.MaxTime, b.MinTime, b.MaxTime, ident.ErrTimeRange)
	}
	return nil
}
