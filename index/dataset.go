package index

import (
	"encoding/binary"
	"slices"
	"unsafe"
)

// dataset is a block's dataset with interned names, as packed in and
// unpacked from its block (see setDatasets).
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

// setDatasets packs ds into b, whose time range must be set. A dataset
// takes a few bytes instead of the 40 of a dataset: the head, a uvarint
// of name<<3 | flags; the tenant, if any; size and records as uvarints of
// their bits; and the distances of its range from its block's, if not
// zero. The packing is exact for any values (the distances wrap), so that
// what restore checks after packing is what it decoded; valid values are
// small. The bytes are preceded by their length as a uvarint, so that the
// block needs a pointer and no length (see packed).
func (b *block) setDatasets(ds []dataset) {
	b.nds = uint32(len(ds))
	b.ds = nil
	if len(ds) == 0 {
		return
	}
	var buf [256]byte
	body := buf[:0]
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
	var lenBuf [binary.MaxVarintLen64]byte
	prefix := binary.PutUvarint(lenBuf[:], uint64(len(body)))
	p := make([]byte, prefix+len(body))
	copy(p, lenBuf[:prefix])
	copy(p[prefix:], body)
	b.ds = &p[0]
}

// packed returns b's packed datasets (nil if it has none). Their length
// is the uvarint at b.ds; each byte read lies in the allocation that
// setDatasets made.
func (b *block) packed() []byte {
	if b.ds == nil {
		return nil
	}
	p := unsafe.Pointer(b.ds)
	var n uint64
	var i uintptr
	for shift := uint(0); ; shift += 7 {
		c := *(*byte)(unsafe.Add(p, i))
		i++
		n |= uint64(c&0x7f) << shift
		if c < 0x80 {
			break
		}
	}
	return unsafe.Slice((*byte)(unsafe.Add(p, i)), n)
}

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
	return dsReader{p: b.packed(), min: b.minTime, max: b.maxTime}
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

// uvarint decodes the uvarint at p[i:], which setDatasets wrote, and
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

// appendDatasets appends b's datasets to buf: next in one loop.
func (b *block) appendDatasets(buf []dataset) []dataset {
	p := b.packed()
	for i := 0; i < len(p); {
		var head, v uint64
		head, i = uvarint(p, i)
		d := dataset{name: uint32(head >> dsFlags), minTime: b.minTime, maxTime: b.maxTime}
		if head&dsTenant != 0 {
			v, i = uvarint(p, i)
			d.tenant = uint32(v)
		}
		v, i = uvarint(p, i)
		d.size = int64(v)
		v, i = uvarint(p, i)
		d.records = int64(v)
		if head&dsMin != 0 {
			v, i = uvarint(p, i)
			d.minTime = int64(uint64(b.minTime) + v)
		}
		if head&dsMax != 0 {
			v, i = uvarint(p, i)
			d.maxTime = int64(uint64(b.maxTime) - v)
		}
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
