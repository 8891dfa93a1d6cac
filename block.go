package compactkit

import (
	"fmt"
	"github.com/compactkit/compactkit/internal/dups"
	"slices"
	"strings"
	"unicode/utf8"
)

// Limits on identifiers. They keep keys, snapshots and object names bounded.
const (
	// MaxIDLen is the maximum length in bytes of a block ID.
	MaxIDLen = 512
	// MaxNameLen is the maximum length in bytes of a job name, worker ID,
	// tenant or dataset name.
	MaxNameLen = 256
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
	// are relative object paths: see [ValidateID].
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
	if err := ValidateID(b.ID); err != nil {
		return fmt.Errorf("block: %w", err)
	}
	if err := validateName("block "+b.ID+": tenant", b.Tenant, true); err != nil {
		return err
	}
	if b.MinTime > b.MaxTime {
		return fmt.Errorf("block %s: min time %d after max time %d: %w", b.ID, b.MinTime, b.MaxTime, ErrTimeRange)
	}
	if b.Size < 0 {
		return fmt.Errorf("block %s: size %d: %w", b.ID, b.Size, ErrNegative)
	}
	if b.Tenant == "" && len(b.Datasets) == 0 {
		return fmt.Errorf("block %s: no tenant and no datasets: %w", b.ID, ErrInconsistent)
	}
	type dsKey struct{ tenant, name string }
	var seen dups.Tracker[dsKey]
	for i := range b.Datasets {
		d := &b.Datasets[i]
		if err := b.validateDataset(d); err != nil {
			return err
		}
		if seen.Seen(dsKey{b.DatasetTenant(d), d.Name}) {
			return fmt.Errorf("block %s: dataset %s/%s appears twice: %w", b.ID, b.DatasetTenant(d), d.Name, ErrInconsistent)
		}
	}
	return nil
}

func (b *BlockMeta) validateDataset(d *DatasetMeta) error {
	// The context is built only on error: validation runs for every block
	// ingested, and most blocks are valid.
	if err := validateName("name", d.Name, false); err != nil {
		return fmt.Errorf("block %s: dataset %s: %w", b.ID, d.Name, err)
	}
	if err := validateName("tenant", d.Tenant, true); err != nil {
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
		return fmt.Errorf("no tenant in a multi-tenant block: %w", ErrInconsistent)
	case b.Tenant != "" && d.Tenant != "" && d.Tenant != b.Tenant:
		return fmt.Errorf("tenant %q in a block of tenant %q: %w", d.Tenant, b.Tenant, ErrInconsistent)
	case d.Size < 0:
		return fmt.Errorf("size %d: %w", d.Size, ErrNegative)
	case d.Records < 0:
		return fmt.Errorf("records %d: %w", d.Records, ErrNegative)
	case d.MinTime > d.MaxTime:
		return fmt.Errorf("min time %d after max time %d: %w", d.MinTime, d.MaxTime, ErrTimeRange)
	case d.MinTime < b.MinTime || d.MaxTime > b.MaxTime:
		return fmt.Errorf("range [%d, %d] outside the block's [%d, %d]: %w", d.MinTime, d.MaxTime, b.MinTime, b.MaxTime, ErrTimeRange)
	}
	return nil
}

// ValidateID reports whether id is a valid block ID. A block ID is a
// relative object path: 1 to [MaxIDLen] bytes of valid UTF-8 without
// control characters or backslashes, made of '/'-separated segments none of
// which is empty, "." or "..". IDs written by ingest are typically ULIDs;
// compaction outputs are named by [OutputID].
func ValidateID(id string) error {
	if plainID(id) {
		return nil
	}
	return validateID(id)
}

// plainID is the fast path of [ValidateID] for the common case, ASCII IDs:
// true means valid; false means "apply the full rules" (control or
// non-ASCII bytes, backslashes, or a segment that may be empty, "." or "..").
// It never accepts an ID the full rules refuse.
func plainID(id string) bool {
	if len(id) == 0 || len(id) > MaxIDLen {
		return false
	}
	// Eight bytes at a time while none of them needs a look of its own
	// (see ordinary8): they only lengthen the first segment.
	i := 0
	for i+8 <= len(id) && ordinary8(load8(id, i)) {
		i += 8
	}
	return plainFrom(id, i, i)
}

// plainFrom applies plainID's rules byte by byte to id from i, where the
// current segment has seg bytes before i, none of them a dot.
func plainFrom(id string, i, seg int) bool {
	dots := 0 // the dots of the current segment
	for ; i < len(id); i++ {
		c := id[i]
		switch {
		case c-0x20 >= 0x7f-0x20 || c == '\\':
			return false
		case c == '/':
			if seg == 0 || seg == dots && seg <= 2 {
				return false
			}
			seg, dots = 0, 0
			continue
		case c == '.':
			dots++
		}
		seg++
	}
	return seg != dots || seg > 2
}

// load8 returns the eight bytes of s from i, little-endian (one load).
func load8(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// SWAR constants: a byte's lowest bit, and its highest, in each byte.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// nonPrintable8 returns, in each byte's high bit, a mark for the bytes of
// w outside printable ASCII (0x20 to 0x7e) — exactly which bytes carry
// marks is not defined, but there is at least one if and only if some
// byte is outside. It tests the eight at once (SWAR): once no byte has its
// high bit set, a byte of w is below 0x20 exactly where w-0x20*ones
// borrows into a clear high bit, and equals 0x7f where w^0x7f*ones is zero.
func nonPrintable8(w uint64) uint64 {
	return w&highs | (w-0x20*ones)&^w&highs | zero8(w^0x7f*ones)
}

// zero8 marks, as nonPrintable8 does, the zero bytes of x when no byte of x
// has its high bit set.
func zero8(x uint64) uint64 { return (x - ones) &^ x & highs }

// ordinary8 reports whether the eight bytes of w are all printable ASCII
// and none is '\\', '/' or '.': bytes that plainID only counts.
func ordinary8(w uint64) bool {
	return nonPrintable8(w)|zero8(w^'\\'*ones)|zero8(w^'/'*ones)|zero8(w^'.'*ones) == 0
}

// validateID applies the full rules of [ValidateID].
func validateID(id string) error {
	if id == "" {
		return fmt.Errorf("block ID: %w", ErrEmptyID)
	}
	if len(id) > MaxIDLen {
		return fmt.Errorf("block ID of %d bytes, limit %d: %w", len(id), MaxIDLen, ErrInvalidID)
	}
	if !utf8.ValidString(id) || strings.ContainsFunc(id, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' }) {
		return fmt.Errorf("block ID %q: invalid characters: %w", id, ErrInvalidID)
	}
	for seg := range strings.SplitSeq(id, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("block ID %q: segment %q not allowed: %w", id, seg, ErrInvalidID)
		}
	}
	return nil
}

// validateName checks a tenant, dataset name or worker ID: at most
// MaxNameLen bytes of valid UTF-8 without control characters; empty only
// where allowed.
func validateName(what, s string, emptyOK bool) error {
	switch {
	case s == "" && !emptyOK:
		return fmt.Errorf("%s: %w", what, ErrEmptyID)
	case len(s) > MaxNameLen:
		return fmt.Errorf("%s: %d bytes, limit %d: %w", what, len(s), MaxNameLen, ErrInvalidID)
	case printableASCII(s):
		return nil
	case !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return fmt.Errorf("%s %q: invalid characters: %w", what, s, ErrInvalidID)
	}
	return nil
}

// printableASCII reports whether s has only printable ASCII bytes (0x20 to
// 0x7e): the fast path of validateName, for the common case.
func printableASCII(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if nonPrintable8(load8(s, i)) != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}

// ValidateTenant reports whether tenant is a valid tenant name: at most
// [MaxNameLen] bytes of valid UTF-8 without control characters. The empty
// tenant is valid (it keys multi-tenant level-0 segments).
func ValidateTenant(tenant string) error { return validateName("tenant", tenant, true) }

// ValidateWorkerID reports whether id is a valid worker ID: 1 to
// [MaxNameLen] bytes of valid UTF-8 without control characters.
func ValidateWorkerID(id string) error { return validateName("worker ID", id, false) }
