package blockmerge

import (
	"bytes"
	"cmp"
	"slices"
)

// Record is one entry of a dataset: a key, a timestamp (unix nanoseconds)
// and a value. Datasets hold records in strictly increasing [Compare]
// order: by key, then timestamp, then value.
//
// A key holds at most 64 KiB and a value at most 16 MiB; a writer refuses
// a larger record with an error wrapping compactkit.ErrTooLarge.
//
// Records handed out by a [DatasetIterator] alias its buffers and are valid
// only until the iterator moves on; copy them (see [Record.Clone]) to keep
// them.
type Record struct {
	Key       []byte
	Timestamp int64
	Value     []byte
}

// Compare orders records by key (bytewise), then timestamp, then value
// (bytewise). It returns 0 only for identical records, which a merge
// collapses into one.
func Compare(a, b Record) int {
	if c := bytes.Compare(a.Key, b.Key); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Timestamp, b.Timestamp); c != 0 {
		return c
	}
	return bytes.Compare(a.Value, b.Value)
}

// Clone returns a copy of r that owns its bytes.
func (r Record) Clone() Record {
	return Record{Key: bytes.Clone(r.Key), Timestamp: r.Timestamp, Value: bytes.Clone(r.Value)}
}

// sortRecords sorts records in [Compare] order and removes identical
// duplicates, returning the shortened slice. It reorders recs in place.
func sortRecords(recs []Record) []Record {
	slices.SortFunc(recs, Compare)
	return slices.CompactFunc(recs, func(a, b Record) bool { return Compare(a, b) == 0 })
}
