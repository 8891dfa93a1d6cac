package hraft_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"pgregory.net/rapid"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/raftfsm"
	"github.com/compactkit/compactkit/raftfsm/embedtest"
	"github.com/compactkit/compactkit/raftfsm/hraft"
)

// The tag byte that opens every entry of kvFSM's log says whose it is.
const (
	tagKV         = 'k' // a key/value write: tagKV, key, '=', value
	tagCompaction = 'c' // a compactkit command: tagCompaction, command bytes
)

// kvFSM is a host's own raft.FSM: a key/value store that also holds
// compactkit's state, entries routed by their tag byte, one snapshot
// holding both sections of the same index.
type kvFSM struct {
	compaction *raftfsm.FSM

	mu       sync.Mutex
	kv       map[string]string
	restores int    // snapshots restored
	applied  uint64 // index of the last command applied
}

func newKVFSM(cfg raftfsm.Config) (*kvFSM, error) {
	f, err := raftfsm.New(cfg)
	if err != nil {
		return nil, err
	}
	return &kvFSM{compaction: f, kv: map[string]string{}}, nil
}

// lastApplied returns the index of the last command applied.
func (f *kvFSM) lastApplied() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.applied
}

// get reads a key.
func (f *kvFSM) get(k string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.kv[k]
	return v, ok
}

// withTag is the service's envelope: compactkit's commands under their tag.
func withTag(cmd []byte) []byte { return append([]byte{tagCompaction}, cmd...) }

// Apply routes an entry by its tag. For a compactkit entry it returns what
// raftfsm.FSM.Apply returned, as the service expects.
func (f *kvFSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand || len(l.Data) == 0 {
		return nil
	}
	f.mu.Lock()
	f.applied = l.Index
	f.mu.Unlock()
	switch l.Data[0] {
	case tagCompaction:
		e := ck.Entry{Index: l.Index, Term: l.Term}
		if !l.AppendedAt.IsZero() {
			e.Time = max(l.AppendedAt.UnixNano(), 0)
		}
		res, err := f.compaction.Apply(e, l.Data[1:])
		if err != nil {
			return err // the command changed nothing; every replica agrees
		}
		return res
	case tagKV:
		k, v, ok := cut(string(l.Data[1:]))
		if !ok {
			return errors.New("kv: malformed write")
		}
		f.mu.Lock()
		f.kv[k] = v
		f.mu.Unlock()
		return nil
	}
	return fmt.Errorf("kv: unknown tag %q", l.Data[0])
}

func cut(s string) (k, v string, ok bool) {
	for i := range len(s) {
		if s[i] == '=' {
			return s[:i], s[i+1:], true
		}
	}
	return "", "", false
}

// Snapshot captures both sections under raft's FSM lock — no entry is
// applied meanwhile, so they are of the same index — and writes them
// later, in Persist.
func (f *kvFSM) Snapshot() (raft.FSMSnapshot, error) {
	c, err := f.compaction.Capture()
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	kv := maps.Clone(f.kv)
	f.mu.Unlock()
	return &kvSnapshot{kv: kv, c: c}, nil
}

// Restore reads the key/value section (length-prefixed), then compactkit's.
func (f *kvFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	r := bufio.NewReader(rc)
	var n uint64
	if err := binary.Read(r, binary.BigEndian, &n); err != nil {
		return fmt.Errorf("kv: restore: %w", err)
	}
	kv := map[string]string{}
	if err := json.NewDecoder(io.LimitReader(r, int64(n))).Decode(&kv); err != nil {
		return fmt.Errorf("kv: restore: %w", err)
	}
	if err := f.compaction.Restore(r); err != nil {
		return err
	}
	f.mu.Lock()
	f.kv = kv
	f.restores++
	f.mu.Unlock()
	return nil
}

// snapshotBytes returns what Persist would write now.
func (f *kvFSM) snapshotBytes() ([]byte, error) {
	s, err := f.Snapshot()
	if err != nil {
		return nil, err
	}
	defer s.Release()
	var b bytes.Buffer
	err = s.(*kvSnapshot).write(&b)
	return b.Bytes(), err
}

type kvSnapshot struct {
	kv map[string]string
	c  *raftfsm.Capture
}

func (s *kvSnapshot) write(w io.Writer) error {
	kv, err := json.Marshal(s.kv) // sorted keys: deterministic bytes
	if err != nil {
		return err
	}
	if err := binary.Write(w, binary.BigEndian, uint64(len(kv))); err != nil {
		return err
	}
	if _, err := w.Write(kv); err != nil {
		return err
	}
	return s.c.Snapshot(w)
}

func (s *kvSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := s.write(sink); err != nil {
		return errors.Join(err, sink.Cancel())
	}
	return sink.Close()
}

func (s *kvSnapshot) Release() { s.c.Close() }

// kvReplica is kvFSM as package embedtest drives it: entries as raft
// delivers them, the snapshot as Persist writes it.
type kvReplica struct{ *kvFSM }

func (r kvReplica) Apply(index, term uint64, at int64, data []byte) error {
	res := r.kvFSM.Apply(&raft.Log{Index: index, Term: term, Type: raft.LogCommand, Data: data, AppendedAt: time.Unix(0, at)})
	if err, ok := res.(error); ok {
		return err
	}
	return nil
}

func (r kvReplica) Snapshot(w io.Writer) error {
	b, err := r.snapshotBytes()
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

func (r kvReplica) Restore(rd io.Reader) error { return r.kvFSM.Restore(io.NopCloser(rd)) }

func (r kvReplica) Compaction() *raftfsm.FSM { return r.compaction }

// kvHost is what the embedding check needs of the host: its replicas, its
// envelope, its own entries and an equality of its own state.
func kvHost() embedtest.Host {
	return embedtest.Host{
		New: func(cfg raftfsm.Config) (embedtest.Replica, error) {
			f, err := newKVFSM(cfg)
			return kvReplica{f}, err
		},
		Envelope: withTag,
		Own: rapid.Custom(func(t *rapid.T) []byte {
			k := rapid.SampledFrom([]string{"user:1", "user:2"}).Draw(t, "key")
			return []byte(string(rune(tagKV)) + k + "=" + rapid.StringMatching(`[a-z]{0,4}`).Draw(t, "value"))
		}),
		Equal: func(a, b embedtest.Replica) error {
			x, y := a.(kvReplica), b.(kvReplica)
			x.mu.Lock()
			defer x.mu.Unlock()
			y.mu.Lock()
			defer y.mu.Unlock()
			if !maps.Equal(x.kv, y.kv) {
				return fmt.Errorf("key/value store %v, restored %v", x.kv, y.kv)
			}
			return nil
		},
	}
}

// The key/value host passes the embedding check on generated histories.
func TestKVHostEmbedding(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { embedtest.Check(t, kvHost()) })
}

// A host's own raft FSM holding a key/value store and compactkit's state:
// entries are routed by a tag byte, and the service wraps compactkit's
// commands in that tag. The host's tests check the embedding — routing,
// the combined snapshot, restores — with package embedtest, as the end of
// the example does on three histories.
func ExampleWithEnvelope() {
	fsm, err := newKVFSM(raftfsm.DefaultConfig())
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := hraft.FastConfig("n1")
	cfg.LocalID = "n1"
	store := raft.NewInmemStore()
	addr, trans := raft.NewInmemTransport("")
	r, err := raft.NewRaft(cfg, fsm, store, store, raft.NewInmemSnapshotStore(), trans)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Shutdown()
	if err := r.BootstrapCluster(raft.Configuration{Servers: []raft.Server{{ID: "n1", Address: addr}}}).Error(); err != nil {
		fmt.Println(err)
		return
	}
	svc := hraft.NewService(r, fsm.compaction, hraft.WithEnvelope(withTag))
	defer svc.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The host's own writes go through raft as before.
	for !svc.IsLeader() {
		time.Sleep(10 * time.Millisecond)
	}
	if err := r.Apply([]byte("kuser:42=ada"), time.Second).Error(); err != nil {
		fmt.Println(err)
		return
	}
	// compactkit's go through the service, which tags them.
	var blocks []ck.BlockMeta
	for i := range 4 {
		blocks = append(blocks, leadertest.Block(fmt.Sprintf("block-%d", i), "acme", 0, int64(i)*int64(time.Second)))
	}
	if _, err := svc.AddBlocks(ctx, blocks); err != nil {
		fmt.Println(err)
		return
	}
	// Both halves of the state answer: compactkit's through the service's
	// linearizable read, the host's own from its store.
	compaction, err := svc.Read(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	view := compaction.Index()
	fmt.Println("live blocks:", view.Len())
	view.Close()
	v, _ := fsm.get("user:42")
	fmt.Println("user:42 =", v)

	// The embedding check; a test runs it as a rapid property:
	// rapid.Check(t, func(t *rapid.T) { embedtest.Check(t, kvHost()) }).
	h := kvHost()
	for seed := range 3 {
		fmt.Println("embedding:", embedtest.Replay(h, embedtest.Histories(h).Example(seed)))
	}
	// Output:
	// live blocks: 4
	// user:42 = ada
	// embedding: <nil>
	// embedding: <nil>
	// embedding: <nil>
}
