package bucketlog

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/compactkit/compactkit/raftfsm"
)

// A checkpoint object: magic, index, the hash of entry index, then the
// state machine's snapshot at index, then the SHA-256 of everything before.
const checkpointMagic = "ckcp\x01"

// checkpoint writes the checkpoint of entry n if n is due; a failure is
// logged, not returned (the next due entry writes another).
func (l *Log) checkpoint(ctx context.Context, n uint64) {
	if l.every == 0 || n%l.every != 0 {
		return
	}
	var b bytes.Buffer
	b.WriteString(checkpointMagic)
	_ = binary.Write(&b, binary.BigEndian, n)
	b.Write(l.hash[:])
	if err := l.fsm.Snapshot(&b); err != nil {
		l.log.Warn("bucketlog: checkpoint", "entry", n, "err", err)
		return
	}
	sum := sha256.Sum256(b.Bytes())
	b.Write(sum[:])
	if err := l.cond.PutIfAbsent(ctx, l.checkpointKey(n), &b); err != nil {
		l.log.Warn("bucketlog: checkpoint not written", "entry", n, "err", err)
	}
}

// restore restores the newest readable checkpoint, if any.
func (l *Log) restore(ctx context.Context) error {
	var keys []string
	if err := l.store.List(ctx, l.prefix+"/checkpoint/", func(k string) error { keys = append(keys, k); return nil }); err != nil {
		return fmt.Errorf("bucketlog: list checkpoints: %w", err)
	}
	slices.Reverse(keys) // newest first: the names sort by index
	for _, k := range keys {
		n, err := strconv.ParseUint(strings.TrimPrefix(k, l.prefix+"/checkpoint/"), 10, 64)
		if err != nil {
			continue
		}
		data, err := l.read(ctx, k)
		if err == nil && data != nil {
			err = l.restoreFrom(n, data)
			if err == nil {
				l.log.Info("bucketlog: restored a checkpoint", "entry", n)
				return nil
			}
		}
		l.log.Warn("bucketlog: checkpoint unusable, trying an older one", "entry", n, "err", err)
	}
	return nil // replay from entry 1
}

func (l *Log) restoreFrom(n uint64, data []byte) error {
	if len(data) < len(checkpointMagic)+8+32+32 || string(data[:len(checkpointMagic)]) != checkpointMagic {
		return fmt.Errorf("%w: not a checkpoint", ErrCorrupt)
	}
	body, sum := data[:len(data)-32], data[len(data)-32:]
	if got := sha256.Sum256(body); !bytes.Equal(got[:], sum) {
		return fmt.Errorf("%w: checkpoint checksum", ErrCorrupt)
	}
	rest := body[len(checkpointMagic):]
	if binary.BigEndian.Uint64(rest) != n {
		return fmt.Errorf("%w: checkpoint of entry %d named %d", ErrCorrupt, binary.BigEndian.Uint64(rest), n)
	}
	var hash [32]byte
	copy(hash[:], rest[8:40])
	// Check the state on a scratch replica first: a refused checkpoint
	// leaves this replica as it was.
	probe, err := raftfsm.Restore(bytes.NewReader(rest[40:]))
	if err != nil {
		return err
	}
	if last, _, _ := probe.LastApplied(); last > n {
		return fmt.Errorf("%w: checkpoint %d holds the state at entry %d", ErrCorrupt, n, last)
	}
	if err := l.fsm.Restore(bytes.NewReader(rest[40:])); err != nil {
		return err
	}
	l.applied, l.hash = n, hash
	return nil
}
