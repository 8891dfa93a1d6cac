package embedtest_test

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"strconv"
	"strings"

	"pgregory.net/rapid"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/raftfsm/embedtest"
)

// ledger is a host's state machine: a key/value store and a count of the
// writes, beside compactkit's state. Its log entries open with a tag byte:
// 'c' for compactkit's commands, 'k' for its own writes ("key=value").
// Its snapshot is its own section, length-prefixed, then compactkit's.
type ledger struct {
	compaction *raftfsm.FSM
	own        ledgerState
	flaw       flaw
}

type ledgerState struct {
	Applied uint64            // index of the last own entry applied
	Writes  int               // own writes applied
	KV      map[string]string // the store
}

// flaw breaks one property (embedtest_test.go checks that the check
// catches each); 0 is none.
type flaw int

// The flaws of the ledger, one per property the check claims.
const (
	countsIndex     flaw = iota + 1 // Section: gives compactkit an index of its own
	readsPast                       // Own state: a buffered reader reads past compactkit's section
	restoresOwnOnly                 // Restored section: restores its own section only
	appliesTwice                    // Replay: applies its own entries delivered again
)

func newLedger(cfg raftfsm.Config) (*ledger, error) {
	f, err := raftfsm.New(cfg)
	if err != nil {
		return nil, err
	}
	return &ledger{compaction: f, own: ledgerState{KV: map[string]string{}}}, nil
}

func (l *ledger) Compaction() *raftfsm.FSM { return l.compaction }

func (l *ledger) Apply(index, term uint64, at int64, data []byte) error {
	if len(data) == 0 {
		return errors.New("ledger: empty entry")
	}
	switch data[0] {
	case 'c':
		if l.flaw == countsIndex {
			index = l.own.Applied + 1000 // an index of its own
		}
		_, err := l.compaction.Apply(ck.Entry{Index: index, Term: term, Time: at}, data[1:])
		return err
	case 'k':
		if index <= l.own.Applied && l.flaw != appliesTwice {
			return nil // delivered again: applied already
		}
		k, v, ok := strings.Cut(string(data[1:]), "=")
		if !ok {
			return errors.New("ledger: malformed write")
		}
		l.own.KV[k] = v
		l.own.Writes++
		l.own.Applied = index
		return nil
	}
	return fmt.Errorf("ledger: unknown tag %q", data[0])
}

func (l *ledger) Snapshot(w io.Writer) error {
	own, err := json.Marshal(l.own)
	if err != nil {
		return err
	}
	if l.flaw == readsPast { // compactkit's section first
		if err := l.compaction.Snapshot(w); err != nil {
			return err
		}
	}
	if err := binary.Write(w, binary.BigEndian, uint64(len(own))); err != nil {
		return err
	}
	if _, err := w.Write(own); err != nil {
		return err
	}
	if l.flaw == readsPast {
		return nil
	}
	return l.compaction.Snapshot(w)
}

func (l *ledger) Restore(r io.Reader) error {
	if l.flaw == readsPast {
		// compactkit's section through a buffered reader, which reads
		// on past its end; the own section is then read from r.
		if err := l.compaction.Restore(bufio.NewReader(r)); err != nil {
			return err
		}
	}
	var n uint64
	if err := binary.Read(r, binary.BigEndian, &n); err != nil {
		if l.flaw == readsPast && errors.Is(err, io.EOF) {
			l.own = ledgerState{KV: map[string]string{}} // "nothing of ours"
			return nil
		}
		return err
	}
	own := ledgerState{}
	if err := json.NewDecoder(io.LimitReader(r, int64(n))).Decode(&own); err != nil {
		return err
	}
	if own.KV == nil {
		own.KV = map[string]string{}
	}
	if l.flaw != restoresOwnOnly && l.flaw != readsPast {
		if err := l.compaction.Restore(r); err != nil {
			return err
		}
	}
	l.own = own
	return nil
}

// host is the ledger's side of the check.
func host(fl flaw) embedtest.Host {
	return embedtest.Host{
		New: func(cfg raftfsm.Config) (embedtest.Replica, error) {
			l, err := newLedger(cfg)
			if l != nil {
				l.flaw = fl
			}
			return l, err
		},
		Envelope: func(cmd []byte) []byte { return append([]byte{'c'}, cmd...) },
		Own: rapid.Custom(func(t *rapid.T) []byte {
			k := rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, "key")
			return []byte("k" + k + "=" + strconv.Itoa(rapid.IntRange(0, 9).Draw(t, "value")))
		}),
		Equal: func(a, b embedtest.Replica) error {
			x, y := a.(*ledger).own, b.(*ledger).own
			if x.Applied != y.Applied || x.Writes != y.Writes || !maps.Equal(x.KV, y.KV) {
				return fmt.Errorf("%+v, restored %+v", x, y)
			}
			return nil
		},
	}
}

// A host checks its embedding on generated histories; in its tests:
//
//	func TestEmbedding(t *testing.T) {
//		rapid.Check(t, func(t *rapid.T) { embedtest.Check(t, host) })
//	}
//
// Here, on a few histories drawn outside a test.
func Example() {
	h := host(0)
	for seed := range 3 {
		hist := embedtest.Histories(h).Example(seed)
		fmt.Println(embedtest.Replay(h, hist))
	}
	// Output:
	// <nil>
	// <nil>
	// <nil>
}
