package bucketlogtest

import (
	"bytes"
	"context"
	"testing"

	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/bucketlog"
	"github.com/compactkit/compactkit/raftfsm"
)

// SameOnOpen opens another coordinator of the log under prefix in store,
// with a new state machine of cfg, and fails the test unless, caught up,
// it is at l's entry with a snapshot byte-identical to fsm's (l's state
// machine): what a coordinator reads from the bucket — checkpoints and
// entries — is what l applied.
func SameOnOpen(t testing.TB, store blockmerge.Store, prefix string, cfg raftfsm.Config, l *bucketlog.Log, fsm *raftfsm.FSM) {
	t.Helper()
	other, err := raftfsm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lo, err := bucketlog.Open(context.Background(), store, prefix, other, "same-on-open")
	if err != nil {
		t.Fatal(err)
	}
	if lo.Applied() != l.Applied() {
		t.Fatalf("a coordinator opening the log is at entry %d, the log's at %d", lo.Applied(), l.Applied())
	}
	var a, b bytes.Buffer
	if err := fsm.Snapshot(&a); err != nil {
		t.Fatal(err)
	}
	if err := other.Snapshot(&b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatalf("a coordinator opening the log holds another state than the log's (snapshots of %d and %d bytes differ)", b.Len(), a.Len())
	}
}

// Config is the replicated configuration of the package's runs: the
// default, with batches of four blocks at every level, so that a few
// hundred blocks make jobs at several levels.
func Config() raftfsm.Config {
	cfg := raftfsm.DefaultConfig()
	for i := range cfg.Planner.Levels {
		cfg.Planner.Levels[i].MaxBlocks = 4
	}
	return cfg
}
