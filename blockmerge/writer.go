package blockmerge

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/internal/codec"
)

// BlockInfo is what a block's writer is told up front; the rest of its
// metadata (time range, size, datasets) comes from what is written.
type BlockInfo struct {
	// ID is the block ID (see compactkit.ValidateID).
	ID string
	// Tenant owns the block; empty for a level-0 segment holding datasets
	// of several tenants.
	Tenant string
	// Shard and Level are the block's shard and compaction level.
	Shard uint32
	Level uint32
}

// blockWriter writes one block in format v1 to an [io.Writer], streaming: it
// holds one page of records at a time.
//
// Datasets are written one after the other in strictly increasing
// (tenant, name) order, each with its records in strictly increasing
// [Compare] order; Close writes the footer and returns the block's
// metadata. A dataset to which no record is appended is left out.
//
// Dataset tenants: in a single-tenant block (BlockInfo.Tenant set) the
// datasets' Tenant is stored empty, meaning the block's tenant; in a
// multi-tenant block every dataset names its tenant. The returned metadata
// follows the same rule.
//
// The first error (from the underlying writer, or a misuse) is sticky:
// every later call returns it; a call after Close, or on a dataset writer
// after the next dataset began, returns an error wrapping [os.ErrClosed].
// A blockWriter is not safe for concurrent use.
type blockWriter struct {
	w        io.Writer
	off      int64
	info     BlockInfo
	pageSize int
	metas    []compactkit.DatasetMeta
	sections []section
	cur      *DatasetWriter
	page     []byte // page buffer: header space, then payload
	err      error
	closed   bool
}

// newWriter writes the header of a block described by info to w and
// returns its writer. Of the options, only withPageSize applies.
func newWriter(w io.Writer, info BlockInfo, opts ...Option) (*blockWriter, error) {
	if err := compactkit.ValidateID(info.ID); err != nil {
		return nil, fmt.Errorf("blockmerge: new writer: %w", err)
	}
	if err := checkName("block "+info.ID+": tenant", info.Tenant, true); err != nil {
		return nil, err
	}
	o := buildOptions(opts)
	bw := &blockWriter{w: w, info: info, pageSize: o.pageSize}
	bw.write(appendHeader(make([]byte, 0, headerSize)))
	if bw.err != nil {
		return nil, bw.err
	}
	return bw, nil
}

func (w *blockWriter) write(p []byte) {
	if w.err != nil {
		return
	}
	n, err := w.w.Write(p)
	w.off += int64(n)
	if err != nil {
		w.err = fmt.Errorf("blockmerge: write block %s: %w", w.info.ID, err)
	}
}

// fail records a sticky error and returns it.
func (w *blockWriter) fail(err error) error {
	if w.err == nil {
		w.err = err
	}
	return w.err
}

// BeginDataset finishes the current dataset, if any, and starts the
// dataset (tenant, name), whose records are appended through the returned
// writer until the next BeginDataset or Close. In a single-tenant block
// tenant must be empty or the block's tenant; in a multi-tenant block it
// is required.
func (w *blockWriter) BeginDataset(tenant, name string) (*DatasetWriter, error) {
	if w.closed {
		return nil, fmt.Errorf("blockmerge: block %s: begin dataset %s/%s: %w", w.info.ID, tenant, name, os.ErrClosed)
	}
	if w.err != nil {
		return nil, w.err
	}
	w.finishDataset()
	if w.err != nil {
		return nil, w.err
	}
	if err := checkName("block "+w.info.ID+": dataset name", name, false); err != nil {
		return nil, w.fail(err)
	}
	if err := checkName("block "+w.info.ID+": dataset "+name+": tenant", tenant, true); err != nil {
		return nil, w.fail(err)
	}
	stored, resolved := tenant, tenant
	switch {
	case w.info.Tenant != "" && tenant != "" && tenant != w.info.Tenant:
		return nil, w.fail(fmt.Errorf("blockmerge: block %s of tenant %q: dataset %s of tenant %q: %w",
			w.info.ID, w.info.Tenant, name, tenant, compactkit.ErrInconsistent))
	case w.info.Tenant != "":
		stored, resolved = "", w.info.Tenant
	case tenant == "":
		return nil, w.fail(fmt.Errorf("blockmerge: block %s: dataset %s without a tenant in a multi-tenant block: %w",
			w.info.ID, name, compactkit.ErrInconsistent))
	}
	if n := len(w.metas); n > 0 {
		prev := &w.metas[n-1]
		pt := cmp.Or(prev.Tenant, w.info.Tenant)
		if datasetCompare(pt, prev.Name, resolved, name) >= 0 {
			return nil, w.fail(fmt.Errorf("blockmerge: block %s: dataset %s/%s after %s/%s: %w",
				w.info.ID, resolved, name, pt, prev.Name, ErrOutOfOrder))
		}
	}
	if w.page == nil {
		w.page = make([]byte, pageHeaderSize, pageOverhead+w.pageSize)
	}
	w.cur = &DatasetWriter{
		w:      w,
		tenant: stored,
		name:   name,
		offset: w.off,
		minT:   math.MaxInt64,
		maxT:   math.MinInt64,
	}
	return w.cur, nil
}

// finishDataset flushes the current dataset's last page and records its
// index entry (if it has records).
func (w *blockWriter) finishDataset() {
	d := w.cur
	if d == nil {
		return
	}
	w.cur = nil
	d.done = true
	d.flush()
	if w.err != nil || d.records == 0 {
		return
	}
	w.metas = append(w.metas, compactkit.DatasetMeta{
		Tenant:  d.tenant,
		Name:    d.name,
		Size:    w.off - d.offset,
		Records: d.records,
		MinTime: d.minT,
		MaxTime: d.maxT,
	})
	w.sections = append(w.sections, section{Offset: d.offset, CRC: d.crc})
}

// Close finishes the last dataset, writes the footer and trailer, and
// returns the block's metadata (Size is the total number of bytes
// written). It does not close the underlying writer.
func (w *blockWriter) Close() (compactkit.BlockMeta, error) {
	if w.closed {
		return compactkit.BlockMeta{}, fmt.Errorf("blockmerge: close block %s: %w", w.info.ID, os.ErrClosed)
	}
	w.finishDataset()
	w.closed = true
	if w.err != nil {
		return compactkit.BlockMeta{}, w.err
	}
	meta := compactkit.BlockMeta{
		ID:       w.info.ID,
		Tenant:   w.info.Tenant,
		Shard:    w.info.Shard,
		Level:    w.info.Level,
		Datasets: w.metas,
	}
	for i, d := range w.metas {
		if i == 0 || d.MinTime < meta.MinTime {
			meta.MinTime = d.MinTime
		}
		if i == 0 || d.MaxTime > meta.MaxTime {
			meta.MaxTime = d.MaxTime
		}
	}
	if meta.Datasets == nil {
		meta.Datasets = []compactkit.DatasetMeta{}
	}
	if err := meta.Validate(); err != nil {
		return compactkit.BlockMeta{}, w.fail(fmt.Errorf("blockmerge: close block %s: %w", w.info.ID, err))
	}
	// The footer records the size of the whole object, footer included:
	// iterate to the fixed point (the encoded length only grows with the
	// size, so this converges in a few steps).
	f := footer{Block: meta, Sections: w.sections}
	var fb []byte
	f.Block.Size = w.off + trailerSize
	for i := 0; ; i++ {
		var err error
		fb, err = codec.Default.Marshal(&f)
		if err != nil {
			return compactkit.BlockMeta{}, w.fail(fmt.Errorf("blockmerge: close block %s: footer: %w", w.info.ID, err))
		}
		size := w.off + int64(len(fb)) + trailerSize
		if size == f.Block.Size {
			break
		}
		if i == 8 {
			return compactkit.BlockMeta{}, w.fail(fmt.Errorf("blockmerge: close block %s: footer size does not converge", w.info.ID))
		}
		f.Block.Size = size
	}
	if len(fb) > maxFooterSize {
		return compactkit.BlockMeta{}, w.fail(fmt.Errorf("blockmerge: close block %s: footer of %d bytes, limit %d: %w",
			w.info.ID, len(fb), maxFooterSize, compactkit.ErrTooLarge))
	}
	w.write(fb)
	w.write(appendTrailer(make([]byte, 0, trailerSize), len(fb), crc32.Checksum(fb, castagnoli)))
	if w.err != nil {
		return compactkit.BlockMeta{}, w.err
	}
	return f.Block.Clone(), nil
}

// DatasetWriter appends the records of one dataset of a block being
// written. It is valid until the block's next BeginDataset or Close.
type DatasetWriter struct {
	w       *blockWriter
	tenant  string // as stored
	name    string
	offset  int64
	records int64
	minT    int64
	maxT    int64
	crc     uint32 // running CRC-32C of the section written so far
	inPage  uint32
	// The last record appended: its key and value alias the page buffer
	// until the page is flushed, then the owned copies below.
	lastKey []byte
	lastTS  int64
	lastVal []byte
	ownKey  []byte
	ownVal  []byte
	done    bool
}

// Append adds r to the dataset. r must come strictly after the previous
// record in [Compare] order; the writer copies its bytes.
func (d *DatasetWriter) Append(r Record) error {
	if err := d.usable(); err != nil {
		return err
	}
	if d.records > 0 && d.compareLast(r) <= 0 {
		return d.w.fail(fmt.Errorf("blockmerge: block %s: dataset %s: record (key %x, ts %d) not after the previous one: %w",
			d.w.info.ID, d.name, r.Key, r.Timestamp, ErrOutOfOrder))
	}
	return d.append(r)
}

func (d *DatasetWriter) usable() error {
	if d.done {
		return fmt.Errorf("blockmerge: block %s: dataset %s: %w", d.w.info.ID, d.name, os.ErrClosed)
	}
	return d.w.err
}

// compareLast compares r with the last record appended (there must be
// one).
func (d *DatasetWriter) compareLast(r Record) int {
	if c := bytes.Compare(r.Key, d.lastKey); c != 0 {
		return c
	}
	if c := cmp.Compare(r.Timestamp, d.lastTS); c != 0 {
		return c
	}
	return bytes.Compare(r.Value, d.lastVal)
}

// append adds r, already known to be in order.
func (d *DatasetWriter) append(r Record) error {
	w := d.w
	if len(r.Key) > maxKeySize || len(r.Value) > maxValueSize {
		return w.fail(fmt.Errorf("blockmerge: block %s: dataset %s: record of key %d and value %d bytes, limits %d and %d: %w",
			w.info.ID, d.name, len(r.Key), len(r.Value), maxKeySize, maxValueSize, compactkit.ErrTooLarge))
	}
	n := 2*binary.MaxVarintLen64 + 8 + len(r.Key) + len(r.Value)
	if d.inPage > 0 && len(w.page)-pageHeaderSize+n > w.pageSize {
		d.flush()
		if w.err != nil {
			return w.err
		}
	}
	p := binary.AppendUvarint(w.page, uint64(len(r.Key)))
	k := len(p)
	p = append(p, r.Key...)
	p = binary.LittleEndian.AppendUint64(p, uint64(r.Timestamp))
	p = binary.AppendUvarint(p, uint64(len(r.Value)))
	v := len(p)
	p = append(p, r.Value...)
	w.page = p
	d.lastKey = p[k : k+len(r.Key) : k+len(r.Key)]
	d.lastTS = r.Timestamp
	d.lastVal = p[v:len(p):len(p)]
	d.inPage++
	d.records++
	d.minT = min(d.minT, r.Timestamp)
	d.maxT = max(d.maxT, r.Timestamp)
	return nil
}

// flush writes the current page, if it holds records.
func (d *DatasetWriter) flush() {
	w := d.w
	if d.inPage == 0 || w.err != nil {
		return
	}
	// The last record's bytes are about to be overwritten: keep a copy.
	d.ownKey = append(d.ownKey[:0], d.lastKey...)
	d.ownVal = append(d.ownVal[:0], d.lastVal...)
	d.lastKey, d.lastVal = d.ownKey, d.ownVal

	binary.LittleEndian.PutUint32(w.page[0:], uint32(len(w.page)-pageHeaderSize))
	binary.LittleEndian.PutUint32(w.page[4:], d.inPage)
	d.crc = crc32.Update(d.crc, castagnoli, w.page)
	w.page = binary.LittleEndian.AppendUint32(w.page, d.crc)
	d.crc = crc32.Update(d.crc, castagnoli, w.page[len(w.page)-pageTrailerSize:])
	w.write(w.page)
	w.page = w.page[:pageHeaderSize]
	if cap(w.page) > 2*(pageOverhead+w.pageSize) {
		// A huge record grew the buffer: do not keep it.
		w.page = make([]byte, pageHeaderSize, pageOverhead+w.pageSize)
	}
	d.inPage = 0
}

// Dataset is a dataset held in memory, for [WriteBlock].
type Dataset struct {
	// Tenant owns the dataset: it may be empty in a single-tenant block
	// (info.Tenant set), where it means the block's tenant.
	Tenant string
	// Name identifies the dataset within its tenant.
	Name string
	// Records are the dataset's records, in any order; identical records
	// are written once.
	Records []Record
}

// WriteBlock writes a block holding datasets to store at
// compactkit.ObjectKey(info.ID) and returns its metadata. It is what
// ingest uses to write a level-0 segment (info.Tenant empty and datasets of
// several tenants) or any small block from memory. Datasets may come in any
// order (they are sorted by tenant and name); two datasets with the same
// (tenant, name) are an error; a dataset without records is left out. The
// caller's slices are not modified. No option applies.
func WriteBlock(ctx context.Context, store Store, info BlockInfo, datasets []Dataset, opts ...Option) (compactkit.BlockMeta, error) {
	if err := compactkit.ValidateID(info.ID); err != nil {
		return compactkit.BlockMeta{}, fmt.Errorf("blockmerge: write block: %w", err)
	}
	ds := slices.Clone(datasets)
	resolve := func(d *Dataset) string { return cmp.Or(info.Tenant, d.Tenant) }
	slices.SortStableFunc(ds, func(a, b Dataset) int { return datasetCompare(resolve(&a), a.Name, resolve(&b), b.Name) })
	for i := 1; i < len(ds); i++ {
		if resolve(&ds[i-1]) == resolve(&ds[i]) && ds[i-1].Name == ds[i].Name {
			return compactkit.BlockMeta{}, fmt.Errorf("blockmerge: write block %s: dataset %s/%s given twice: %w",
				info.ID, resolve(&ds[i]), ds[i].Name, compactkit.ErrInconsistent)
		}
	}
	return writeObject(ctx, store, info, opts, func(bw *blockWriter) error {
		for i := range ds {
			recs := sortRecords(slices.Clone(ds[i].Records))
			if len(recs) == 0 {
				continue
			}
			dw, err := bw.BeginDataset(ds[i].Tenant, ds[i].Name)
			if err != nil {
				return err
			}
			for _, r := range recs {
				if err := dw.Append(r); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// writeObject writes the block described by info to store at
// compactkit.ObjectKey(info.ID): fill writes its datasets; the object is
// committed if fill and the block's Close succeed, aborted otherwise.
func writeObject(ctx context.Context, store Store, info BlockInfo, opts []Option, fill func(*blockWriter) error) (compactkit.BlockMeta, error) {
	ow, err := CreateObject(ctx, store, compactkit.ObjectKey(info.ID), "")
	if err != nil {
		return compactkit.BlockMeta{}, err
	}
	meta, err := func() (compactkit.BlockMeta, error) {
		bw, err := newWriter(ow, info, opts...)
		if err != nil {
			return compactkit.BlockMeta{}, err
		}
		if err := fill(bw); err != nil {
			return compactkit.BlockMeta{}, err
		}
		return bw.Close()
	}()
	if err != nil {
		return compactkit.BlockMeta{}, errors.Join(err, ow.Abort())
	}
	if err := ow.Commit(); err != nil {
		return compactkit.BlockMeta{}, err
	}
	return meta, nil
}

// checkName checks a tenant or dataset name as compactkit does: at most
// compactkit.MaxNameLen bytes of valid UTF-8 without control characters,
// empty only where allowed.
func checkName(what, s string, emptyOK bool) error {
	switch {
	case s == "" && !emptyOK:
		return fmt.Errorf("blockmerge: %s: %w", what, compactkit.ErrEmptyID)
	case len(s) > compactkit.MaxNameLen:
		return fmt.Errorf("blockmerge: %s: %d bytes, limit %d: %w", what, len(s), compactkit.MaxNameLen, compactkit.ErrInvalidID)
	case !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return fmt.Errorf("blockmerge: %s %q: invalid characters: %w", what, s, compactkit.ErrInvalidID)
	}
	return nil
}
