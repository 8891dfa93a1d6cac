package compactkit

import (
	"fmt"
	"time"

	"github.com/compactkit/compactkit/internal/ident"
)

// Entry is the position and time of the log entry being applied.
//
// Index and Term come from the host's consensus log. Time is the entry's
// time in unix nanoseconds: the state machine's effective time when it
// hands an entry to a component (max(previous time, the time the leader
// stamped on the command), so time never goes backwards even if a new
// leader's clock is behind the old one's); when a host applies an entry,
// the log's own timestamp if it has one (hashicorp/raft's AppendedAt),
// which the state machine uses only for a command that carries no time.
type Entry struct {
	_ struct{} `cbor:",toarray"`
	// Index is the log index of the entry; the first entry has index 1.
	Index uint64
	// Term is the consensus term in which the entry was proposed.
	Term uint64
	// Time is the proposer's timestamp in unix nanoseconds.
	Time int64
}

// Validate reports whether e can be applied: the index must be positive.
func (e Entry) Validate() error {
	if e.Index == 0 {
		return fmt.Errorf("entry: index 0: %w", ident.ErrInconsistent)
	}
	return nil
}

// At returns the entry's time as a [time.Time] in UTC.
func (e Entry) At() time.Time { return time.Unix(0, e.Time).UTC() }

// String formats the entry as index/term@time.
func (e Entry) String() string {
	return fmt.Sprintf("%d/%d@%s", e.Index, e.Term, e.At().Format(time.RFC3339Nano))
}
