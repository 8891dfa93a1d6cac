package bucketlog

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/raftfsm"
)

// A checkpoint object (version 2): magic, the entry number, the log index
// of its last command, the hash of the entry, then the state machine's
// snapshot after it, then the SHA-256 of everything before. Version 1
// (written before batching) has no log index: it is the entry number.
const (
	checkpointMagicV1 = "ckcp\x01"
	checkpointMagic   = "ckcp\x02"
)

// checkpoint writes the checkpoint of entry n if n is due; a failure is
// logged, not returned (the next due entry writes another).
func (l *Log) checkpoint(ctx context.Context, n uint64) {
	if l.every == 0 || n%l.every != 0 {
		return
	}
	var b bytes.Buffer
	b.WriteString(checkpointMagic)
	_ = binary.Write(&b, binary.BigEndian, n)
	_ = binary.Write(&b, binary.BigEndian, l.index)
	b.Write(l.hash[:])
	if err := l.fsm.Snapshot(&b); err != nil {
		l.log.Warn("bucketlog: checkpoint", "entry", n, "err", err)
		return
	}
	sum := sha256.Sum256(b.Bytes())
	b.Write(sum[:])
	header := bytes.Clone(b.Bytes()[:checkpointHeader])
	err := l.cond.PutIfAbsent(ctx, l.checkpointKey(n), &b)
	if errors.Is(err, blockmerge.ErrExists) {
		// Written: by this very create, whose answer was lost (the
		// client's retry found the object), or by another replica at the
		// same entry. Either way it is the state at entry n, which the
		// header says.
		var same bool
		if same, err = l.checkpointIs(ctx, n, header); err == nil && !same {
			err = fmt.Errorf("%w: another checkpoint of entry %d exists, of another entry hash or log index", ErrCorrupt, n)
		}
	}
	if err != nil {
		l.log.Warn("bucketlog: checkpoint not written", "entry", n, "err", err)
	}
}

// checkpointHeader is the length of a checkpoint's header: its magic, entry
// number, log index and entry hash.
const checkpointHeader = len(checkpointMagic) + 8 + 8 + 32

// checkpointIs reports whether the stored checkpoint of entry n begins
// with header.
func (l *Log) checkpointIs(ctx context.Context, n uint64, header []byte) (bool, error) {
	rc, err := l.store.GetRange(ctx, l.checkpointKey(n), 0, int64(len(header)))
	if err != nil {
		return false, fmt.Errorf("bucketlog: read back checkpoint %d: %w", n, err)
	}
	defer rc.Close()
	got, err := io.ReadAll(io.LimitReader(rc, int64(len(header))))
	if err != nil {
		return false, fmt.Errorf("bucketlog: read back checkpoint %d: %w", n, err)
	}
	return bytes.Equal(got, header), nil
}

// restore restores the newest readable checkpoint, if any.
func (l *Log) restore(ctx context.Context) error {
	cps, err := l.indexes(ctx, "checkpoint")
	if err != nil {
		return err
	}
	for _, n := range slices.Backward(cps) { // newest first
		data, err := l.read(ctx, l.checkpointKey(n))
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
	if len(data) < len(checkpointMagic)+8+32+32 {
		return fmt.Errorf("%w: not a checkpoint", ErrCorrupt)
	}
	v1 := string(data[:len(checkpointMagic)]) == checkpointMagicV1
	if !v1 && string(data[:len(checkpointMagic)]) != checkpointMagic {
		return fmt.Errorf("%w: not a checkpoint of a known version (magic %q)", ErrCorrupt, data[:len(checkpointMagic)])
	}
	body, sum := data[:len(data)-32], data[len(data)-32:]
	if got := sha256.Sum256(body); !bytes.Equal(got[:], sum) {
		return fmt.Errorf("%w: checkpoint checksum", ErrCorrupt)
	}
	rest := body[len(checkpointMagic):]
	if got := binary.BigEndian.Uint64(rest); got != n {
		return fmt.Errorf("%w: checkpoint of entry %d named %d", ErrCorrupt, got, n)
	}
	rest = rest[8:]
	index := n
	if !v1 {
		if len(rest) < 8+32 {
			return fmt.Errorf("%w: checkpoint header", ErrCorrupt)
		}
		index, rest = binary.BigEndian.Uint64(rest), rest[8:]
	}
	var hash [32]byte
	copy(hash[:], rest[:32])
	snap := rest[32:]
	// Check the state on a scratch replica first: a refused checkpoint
	// leaves this replica as it was.
	probe, err := raftfsm.Restore(bytes.NewReader(snap))
	if err != nil {
		return err
	}
	if last, _, _ := probe.LastApplied(); last > index || index < n {
		return fmt.Errorf("%w: checkpoint %d at log index %d holds the state at index %d", ErrCorrupt, n, index, last)
	}
	if err := l.fsm.Restore(bytes.NewReader(snap)); err != nil {
		return err
	}
	l.applied, l.index, l.hash = n, index, hash
	return nil
}

// jump restores the newest checkpoint if it is ahead of this replica
// (WithCatchUpLimit); one that cannot be used is logged and skipped: the
// entries are still there to read.
func (l *Log) jump(ctx context.Context) error {
	cps, err := l.indexes(ctx, "checkpoint")
	if err != nil || len(cps) == 0 || cps[len(cps)-1] <= l.applied {
		return err
	}
	c := cps[len(cps)-1]
	data, err := l.read(ctx, l.checkpointKey(c))
	if err == nil && data != nil {
		err = l.restoreFrom(c, data)
	}
	if err != nil || data == nil {
		l.log.Warn("bucketlog: checkpoint unusable, reading the entries instead", "entry", c, "err", err)
		return nil
	}
	l.stats.Jumps++
	return nil
}
