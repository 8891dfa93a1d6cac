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

	"github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/internal/codec"
)

// Reader reads a block from a [Store]: [Open] fetches and checks the
// footer, then each dataset is streamed on demand with one range read of
// its section.
//
// Every check failure returns an error naming the object (and the dataset,
// for a dataset) and wrapping one of compactkit's decoding errors:
// ErrChecksum for a checksum mismatch, ErrTruncated for missing bytes,
// ErrUnknownVersion for another format version, ErrTooLarge for sizes over
// the limits, ErrMalformed for anything else. Readers never panic on
// garbage, and allocate at most in proportion to the object's size.
//
// A Reader is safe for concurrent use; each [DatasetIterator] is not.
type Reader struct {
	store    Store
	key      string
	meta     compactkit.BlockMeta
	sections []section
}

// Open opens the block with the given ID, stored at
// compactkit.ObjectKey(id): it fetches the trailer and footer (usually with
// one range read), and checks the footer's checksum, metadata and dataset
// index against the object. The footer must name the block id.
func Open(ctx context.Context, store Store, id string) (*Reader, error) {
	if err := compactkit.ValidateID(id); err != nil {
		return nil, fmt.Errorf("blockmerge: open block: %w", err)
	}
	key := compactkit.ObjectKey(id)
	size, err := store.Size(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("blockmerge: open block %s: %w", id, err)
	}
	r := &Reader{store: store, key: key}
	if err := r.readFooter(ctx, id, size); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *Reader) corrupt(sentinel error, format string, args ...any) error {
	return fmt.Errorf("blockmerge: object %q: %s: %w", r.key, fmt.Sprintf(format, args...), sentinel)
}

// readRange reads exactly n bytes at off.
func (r *Reader) readRange(ctx context.Context, off, n int64) ([]byte, error) {
	rc, err := r.store.GetRange(ctx, r.key, off, n)
	if err != nil {
		return nil, fmt.Errorf("blockmerge: object %q: %w", r.key, err)
	}
	defer rc.Close()
	buf := make([]byte, n)
	if _, err := io.ReadFull(rc, buf); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return nil, r.corrupt(compactkit.ErrTruncated, "range [%d, +%d): short read", off, n)
		}
		return nil, fmt.Errorf("blockmerge: object %q: range [%d, +%d): %w", r.key, off, n, err)
	}
	return buf, nil
}

func (r *Reader) readFooter(ctx context.Context, id string, size int64) error {
	if size < headerSize+trailerSize {
		return r.corrupt(compactkit.ErrTruncated, "%d bytes: too short for a block", size)
	}
	tailLen := min(size, tailRead)
	tail, err := r.readRange(ctx, size-tailLen, tailLen)
	if err != nil {
		return err
	}
	tr := tail[len(tail)-trailerSize:]
	if !bytes.Equal(tr[12:16], magic[:]) {
		return r.corrupt(compactkit.ErrMalformed, "no block trailer (bad magic %q): not a block, or truncated", tr[12:16])
	}
	if tr[8] != formatVersion {
		return r.corrupt(compactkit.ErrUnknownVersion, "block format version %d, this release reads %d", tr[8], formatVersion)
	}
	if tr[9]|tr[10]|tr[11] != 0 {
		return r.corrupt(compactkit.ErrMalformed, "trailer: reserved bytes set")
	}
	flen := int64(binary.LittleEndian.Uint32(tr[0:]))
	fcrc := binary.LittleEndian.Uint32(tr[4:])
	if flen > maxFooterSize {
		return r.corrupt(compactkit.ErrTooLarge, "footer of %d bytes, limit %d", flen, maxFooterSize)
	}
	if flen == 0 || flen > size-headerSize-trailerSize {
		return r.corrupt(compactkit.ErrTruncated, "footer of %d bytes in an object of %d", flen, size)
	}
	footerStart := size - trailerSize - flen
	var fb []byte
	if flen+trailerSize <= tailLen {
		fb = tail[tailLen-trailerSize-flen : tailLen-trailerSize]
	} else if fb, err = r.readRange(ctx, footerStart, flen); err != nil {
		return err
	}
	if got := crc32.Checksum(fb, castagnoli); got != fcrc {
		return r.corrupt(compactkit.ErrChecksum, "footer checksum %08x, trailer says %08x", got, fcrc)
	}
	var f footer
	if err := codec.Default.Unmarshal(fb, &f); err != nil {
		return r.corrupt(unwrapSentinel(err), "footer: %v", err)
	}
	if err := r.checkFooter(id, size, footerStart, &f); err != nil {
		return err
	}
	r.meta, r.sections = f.Block, f.Sections
	if r.meta.Datasets == nil {
		r.meta.Datasets = []compactkit.DatasetMeta{}
	}
	return nil
}

// unwrapSentinel returns the compactkit decoding sentinel err wraps
// (ErrMalformed if none).
func unwrapSentinel(err error) error {
	for _, s := range []error{compactkit.ErrTruncated, compactkit.ErrTooLarge, compactkit.ErrUnknownVersion, compactkit.ErrChecksum} {
		if errors.Is(err, s) {
			return s
		}
	}
	return compactkit.ErrMalformed
}

// checkFooter checks the footer's metadata and index against the object.
func (r *Reader) checkFooter(id string, size, footerStart int64, f *footer) error {
	b := &f.Block
	if err := b.Validate(); err != nil {
		return r.corrupt(compactkit.ErrMalformed, "footer metadata: %v", err)
	}
	switch {
	case b.ID != id:
		return r.corrupt(compactkit.ErrMalformed, "footer names block %q", b.ID)
	case b.Size != size:
		return r.corrupt(compactkit.ErrTruncated, "footer gives size %d, object has %d bytes", b.Size, size)
	case len(f.Sections) != len(b.Datasets):
		return r.corrupt(compactkit.ErrMalformed, "footer: %d sections for %d datasets", len(f.Sections), len(b.Datasets))
	}
	off := int64(headerSize)
	minT, maxT := int64(0), int64(0)
	for i := range b.Datasets {
		d, s := &b.Datasets[i], &f.Sections[i]
		where := fmt.Sprintf("dataset %s/%s", b.DatasetTenant(d), d.Name)
		switch {
		case b.Tenant != "" && d.Tenant != "":
			return r.corrupt(compactkit.ErrMalformed, "%s: tenant stored in a single-tenant block", where)
		case s.Offset != off:
			return r.corrupt(compactkit.ErrMalformed, "%s: section at %d, expected %d", where, s.Offset, off)
		case d.Size < pageOverhead+minRecordSize || d.Size > footerStart-off:
			return r.corrupt(compactkit.ErrMalformed, "%s: section of %d bytes at %d, footer at %d", where, d.Size, off, footerStart)
		case d.Records < 1 || d.Records > (d.Size-pageOverhead)/minRecordSize:
			return r.corrupt(compactkit.ErrMalformed, "%s: %d records in %d bytes", where, d.Records, d.Size)
		}
		if i > 0 {
			p := &b.Datasets[i-1]
			if datasetCompare(b.DatasetTenant(p), p.Name, b.DatasetTenant(d), d.Name) >= 0 {
				return r.corrupt(compactkit.ErrMalformed, "%s: after %s/%s", where, b.DatasetTenant(p), p.Name)
			}
		}
		if i == 0 || d.MinTime < minT {
			minT = d.MinTime
		}
		if i == 0 || d.MaxTime > maxT {
			maxT = d.MaxTime
		}
		off += d.Size
	}
	if off != footerStart {
		return r.corrupt(compactkit.ErrMalformed, "sections end at %d, footer starts at %d", off, footerStart)
	}
	if b.MinTime != minT || b.MaxTime != maxT {
		return r.corrupt(compactkit.ErrMalformed, "block time range [%d, %d], datasets span [%d, %d]", b.MinTime, b.MaxTime, minT, maxT)
	}
	return nil
}

// Meta returns the block's metadata, as stored in its footer.
func (r *Reader) Meta() compactkit.BlockMeta { return r.meta.Clone() }

// Dataset starts streaming the dataset (tenant, name); an empty tenant
// means the block's. A dataset the block does not hold is an error
// wrapping [ErrNotFound]. The block's datasets are listed, in (tenant,
// name) order, in [Reader.Meta]:
//
//	for _, d := range r.Meta().Datasets {
//		it, err := r.Dataset(ctx, d.Tenant, d.Name)
//		...
//	}
func (r *Reader) Dataset(ctx context.Context, tenant, name string) (*DatasetIterator, error) {
	tenant = cmp.Or(tenant, r.meta.Tenant)
	for i := range r.meta.Datasets {
		d := &r.meta.Datasets[i]
		if r.meta.DatasetTenant(d) == tenant && d.Name == name {
			return r.datasetAt(ctx, i)
		}
	}
	return nil, fmt.Errorf("blockmerge: object %q: dataset %s/%s: %w", r.key, tenant, name, ErrNotFound)
}

// datasetAt starts streaming the i-th dataset of the index.
func (r *Reader) datasetAt(ctx context.Context, i int) (*DatasetIterator, error) {
	if i < 0 || i >= len(r.meta.Datasets) {
		return nil, fmt.Errorf("blockmerge: object %q: dataset #%d of %d: %w", r.key, i, len(r.meta.Datasets), ErrNotFound)
	}
	d := r.meta.Datasets[i]
	d.Tenant = r.meta.DatasetTenant(&d)
	rc, err := r.store.GetRange(ctx, r.key, r.sections[i].Offset, d.Size)
	if err != nil {
		return nil, fmt.Errorf("blockmerge: object %q: dataset %s/%s: %w", r.key, d.Tenant, d.Name, err)
	}
	return newDatasetIterator(r.key, r.meta.ID, d, r.sections[i], rc), nil
}

// newDatasetIterator returns an iterator over the section read from rc,
// which must yield meta.Size bytes (meta's Tenant resolved).
func newDatasetIterator(key, block string, meta compactkit.DatasetMeta, sec section, rc io.ReadCloser) *DatasetIterator {
	return &DatasetIterator{
		key:       key,
		block:     block,
		meta:      meta,
		want:      sec,
		rc:        rc,
		remaining: meta.Size,
		minT:      math.MaxInt64,
		maxT:      math.MinInt64,
	}
}

// DatasetIterator streams the records of one dataset, one page in memory
// at a time, checking as it goes: each page's checksum before its records
// are handed out, the record order, and at the end the section's checksum
// and the index's statistics (record count, time range). It closes its
// range reader when it reaches the end or fails; call Close to stop early.
//
//	for it.Next() {
//		rec := it.Record()
//		...
//	}
//	if err := it.Err(); err != nil { ... }
type DatasetIterator struct {
	key   string
	block string
	meta  compactkit.DatasetMeta // Tenant resolved
	want  section
	rc    io.ReadCloser

	remaining int64 // section bytes not yet read
	hdr       [pageHeaderSize]byte
	page      []byte // payload of the current page
	pos       int
	left      uint32 // records of the page not yet decoded
	pageNo    int
	crc       uint32

	records int64
	minT    int64
	maxT    int64
	cur     Record
	prefix  uint64 // keyPrefix(cur.Key)
	// owned copies of the current record when its page is replaced
	savedKey []byte
	savedVal []byte

	err  error
	done bool
}

// Meta returns the dataset's metadata from the index: its tenant
// (resolved: never empty), name and statistics.
func (it *DatasetIterator) Meta() compactkit.DatasetMeta { return it.meta }

// Record returns the current record. Its slices alias the iterator's
// buffers: they stay valid only until the next call to Next.
func (it *DatasetIterator) Record() Record { return it.cur }

// Err returns the error that stopped the iteration, if any.
func (it *DatasetIterator) Err() error { return it.err }

// Close releases the iterator's range reader. It is safe to call more
// than once.
func (it *DatasetIterator) Close() error {
	it.done = true
	if it.rc == nil {
		return nil
	}
	err := it.rc.Close()
	it.rc = nil
	return err
}

func (it *DatasetIterator) fail(sentinel error, format string, args ...any) bool {
	it.err = fmt.Errorf("blockmerge: object %q: dataset %s/%s: %s: %w", it.key, it.meta.Tenant, it.meta.Name,
		fmt.Sprintf(format, args...), sentinel)
	it.Close() //nolint:errcheck // the iteration error is the one to report
	return false
}

// Next advances to the next record, reporting whether there is one. At
// the end (false with a nil Err), the whole dataset has been checked.
func (it *DatasetIterator) Next() bool {
	if it.done || it.err != nil {
		return false
	}
	if it.left == 0 {
		if it.pos != len(it.page) {
			return it.fail(compactkit.ErrMalformed, "page %d: %d bytes after its last record", it.pageNo, len(it.page)-it.pos)
		}
		if it.remaining == 0 {
			return it.finish()
		}
		if !it.loadPage() {
			return false
		}
	}
	p := it.page[it.pos:]
	kl, n := uint64(0), 1
	if len(p) > 0 && p[0] < 0x80 {
		kl = uint64(p[0])
	} else {
		kl, n = binary.Uvarint(p)
	}
	if n <= 0 || kl > maxKeySize || kl > uint64(len(p)-n) {
		return it.fail(compactkit.ErrMalformed, "page %d: bad key length", it.pageNo)
	}
	used := n + int(kl)
	key := p[n:used:used]
	if len(p)-used < 8 {
		return it.fail(compactkit.ErrMalformed, "page %d: bad timestamp", it.pageNo)
	}
	ts := int64(binary.LittleEndian.Uint64(p[used:]))
	used += 8
	vl, n := uint64(0), 1
	if used < len(p) && p[used] < 0x80 {
		vl = uint64(p[used])
	} else {
		vl, n = binary.Uvarint(p[used:])
	}
	if n <= 0 || vl > maxValueSize || vl > uint64(len(p)-used-n) {
		return it.fail(compactkit.ErrMalformed, "page %d: bad value length", it.pageNo)
	}
	used += n
	end := used + int(vl)
	rec := Record{Key: key, Timestamp: ts, Value: p[used:end:end]}
	prefix := keyPrefix(key)
	if it.records > 0 && (prefix < it.prefix || prefix == it.prefix && Compare(it.cur, rec) >= 0) {
		return it.fail(compactkit.ErrMalformed, "page %d: record (key %x, ts %d) out of order", it.pageNo, rec.Key, rec.Timestamp)
	}
	it.pos += end
	it.left--
	it.records++
	it.minT = min(it.minT, ts)
	it.maxT = max(it.maxT, ts)
	it.cur = rec
	it.prefix = prefix
	return true
}

// keyPrefix returns the first 8 bytes of key, zero-padded, as a big-endian
// integer: keys whose prefixes differ compare as their prefixes do.
func keyPrefix(key []byte) uint64 {
	if len(key) >= 8 {
		return binary.BigEndian.Uint64(key)
	}
	var b [8]byte
	copy(b[:], key)
	return binary.BigEndian.Uint64(b[:])
}

// loadPage reads the next page of the section and checks its checksum.
func (it *DatasetIterator) loadPage() bool {
	if it.records > 0 {
		// The page buffer is about to be overwritten: keep the current
		// record, to check the order across the page boundary.
		it.savedKey = append(it.savedKey[:0], it.cur.Key...)
		it.savedVal = append(it.savedVal[:0], it.cur.Value...)
		it.cur.Key, it.cur.Value = it.savedKey, it.savedVal
	}
	it.pageNo++
	if it.remaining < pageOverhead {
		return it.fail(compactkit.ErrMalformed, "page %d: %d bytes left, no room for a page", it.pageNo, it.remaining)
	}
	if !it.read(it.hdr[:]) {
		return false
	}
	plen := int64(binary.LittleEndian.Uint32(it.hdr[0:]))
	count := binary.LittleEndian.Uint32(it.hdr[4:])
	switch {
	case plen > it.remaining-pageTrailerSize:
		return it.fail(compactkit.ErrMalformed, "page %d: payload of %d bytes, %d left in the section", it.pageNo, plen, it.remaining)
	case plen > maxPagePayload:
		return it.fail(compactkit.ErrTooLarge, "page %d: payload of %d bytes, limit %d", it.pageNo, plen, maxPagePayload)
	case count == 0 || int64(count) > plen/minRecordSize:
		return it.fail(compactkit.ErrMalformed, "page %d: %d records in %d bytes", it.pageNo, count, plen)
	case it.records+int64(count) > it.meta.Records:
		return it.fail(compactkit.ErrMalformed, "page %d: more records than the %d of the index", it.pageNo, it.meta.Records)
	}
	n := plen + pageTrailerSize
	if int64(cap(it.page)) < n {
		// Pages of a dataset differ in size by less than a record: leave
		// some headroom so that the buffer is allocated once.
		it.page = make([]byte, n, min(n+n/8, it.remaining))
	}
	buf := it.page[:n]
	if !it.read(buf) {
		return false
	}
	it.crc = crc32.Update(it.crc, castagnoli, it.hdr[:])
	it.crc = crc32.Update(it.crc, castagnoli, buf[:plen])
	if want := binary.LittleEndian.Uint32(buf[plen:]); it.crc != want {
		return it.fail(compactkit.ErrChecksum, "page %d: checksum %08x, page says %08x", it.pageNo, it.crc, want)
	}
	it.crc = crc32.Update(it.crc, castagnoli, buf[plen:])
	it.page = buf[:plen]
	it.pos = 0
	it.left = count
	return true
}

// read fills p from the section.
func (it *DatasetIterator) read(p []byte) bool {
	_, err := io.ReadFull(it.rc, p)
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return it.fail(compactkit.ErrTruncated, "page %d: section ends early", it.pageNo)
		}
		it.err = fmt.Errorf("blockmerge: object %q: dataset %s/%s: page %d: %w", it.key, it.meta.Tenant, it.meta.Name, it.pageNo, err)
		it.Close() //nolint:errcheck // the read error is the one to report
		return false
	}
	it.remaining -= int64(len(p))
	return true
}

// finish checks the whole dataset against its index entry.
func (it *DatasetIterator) finish() bool {
	switch {
	case it.crc != it.want.CRC:
		return it.fail(compactkit.ErrChecksum, "section checksum %08x, index says %08x", it.crc, it.want.CRC)
	case it.records != it.meta.Records:
		return it.fail(compactkit.ErrMalformed, "%d records, index says %d", it.records, it.meta.Records)
	case it.minT != it.meta.MinTime || it.maxT != it.meta.MaxTime:
		return it.fail(compactkit.ErrMalformed, "time range [%d, %d], index says [%d, %d]", it.minT, it.maxT, it.meta.MinTime, it.meta.MaxTime)
	}
	it.cur = Record{}
	if err := it.Close(); err != nil {
		it.err = fmt.Errorf("blockmerge: object %q: dataset %s/%s: close: %w", it.key, it.meta.Tenant, it.meta.Name, err)
	}
	return false
}

// Verify reads the whole block with the given ID, checking its header,
// footer and every dataset (see [Reader] and [DatasetIterator]), and
// returns its metadata.
func Verify(ctx context.Context, store Store, id string) (compactkit.BlockMeta, error) {
	r, err := Open(ctx, store, id)
	if err != nil {
		return compactkit.BlockMeta{}, err
	}
	hdr, err := r.readRange(ctx, 0, headerSize)
	if err != nil {
		return compactkit.BlockMeta{}, err
	}
	if !bytes.Equal(hdr, appendHeader(nil)) {
		if bytes.Equal(hdr[:4], magic[:]) && hdr[4] != formatVersion {
			return compactkit.BlockMeta{}, r.corrupt(compactkit.ErrUnknownVersion, "header: format version %d", hdr[4])
		}
		return compactkit.BlockMeta{}, r.corrupt(compactkit.ErrMalformed, "bad header %x", hdr)
	}
	for i := range r.meta.Datasets {
		it, err := r.datasetAt(ctx, i)
		if err != nil {
			return compactkit.BlockMeta{}, err
		}
		for it.Next() {
		}
		if err := it.Err(); err != nil {
			return compactkit.BlockMeta{}, err
		}
	}
	return r.Meta(), nil
}
