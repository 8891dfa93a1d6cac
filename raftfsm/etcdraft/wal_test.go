package etcdraft_test

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// wal is the reference node's write-ahead file: every HardState, entry and
// installed snapshot, appended as a record (type byte, uvarint length,
// protobuf) before the Ready's messages are sent. A restarted node replays
// it into a new MemoryStorage. Test code: no fsync, no rotation.
type wal struct {
	f *os.File
	w *bufio.Writer
}

const (
	recHardState = 'H'
	recEntry     = 'E'
	recSnapshot  = 'S'
)

func openWAL(path string) (*wal, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &wal{f: f, w: bufio.NewWriter(f)}, nil
}

func (l *wal) record(kind byte, m proto.Message) error {
	b, err := proto.Marshal(m)
	if err != nil {
		return err
	}
	l.w.WriteByte(kind)
	l.w.Write(binary.AppendUvarint(nil, uint64(len(b))))
	_, err = l.w.Write(b)
	return err
}

// save appends what a Ready asks to persist.
func (l *wal) save(rd raft.Ready) error {
	if !raft.IsEmptySnap(rd.Snapshot) {
		if err := l.record(recSnapshot, rd.Snapshot); err != nil {
			return err
		}
	}
	if rd.HardState != nil {
		if err := l.record(recHardState, rd.HardState); err != nil {
			return err
		}
	}
	for _, e := range rd.Entries {
		if err := l.record(recEntry, e); err != nil {
			return err
		}
	}
	return l.w.Flush()
}

func (l *wal) close() error {
	return errors.Join(l.w.Flush(), l.f.Close())
}

// loadWAL replays the file at path (absent: empty) into a new storage.
func loadWAL(path string) (*raft.MemoryStorage, error) {
	s := raft.NewMemoryStorage()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	for {
		kind, err := r.ReadByte()
		if err == io.EOF {
			return s, nil
		}
		if err != nil {
			return nil, err
		}
		n, err := binary.ReadUvarint(r)
		if err != nil {
			return nil, err
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, err
		}
		switch kind {
		case recHardState:
			var hs raftpb.HardState
			if err := proto.Unmarshal(b, &hs); err != nil {
				return nil, err
			}
			if err := s.SetHardState(&hs); err != nil {
				return nil, err
			}
		case recEntry:
			var e raftpb.Entry
			if err := proto.Unmarshal(b, &e); err != nil {
				return nil, err
			}
			if err := s.Append([]*raftpb.Entry{&e}); err != nil {
				return nil, err
			}
		case recSnapshot:
			var sn raftpb.Snapshot
			if err := proto.Unmarshal(b, &sn); err != nil {
				return nil, err
			}
			if err := s.ApplySnapshot(&sn); err != nil && !errors.Is(err, raft.ErrSnapOutOfDate) {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("wal %s: record type %q", path, kind)
		}
	}
}
