package index

import (
	"encoding/binary"
	"slices"
	"unsafe"
)

// dataset is a block's dataset with interned names, as packed in and
// unpacked from its block (see appendPacked).
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

// newBlock returns a new block with f's ID, time range, shard and tenant,
// and level, size and datasets ds packed (see appendPacked): the ID's
// bytes and the packed bytes follow the block in its allocation, so that
// reading a block's ID or its level and size (a search that compares IDs,
// a replacement that counts the bytes it removes) reads memory next to
// the block instead of two other allocations.
func newBlock(f block, level uint32, size int64, ds []dataset) *block {
	var buf [256]byte
	ext := appendPacked(buf[:0], f.minTime, f.maxTime, level, size, ds)
	b, tail := allocBlock(len(f.id) + len(ext))
	*b = f
	b.id, b.ext = "", nil
	if len(f.id) > 0 {
		copy(tail, f.id)
		b.id = unsafe.String(&tail[0], len(f.id))
	}
	if len(ext) > 0 {
		copy(tail[len(f.id):], ext)
		b.ext = &tail[len(f.id)]
	}
	return b
}

// allocBlock allocates a block followed by at least n bytes: the block
// and the bytes in one allocation of a size class of the Go allocator up
// to 512 bytes, in two beyond.
func allocBlock(n int) (*block, []byte) {
	switch {
	case n <= 16:
		return blockWith[[16]byte]()
	case n <= 32:
		return blockWith[[32]byte]()
	case n <= 48:
		return blockWith[[48]byte]()
	case n <= 64:
		return blockWith[[64]byte]()
	case n <= 80:
		return blockWith[[80]byte]()
	case n <= 96:
		return blockWith[[96]byte]()
	case n <= 112:
		return blockWith[[112]byte]()
	case n <= 144:
		return blockWith[[144]byte]()
	case n <= 208:
		return blockWith[[208]byte]()
	case n <= 336:
		return blockWith[[336]byte]()
	case n <= 464:
		return blockWith[[464]byte]()
	}
	return new(block), make([]byte, n)
}

// blockWith allocates a block followed by the bytes of A, a byte array.
func blockWith[A any]() (*block, []byte) {
	t := new(struct {
		b    block
		tail A
	})
	return &t.b, unsafe.Slice((*byte)(unsafe.Pointer(&t.tail)), unsafe.Sizeof(t.tail))
}

// appendPacked appends to buf the packing of a block's level, size and
// datasets ds, for a block of range [minTime, maxTime]: nothing for a
// block of level 0, size 0 and no datasets. The level, the size (its bits)
// and the number of datasets come first, as uvarints, then the datasets. A
// dataset takes a few bytes instead of the 40 of a dataset: the head, a
// uvarint of name<<3 | flags; the tenant, if any; size and records as
// uvarints of their bits; and the distances of its range from its block's,
// if not zero. The packing is exact for any values (the distances wrap),
// so that what restore checks after packing is what it decoded; valid
// values are small. The number of datasets and their heads bound the
// bytes, so that the block needs a pointer and no length (see unpack).
func appendPacked(buf []byte, minTime, maxTime int64, level uint32, size int64, ds []dataset) []byte {
	if level == 0 && size == 0 && len(ds) == 0 {
		return buf
	}
	body := binary.AppendUvarint(buf, uint64(level))
	body = binary.AppendUvarint(body, uint64(size))
	body = binary.AppendUvarint(body, uint64(len(ds)))
	for i := range ds {
		d := &ds[i]
		head := uint64(d.name) << dsFlags
		if d.tenant != 0 {
			head |= dsTenant
		}
		if d.minTime != minTime {
			head |= dsMin
		}
		if d.maxTime != maxTime {
			head |= dsMax
		}
		body = binary.AppendUvarint(body, head)
		if d.tenant != 0 {
			body = binary.AppendUvarint(body, uint64(d.tenant))
		}
		body = binary.AppendUvarint(body, uint64(d.size))
		body = binary.AppendUvarint(body, uint64(d.records))
		if d.minTime != minTime {
			body = binary.AppendUvarint(body, uint64(d.minTime)-uint64(minTime))
		}
		if d.maxTime != maxTime {
			body = binary.AppendUvarint(body, uint64(maxTime)-uint64(d.maxTime))
		}
	}
	return body
}

// extras is what a block packs besides its datasets.
type extras struct {
	level uint32
	size  int64
	nds   uint32 // the number of datasets
	ds    []byte // the packed datasets
}

// unpack returns b's level, size and number of datasets, and its packed
// datasets. It reads the bytes appendPacked wrote through b.ext, each in
// the block's allocation (see newBlock): the header's uvarints, then each
// dataset's head and the uvarints its flags say follow it.
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

// ptrUvarint decodes the uvarint at p+i, which appendPacked wrote, and
// returns it with the offset after it.
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

// uvarint decodes the uvarint at p[i:], which appendPacked wrote, and
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
