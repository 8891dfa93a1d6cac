package embedtest_test

import (
	"errors"
	"testing"

	"pgregory.net/rapid"

	"github.com/compactkit/compactkit/raftfsm/embedtest"
)

// The flaws of the ledger, one per property the check claims.
const (
	countsIndex     flaw = iota + 1 // Section: gives compactkit an index of its own
	readsPast                       // Own state: a buffered reader reads past compactkit's section
	restoresOwnOnly                 // Restored section: restores its own section only
	appliesTwice                    // Replay: applies its own entries delivered again
)

func TestSoundHost(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { embedtest.Check(t, host(0)) })
}

// Each flawed ledger fails the check on some of the first 100 histories.
func TestFlawsCaught(t *testing.T) {
	for name, fl := range map[string]flaw{"Section": countsIndex, "OwnState": readsPast, "RestoredSection": restoresOwnOnly, "Replay": appliesTwice} {
		t.Run(name, func(t *testing.T) {
			h := host(fl)
			for seed := range 100 {
				err := embedtest.Replay(h, embedtest.Histories(h).Example(seed))
				if err != nil {
					if !errors.Is(err, embedtest.ErrBroken) {
						t.Fatalf("failed, but not as broken: %v", err)
					}
					t.Logf("caught at seed %d: %v", seed, err)
					return
				}
			}
			t.Fatal("the flawed host passed 100 histories")
		})
	}
}
