package bucketlog

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// entry is one log object: the commands of one conditional create.
//
// Version 2 (magic "ckbl\x02"): entry number, the log index of its first
// command, the SHA-256 of the previous entry, the proposer's clock (unix
// nanoseconds), a flags byte (bit 0: the entry is timed by the store's
// modification time, see Log.entryTime), the proposer's nonce (uvarint length, bytes), the number
// of commands (uvarint), each command (uvarint length, bytes), and the
// CRC-32C of everything before it.
//
// Version 1 (magic "ckbl\x01", written before batching): entry number,
// previous hash, nonce, one command filling the rest, CRC-32C. Its command
// index is its entry number and its time is the command's own stamp.
type entry struct {
	number uint64
	first  uint64 // the log index of cmds[0]
	prev   [32]byte
	stamp  int64 // the proposer's clock; 0 in version 1
	stored bool  // timed by the store (flag bit 0)
	nonce  string
	cmds   [][]byte
	v1     bool
}

const (
	magicV1 = "ckbl\x01"
	magic   = "ckbl\x02"

	flagStoreTime = 1 << 0
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func (e *entry) encode() []byte {
	size := len(magic) + 8 + 8 + 32 + 8 + binary.MaxVarintLen64*2 + len(e.nonce) + 4
	for _, c := range e.cmds {
		size += binary.MaxVarintLen64 + len(c)
	}
	b := make([]byte, 0, size)
	b = append(b, magic...)
	b = binary.BigEndian.AppendUint64(b, e.number)
	b = binary.BigEndian.AppendUint64(b, e.first)
	b = append(b, e.prev[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(e.stamp))
	var flags byte
	if e.stored {
		flags |= flagStoreTime
	}
	b = append(b, flags)
	b = binary.AppendUvarint(b, uint64(len(e.nonce)))
	b = append(b, e.nonce...)
	b = binary.AppendUvarint(b, uint64(len(e.cmds)))
	for _, c := range e.cmds {
		b = binary.AppendUvarint(b, uint64(len(c)))
		b = append(b, c...)
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// uvarintBytes reads a uvarint length and that many bytes.
func uvarintBytes(rest []byte, what string) ([]byte, []byte, error) {
	n, k := binary.Uvarint(rest)
	if k <= 0 || uint64(len(rest)-k) < n {
		return nil, nil, fmt.Errorf("%w: entry %s", ErrCorrupt, what)
	}
	return rest[k : k+int(n)], rest[k+int(n):], nil
}

func decodeEntry(data []byte) (*entry, error) {
	if len(data) < len(magic)+8+32+1+4 {
		return nil, fmt.Errorf("%w: not a log entry (too short)", ErrCorrupt)
	}
	v1 := string(data[:len(magic)]) == magicV1
	if !v1 && string(data[:len(magic)]) != magic {
		return nil, fmt.Errorf("%w: not a log entry of a known version (magic %q)", ErrCorrupt, data[:len(magic)])
	}
	body, sum := data[:len(data)-4], data[len(data)-4:]
	if binary.BigEndian.Uint32(sum) != crc32.Checksum(body, castagnoli) {
		return nil, fmt.Errorf("%w: entry checksum", ErrCorrupt)
	}
	e := &entry{number: binary.BigEndian.Uint64(body[len(magic):]), v1: v1}
	rest := body[len(magic)+8:]
	if v1 {
		e.first = e.number
	} else {
		if len(rest) < 8+32+8+1 {
			return nil, fmt.Errorf("%w: entry header", ErrCorrupt)
		}
		e.first, rest = binary.BigEndian.Uint64(rest), rest[8:]
	}
	copy(e.prev[:], rest[:32])
	rest = rest[32:]
	if !v1 {
		e.stamp, rest = int64(binary.BigEndian.Uint64(rest)), rest[8:]
		if rest[0]&^flagStoreTime != 0 {
			return nil, fmt.Errorf("%w: entry flags %#x", ErrCorrupt, rest[0])
		}
		e.stored, rest = rest[0]&flagStoreTime != 0, rest[1:]
	}
	nonce, rest, err := uvarintBytes(rest, "nonce")
	if err != nil {
		return nil, err
	}
	e.nonce = string(nonce)
	if v1 {
		e.cmds = [][]byte{rest}
		return e, nil
	}
	n, k := binary.Uvarint(rest)
	if k <= 0 || n == 0 || n > uint64(len(rest)) {
		return nil, fmt.Errorf("%w: entry command count", ErrCorrupt)
	}
	rest = rest[k:]
	e.cmds = make([][]byte, n)
	for i := range e.cmds {
		if e.cmds[i], rest, err = uvarintBytes(rest, "command"); err != nil {
			return nil, err
		}
	}
	if len(rest) != 0 || e.stamp < 0 {
		return nil, fmt.Errorf("%w: entry: %d bytes after its commands, stamp %d", ErrCorrupt, len(rest), e.stamp)
	}
	return e, nil
}
