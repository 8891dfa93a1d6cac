package bucketlog

import (
	"encoding/binary"
	"hash/crc32"
	"reflect"
	"testing"

	"github.com/compactkit/compactkit/raftfsm"
)

// encodeV1 is the entry encoding before batching (one command, no first
// index, no stamp), kept to test that such logs still read.
func encodeV1(number uint64, prev [32]byte, nonce string, cmd []byte) []byte {
	b := binary.BigEndian.AppendUint64([]byte(magicV1), number)
	b = append(b, prev[:]...)
	b = binary.AppendUvarint(b, uint64(len(nonce)))
	b = append(b, nonce...)
	b = append(b, cmd...)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// FuzzEntry: any bytes as a log entry: no panic; a decoded entry encodes
// to bytes that decode to the same entry.
func FuzzEntry(f *testing.F) {
	f.Add((&entry{number: 7, first: 9, stamp: 1e18, nonce: "c1/3", cmds: [][]byte{[]byte("cmd"), {}}}).encode())
	f.Add(encodeV1(7, [32]byte{1}, "c1/3", []byte("cmd")))
	f.Add([]byte(magic))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := decodeEntry(data)
		if err != nil {
			return
		}
		again, err := decodeEntry(e.encode())
		if err != nil {
			t.Fatalf("entry %+v re-encodes to bytes that do not decode: %v", e, err)
		}
		again.v1 = e.v1
		if e.v1 {
			again.stamp = 0
		}
		if !reflect.DeepEqual(again, e) {
			t.Fatalf("entry %+v re-decodes as %+v", e, again)
		}
	})
}

// A log written before batching (version-1 entries and checkpoint) still
// reads: each entry's command takes its entry number as log index.
func TestVersion1EntryDecodes(t *testing.T) {
	e, err := decodeEntry(encodeV1(3, [32]byte{9}, "c/1", []byte("command")))
	if err != nil {
		t.Fatal(err)
	}
	want := &entry{number: 3, first: 3, prev: [32]byte{9}, nonce: "c/1", cmds: [][]byte{[]byte("command")}, v1: true}
	if !reflect.DeepEqual(e, want) {
		t.Fatalf("decoded %+v, want %+v", e, want)
	}
}

// FuzzCheckpoint: any bytes as a checkpoint: no panic; a refused one
// leaves the replica where it was.
func FuzzCheckpoint(f *testing.F) {
	f.Add([]byte(checkpointMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		fsm, err := raftfsm.New(raftfsm.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		l := &Log{fsm: fsm}
		if err := l.restoreFrom(16, data); err != nil && l.applied != 0 {
			t.Fatalf("a refused checkpoint moved the replica to %d", l.applied)
		}
	})
}
