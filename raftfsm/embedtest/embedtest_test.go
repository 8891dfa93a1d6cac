package embedtest_test

import (
	"errors"
	"testing"

	"pgregory.net/rapid"

	"github.com/compactkit/compactkit/raftfsm/embedtest"
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
