package blockmerge

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"testing"

	"github.com/compactkit/compactkit"
)

// FuzzPages feeds the page decoder arbitrary page payloads behind a valid
// page frame (length, record count, checksum), which mutations of whole
// blocks rarely reach past the checksums. Garbage must never panic; what
// decodes must be in strictly increasing order and within the count.
func FuzzPages(f *testing.F) {
	f.Add([]byte{}, uint32(0))
	f.Add([]byte{1, 'k', 2, 1, 'v'}, uint32(1))
	f.Add([]byte{1, 'k', 2, 1, 'v', 1, 'k', 4, 0}, uint32(2))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, uint32(3))
	f.Fuzz(func(t *testing.T, payload []byte, count uint32) {
		// Two copies of the page, to cross a page boundary.
		var sec []byte
		for range 2 {
			sec = binary.LittleEndian.AppendUint32(sec, uint32(len(payload)))
			sec = binary.LittleEndian.AppendUint32(sec, count)
			sec = append(sec, payload...)
			sec = binary.LittleEndian.AppendUint32(sec, crc32.Checksum(sec, castagnoli))
		}
		meta := compactkit.DatasetMeta{Tenant: "t", Name: "d", Size: int64(len(sec)), Records: 2 * int64(count)}
		want := section{Offset: headerSize, CRC: crc32.Checksum(sec, castagnoli)}
		it := newDatasetIterator("blocks/fuzz", "fuzz", meta, want, io.NopCloser(bytes.NewReader(sec)))
		var prev Record
		n := uint32(0)
		for it.Next() {
			r := it.Record()
			if n > 0 && Compare(prev, r) >= 0 {
				t.Fatalf("record %d out of order", n)
			}
			prev = r.Clone()
			n++
		}
		if n > 2*count {
			t.Fatalf("%d records decoded, pages hold %d", n, 2*count)
		}
		if it.Err() == nil && n != 2*count {
			t.Fatalf("success with %d records of %d", n, 2*count)
		}
	})
}
