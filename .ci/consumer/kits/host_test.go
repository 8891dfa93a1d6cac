package kits

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"testing"

	"pgregory.net/rapid"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/compactkittest"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/raftfsm/embedtest"
	"github.com/compactkit/compactkit/worker"
	"github.com/compactkit/compactkit/worker/runnertest"
)

// counter is a host state machine with compactkit's state beside a count
// of its own entries. Entries open with a tag: 'c' for compactkit's, 'n'
// for its own. Its snapshot is its own count, length-prefixed, then
// compactkit's section.
type counter struct {
	fsm *raftfsm.FSM
	own struct{ Applied, Count uint64 }
}

func (c *counter) Compaction() *raftfsm.FSM { return c.fsm }

func (c *counter) Apply(index, term uint64, at int64, data []byte) error {
	if len(data) == 0 {
		return errors.New("counter: empty entry")
	}
	switch data[0] {
	case 'c':
		_, err := c.fsm.Apply(ck.Entry{Index: index, Term: term, Time: at}, data[1:])
		return err
	case 'n':
		if index > c.own.Applied {
			c.own.Applied, c.own.Count = index, c.own.Count+1
		}
		return nil
	}
	return fmt.Errorf("counter: tag %q", data[0])
}

func (c *counter) Snapshot(w io.Writer) error {
	own, err := json.Marshal(c.own)
	if err != nil {
		return err
	}
	if err := binary.Write(w, binary.BigEndian, uint32(len(own))); err != nil {
		return err
	}
	if _, err := w.Write(own); err != nil {
		return err
	}
	return c.fsm.Snapshot(w)
}

func (c *counter) Restore(r io.Reader) error {
	var n uint32
	if err := binary.Read(r, binary.BigEndian, &n); err != nil {
		return err
	}
	own := make([]byte, n)
	if _, err := io.ReadFull(r, own); err != nil {
		return err
	}
	if err := json.Unmarshal(own, &c.own); err != nil {
		return err
	}
	return c.fsm.Restore(r)
}

// The embedding check on a host built outside the repository.
func TestEmbedding(t *testing.T) {
	h := embedtest.Host{
		New: func(cfg raftfsm.Config) (embedtest.Replica, error) {
			f, err := raftfsm.New(cfg)
			return &counter{fsm: f}, err
		},
		Envelope: func(cmd []byte) []byte { return append([]byte{'c'}, cmd...) },
		Own:      rapid.Just([]byte("n")),
		Equal: func(a, b embedtest.Replica) error {
			if x, y := a.(*counter).own, b.(*counter).own; x != y {
				return fmt.Errorf("own state %+v, restored %+v", x, y)
			}
			return nil
		},
	}
	rapid.Check(t, func(t *rapid.T) { embedtest.Check(t, h) })
}

// The runner conformance suite on blockmerge's merge.
func TestRunner(t *testing.T) {
	runnertest.Run(t, runnertest.BlockmergeFormat(worker.RunnerFunc(
		func(ctx context.Context, store blockmerge.Store, plan *ck.JobPlan, token fencing.Token) ([]ck.BlockMeta, error) {
			return blockmerge.Merge(ctx, store, plan, token)
		})))
}

// The public generators in a property of the consumer's own.
func TestGeneratedBlocksValidate(t *testing.T) {
	space := compactkittest.Space{Tenants: []string{"a", "b"}, Shards: []uint32{0, 3}, Levels: []uint32{0, 1}}
	rapid.Check(t, func(t *rapid.T) {
		b := compactkittest.Block(space).Draw(t, "block")
		if err := b.Validate(); err != nil {
			t.Fatalf("a generated block does not validate: %v", err)
		}
	})
}
