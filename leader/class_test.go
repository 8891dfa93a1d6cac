package leader_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/internal/ident"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/policy"
	"github.com/compactkit/compactkit/raftfsm"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want leader.Class
	}{
		{errors.New("disk on fire"), leader.Internal},
		{fmt.Errorf("raftfsm: operator cancel: job name %q: %w", "<script>", ident.ErrInvalidID), leader.Invalid},
		{fmt.Errorf("decode: %w", ck.ErrTruncated), leader.Invalid},
		{fmt.Errorf("poll: %w", raftfsm.ErrLimit), leader.Invalid},
		{fmt.Errorf("set: %w", policy.ErrInvalid), leader.Invalid},
		{fmt.Errorf("cancel: %w", raftfsm.ErrOperator), leader.Conflict},
		{fmt.Errorf("window: %w", policy.ErrNeverOpens), leader.Conflict},
		{fmt.Errorf("v6 only: %w", raftfsm.ErrClusterVersion), leader.Conflict},
		// The state machine reports these refusals as invalid commands too.
		{fmt.Errorf("policy set: %w: policy: %w", raftfsm.ErrInvalidCommand, policy.ErrNeverOpens), leader.Conflict},
		{fmt.Errorf("policy set: %w: %w", raftfsm.ErrInvalidCommand, raftfsm.ErrClusterVersion), leader.Conflict},
		{&leader.NotLeaderError{LeaderID: "n2", LeaderAddr: "127.0.0.1:1"}, leader.NotLeader},
		{&leader.NotLeaderError{Cause: errors.New("raft: shutdown")}, leader.NotLeader},
		{fmt.Errorf("apply: %w", leader.ErrOutcomeUnknown), leader.Unavailable},
		{fmt.Errorf("poll: %w", context.DeadlineExceeded), leader.Unavailable},
		{leader.ErrClosed, leader.Unavailable},
	} {
		if got := leader.Classify(tc.err); got != tc.want {
			t.Errorf("Classify(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func ExampleClassify() {
	err := fmt.Errorf("raftfsm: operator cancel: job name %q: %w", "<script>", ident.ErrInvalidID)
	fmt.Println(leader.Classify(err))
	// Output: invalid
}
