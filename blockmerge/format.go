package blockmerge

import (
	"encoding/binary"
	"errors"
	"hash/crc32"

	"github.com/compactkit/compactkit"
)

// Block format v1. All fixed-size integers are little-endian.
//
//	block   = header section* footer trailer
//	header  = "CKBK" version:u8 0 0 0                               (8 bytes)
//	section = page+                                 (one per dataset, in index order)
//	page    = payloadLen:u32 records:u32 payload crc:u32
//	payload = record+
//	record  = uvarint(len(key)) key timestamp:i64 uvarint(len(value)) value
//	footer  = CBOR (compactkit's deterministic codec) of
//	          [block metadata, [[section offset, crc32c(section)] ...]]
//	trailer = footerLen:u32 crc32c(footer):u32 version:u8 0 0 0 "CKBK" (16 bytes)
//
// A page's crc is the CRC-32C of the section from its start to the end of
// the page's payload (earlier pages' crc fields included): one pass over the
// section checks every page before its records are used, and ends with the
// CRC-32C of the whole section, which the dataset index holds.
//
// The footer's block metadata lists the datasets (tenant, name, size =
// section length, record count, min and max timestamp) in strictly
// increasing (tenant, name) order, parallel to the section list: together
// they are the dataset index. Sections are contiguous, from the end of the
// header to the start of the footer, and every dataset has at least one
// record. The metadata's Size is the size of the whole object (the writer
// finds the fixed point of the footer's length).
const (
	// formatVersion is the block format version this release writes and
	// reads.
	formatVersion = 1

	// defaultPageSize is the default bound on the payload of a page.
	defaultPageSize = 64 << 10
	// minPageSize and maxPageSize bound the page size a writer accepts.
	minPageSize = 1 << 10
	maxPageSize = 16 << 20

	// maxKeySize and maxValueSize bound a record's key and value (see
	// [Record]). A record larger than the page size gets a page of its own.
	maxKeySize   = 64 << 10
	maxValueSize = 16 << 20

	headerSize      = 8
	trailerSize     = 16
	pageHeaderSize  = 8
	pageTrailerSize = 4
	pageOverhead    = pageHeaderSize + pageTrailerSize
	// maxPagePayload bounds a page's payload on read: the largest page a
	// writer can produce (a page holding one record of the maximum size).
	maxPagePayload = maxPageSize + maxKeySize + maxValueSize + 2*binary.MaxVarintLen64 + 8
	// maxFooterSize is the footer limit of the codec used for it.
	maxFooterSize = 32 << 20
	// minRecordSize is the smallest encoding of a record (empty key and
	// value).
	minRecordSize = 10
	// tailRead is how much of the end of a block a reader fetches first:
	// the trailer and, usually, the whole footer in one range read.
	tailRead = 64 << 10
)

var magic = [4]byte{'C', 'K', 'B', 'K'}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Block format errors. Decoding failures wrap the shared decoding errors
// of compactkit (ErrMalformed, ErrTruncated, ErrUnknownVersion,
// ErrTooLarge, ErrChecksum), with a message naming the object and dataset.
//
// ErrOutOfOrder reports records or datasets given to a writer out of their
// required order, or a record identical to the previous one. A dataset
// that a block does not hold is an error wrapping [ErrNotFound].
var ErrOutOfOrder = errors.New("blockmerge: out of order")

// footer is the CBOR-encoded block footer.
type footer struct {
	_        struct{} `cbor:",toarray"`
	Block    compactkit.BlockMeta
	Sections []section
}

// section locates a dataset's pages in the block.
type section struct {
	_      struct{} `cbor:",toarray"`
	Offset int64
	CRC    uint32
}

func appendHeader(b []byte) []byte {
	b = append(b, magic[:]...)
	return append(b, formatVersion, 0, 0, 0)
}

func appendTrailer(b []byte, footerLen int, footerCRC uint32) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(footerLen))
	b = binary.LittleEndian.AppendUint32(b, footerCRC)
	b = append(b, formatVersion, 0, 0, 0)
	return append(b, magic[:]...)
}

// datasetCompare orders datasets by (tenant, name), tenants resolved.
func datasetCompare(t1, n1, t2, n2 string) int {
	if t1 != t2 {
		if t1 < t2 {
			return -1
		}
		return 1
	}
	switch {
	case n1 < n2:
		return -1
	case n1 > n2:
		return 1
	}
	return 0
}
