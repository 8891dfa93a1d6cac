package bucketlog

import (
	"bytes"
	"testing"

	"github.com/compactkit/compactkit/raftfsm"
)

// FuzzEntry: any bytes as a log entry: no panic; a decoded entry encodes
// back to the same bytes.
func FuzzEntry(f *testing.F) {
	f.Add((&entry{index: 7, nonce: "c1/3", cmd: []byte("cmd")}).encode())
	f.Add([]byte(magic))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := decodeEntry(data)
		if err != nil {
			return
		}
		if !bytes.Equal(e.encode(), data) {
			t.Fatalf("entry %+v re-encodes differently", e)
		}
	})
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
