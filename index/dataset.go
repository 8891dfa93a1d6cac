package index

import (
	"encoding/binary"
	"slices"
	"unsafe"
)

// dataset is a block's dataset with interned names, as packed in and
// unpacked from its block (see pack).
type dataset struct {
	tenant  uint32 // name ID; 0 when the dataset leaves its tenant empty
	name    uint32 // name ID
	size    int64
	records int64
	minTime int64
	maxTime int64
}

// The flags of a packed dataset's head.
const (
	dsTenant = 1 << iota // a tenant follows the head
	dsMin                // the dataset starts after its block
	dsMax                // the dataset ends before its block
	dsFlags  = 3         // flag bits below the name
)

// pack packs b's level, size and datasets ds into b.ext; b's time range
// must be set. The level, the size (its bits) and the number of datasets
// come first, as uvarints, then the datasets. A dataset takes a few bytes
// instead of the 40 of a dataset: the head, a uvarint of name<<3 | flags;
// the tenant, if any; size and records as uvarints of their bits; and the
// distances of its range from its block's, if not zero. The packing is
// exact for any values (the distances wrap), so that what restore checks
// after packing is what it decoded; valid values are small. The number of
// datasets and their heads bound the bytes, so that the block needs a
// pointer and no length (see unpack). A block of level 0, size 0 and no
// datasets packs nothing.
func (b *block) pack(level uint32, size int64, ds []dataset) {
	b.ext = nil
	if level == 0 && size == 0 && len(ds) == 0 {
		return
	}
	var buf [256]byte
	body := binary.AppendUvarint(buf[:0], uint64(level))
	body = binary.AppendUvarint(body, uint64(size))
	body = binary.AppendUvarint(body, uint64(len(ds)))
	for i := range ds {
		d := &ds[i]
		head := uint64(d.name) << dsFlags
		if d.tenant != 0 {
			head |= dsTenant
		}
		if d.minTime != b.minTime {
			head |= dsMin
		}
		if d.maxTime != b.maxTime {
			head |= dsMax
		}
		body = binary.AppendUvarint(body, head)
		if d.tenant != 0 {
			body = binary.AppendUvarint(body, uint64(d.tenant))
		}
		body = binary.AppendUvarint(body, uint64(d.size))
		body = binary.AppendUvarint(body, uint64(d.records))
		if d.minTime != b.minTime {
			body = binary.AppendUvarint(body, uint64(d.minTime)-uint64(b.minTime))
		}
		if d.maxTime != b.maxTime {
			body = binary.AppendUvarint(body, uint64(b.maxTime)-uint64(d.maxTime))
		}
	}
	p := make([]byte, len(body))
	copy(p, body)
	b.ext = &p[0]
}

// extras is what a block packs besides its datasets.
type extras struct {
	level uint32
	size  int64
	nds   uint32 // the number of datasets
	ds    []byte // the packed datasets
}

// unpack returns b's level, size and number of datasets, and its packed
// datasets. It reads the bytes pack wrote through b.ext, each in the
// allocation pack made: the header's uvarints, then each dataset's head
// and the uvarints its flags say follow it.
func (b *block) unpack() extras {
	if b.ext == nil {
		return extras{}
	}
	p := unsafe.Pointer(b.ext)
	var e extras
	var v uint64
	v, i := ptrUvarint(p, 0)
	e.level = uint32(v)
	v, i = ptrUvarint(p, i)
	e.size = int64(v)
	v, i = ptrUvarint(p, i)
	e.nds = uint32(v)
	if e.nds == 0 {
		return e
	}
	start := i
	for range e.nds {
		head, j := ptrUvarint(p, i)
		i = j
		n := 2 // size and records
		for _, f := range [...]uint64{dsTenant, dsMin, dsMax} {
			if head&f != 0 {
				n++
			}
		}
		for range n {
			for *(*byte)(unsafe.Add(p, i)) >= 0x80 {
				i++
			}
			i++
		}
	}
	e.ds = unsafe.Slice((*byte)(unsafe.Add(p, start)), i-start)
	return e
}

// levelSize returns the block's level and size: the first two fields of
// what unpack returns, without walking the datasets.
func (b *block) levelSize() (uint32, int64) {
	if b.ext == nil {
		return 0, 0
	}
	p := unsafe.Pointer(b.ext)
	level, i := ptrUvarint(p, 0)
	size, _ := ptrUvarint(p, i)
	return uint32(level), int64(size)
}

// ptrUvarint decodes the uvarint at p+i, which pack wrote, and returns it
// with the offset after it.
func ptrUvarint(p unsafe.Pointer, i uintptr) (uint64, uintptr) {
	var v uint64
	for s := uint(0); ; s += 7 {
		c := *(*byte)(unsafe.Add(p, i))
		i++
		v |= uint64(c&0x7f) << s
		if c < 0x80 {
			return v, i
		}
	}
}

// size returns b's size.
func (b *block) size() int64 { return b.unpack().size }

// dsReader unpacks a block's datasets in order:
//
//	r := b.datasets()
//	for var d dataset; r.next(&d); { ... }
type dsReader struct {
	p        []byte
	min, max int64
}

// datasets returns a reader of b's datasets.
func (b *block) datasets() dsReader {
	return dsReader{p: b.unpack().ds, min: b.minTime, max: b.maxTime}
}

// next unpacks the next dataset into d, or returns false at the end.
func (r *dsReader) next(d *dataset) bool {
	p := r.p
	if len(p) == 0 {
		return false
	}
	head, i := uvarint(p, 0)
	d.name = uint32(head >> dsFlags)
	d.tenant = 0
	if head&dsTenant != 0 {
		var t uint64
		t, i = uvarint(p, i)
		d.tenant = uint32(t)
	}
	var v uint64
	v, i = uvarint(p, i)
	d.size = int64(v)
	v, i = uvarint(p, i)
	d.records = int64(v)
	d.minTime, d.maxTime = r.min, r.max
	if head&dsMin != 0 {
		v, i = uvarint(p, i)
		d.minTime = int64(uint64(r.min) + v)
	}
	if head&dsMax != 0 {
		v, i = uvarint(p, i)
		d.maxTime = int64(uint64(r.max) - v)
	}
	r.p = p[i:]
	return true
}

// uvarint decodes the uvarint at p[i:], which pack wrote, and
// returns it with the index after it.
func uvarint(p []byte, i int) (uint64, int) {
	var v uint64
	for s := uint(0); ; s += 7 {
		c := p[i]
		i++
		v |= uint64(c&0x7f) << s
		if c < 0x80 {
			return v, i
		}
	}
}

// appendDatasets appends b's datasets to buf.
func (b *block) appendDatasets(buf []dataset) []dataset {
	r := b.datasets()
	for d := (dataset{}); r.next(&d); {
		buf = append(buf, d)
	}
	return buf
}

// tenants appends to buf the tenants whose runs hold b: its tenant, or the
// distinct dataset tenants of a multi-tenant segment, in dataset order.
func (b *block) tenants(buf []uint32) []uint32 {
	if b.tenant != 0 {
		return append(buf, b.tenant)
	}
	n := len(buf)
	r := b.datasets()
	for d := (dataset{}); r.next(&d); {
		if !slices.Contains(buf[n:], d.tenant) {
			buf = append(buf, d.tenant)
		}
	}
	return buf
}
