package raftfsm

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/internal/codec"
	"github.com/compactkit/compactkit/policy"
)

// In version 5's compact form a policy is encoded as seven items without
// per-level parts (the bytes of the first release with policies) and as
// eight with them; eight items without any are malformed. The full form
// is eleven items, whatever the policy.
func TestPolicyRecordLevels(t *testing.T) {
	compact := codec.Default.Compact()
	plain := policy.Tenant{Class: policy.Low, MaxInProgress: 3, StaleAfter: time.Minute}
	withLevels := plain
	withLevels.Levels = []policy.Level{{Level: 0, MaxBlocks: 8, MaxAge: time.Minute}, {Level: 2, MaxBytes: 1 << 20, CrossShard: policy.On}}
	withRuns := plain
	withRuns.LevelRuns = []policy.LevelRun{{Level: 1, Run: policy.RunPolicy{Mode: policy.OnlyIn, Windows: []policy.Window{{Days: policy.EveryDay, Start: 60, End: 120}}}}}
	both := withLevels
	both.LevelRuns = withRuns.LevelRuns
	withShards := plain
	withShards.ShardPressure = policy.Thresholds{SlowBlocks: policy.Limit{On: 10, Off: 5}}
	withShardCap := plain
	withShardCap.MaxInProgressPerShard = 2
	for _, p := range []policy.Tenant{plain, withLevels, withRuns, both, withShards, withShardCap} {
		extras := len(p.Levels) > 0 || len(p.LevelRuns) > 0 || p.ShardPressure != (policy.Thresholds{}) || p.MaxInProgressPerShard > 0
		for c, items := range map[*codec.Codec]byte{compact: map[bool]byte{false: 0x87, true: 0x88}[extras], codec.Default: 0x8b} {
			rec := recordPolicy(&p)
			data, err := c.Marshal(&rec)
			require.NoError(t, err)
			require.Equal(t, items, data[0], "array of seven or eight items, or eleven")
			var r policyRec
			require.NoError(t, c.Unmarshal(data, &r))
			require.True(t, p.Equal(r.policy()), "%+v", r.policy())
		}
	}
	// The seven items are the first seven fields alone.
	rec := recordPolicy(&plain)
	first := []any{rec.Class, rec.MaxInProgress, rec.Mode, rec.Windows, rec.NotBefore, rec.Pressure, rec.StaleAfter}
	short, err := codec.Default.Marshal(first)
	require.NoError(t, err)
	data, err := compact.Marshal(&rec)
	require.NoError(t, err)
	require.Equal(t, short, data)

	// Eight items whose extras are empty are malformed.
	for _, levels := range [][]levelRec{nil, {}} {
		bad, err := codec.Default.Marshal(append(first, []any{levels, []levelRunRec{}, [8]int64{}, uint32(0)}))
		require.NoError(t, err)
		var r policyRec
		require.ErrorIs(t, compact.Unmarshal(bad, &r), ck.ErrMalformed)
	}
}

// clockFSM is a state machine fed commands one entry each, at a log time
// the test moves: 22:00 UTC at first.
type clockFSM struct {
	t     *testing.T
	f     *FSM
	now   int64
	index uint64
}

func newClockFSM(t *testing.T) *clockFSM {
	f, err := New(DefaultConfig())
	require.NoError(t, err)
	return &clockFSM{t: t, f: f, now: time.Date(2026, 11, 25, 22, 0, 0, 0, time.UTC).UnixNano()}
}

func (c *clockFSM) apply(cmd *Command) {
	c.t.Helper()
	data, err := c.f.Encode(cmd, c.now)
	require.NoError(c.t, err)
	c.index++
	_, err = c.f.Apply(ck.Entry{Index: c.index, Term: 1, Time: c.now}, data)
	require.NoError(c.t, err)
}

// add queues one block of the tenant at the level.
func (c *clockFSM) add(tenant string, level uint32) {
	c.t.Helper()
	id := fmt.Sprintf("%s-%d-%d", tenant, level, c.index)
	c.apply(&Command{AddBlocks: &AddBlocks{Blocks: []ck.BlockMeta{{ID: id, Tenant: tenant, Level: level,
		MinTime: c.now, MaxTime: c.now, Size: 1, Datasets: []ck.DatasetMeta{{Name: "d", Size: 1, Records: 1, MinTime: c.now, MaxTime: c.now}}}}}})
}

// testNight closes from 22:00 to 23:00 UTC every day.
var testNight = policy.RunPolicy{Mode: policy.NeverIn, Windows: []policy.Window{{Days: policy.EveryDay, Start: 22 * 60, End: 23 * 60}}}

// The planner holds the tenants a policy closes — the default's as well
// as their own — with the blocks they have and those that arrive while
// closed, and releases them when the window opens; a tenant with an open
// policy of its own is never held.
func TestPlannerHoldsClosedTenants(t *testing.T) {
	c := newClockFSM(t)
	held := func() []string {
		var out []string
		for _, tn := range []string{"a", "b", "c", "own"} {
			if all, _ := c.f.st.planner.Hold(tn); all {
				require.True(t, c.f.st.plannerHeld[tn].all, tn)
				out = append(out, tn)
			}
		}
		return out
	}
	c.add("a", 0)
	c.add("own", 0)
	c.apply(&Command{Policy: &PolicyCommand{Action: PolicySet, Tenant: "own", Policy: &policy.Tenant{}}})
	c.apply(&Command{Policy: &PolicyCommand{Action: PolicySet, All: true, Policy: &policy.Tenant{Run: testNight}}})
	require.Equal(t, []string{"a"}, held())
	c.add("b", 0) // new while closed
	require.Equal(t, []string{"a", "b"}, held())
	// c's own policy closes it too; cleared, the default closes it.
	c.apply(&Command{Policy: &PolicyCommand{Action: PolicySet, Tenant: "c", Policy: &policy.Tenant{NotBefore: c.now + int64(2*time.Hour)}}})
	require.Equal(t, []string{"a", "b", "c"}, held())
	c.apply(&Command{Policy: &PolicyCommand{Action: PolicyClear, Tenant: "c"}})
	require.Equal(t, []string{"a", "b", "c"}, held(), "closed by the default now")
	c.add("c", 0)
	require.Equal(t, []string{"a", "b", "c"}, held())
	// At 23:00 the window ends: judged at the next entry, everyone is released.
	c.now += int64(time.Hour) + 1
	c.add("own", 0)
	require.Empty(t, held())
	require.Empty(t, c.f.st.plannerHeld)
}

// The planner holds the levels a level window closes, the default's as
// well as a tenant's own, and releases them when the window opens.
func TestPlannerHoldsClosedLevels(t *testing.T) {
	c := newClockFSM(t)
	c.add("a", 0)
	c.add("own", 1)
	// own closes its level 1; the default, level 0 of everyone else.
	c.apply(&Command{Policy: &PolicyCommand{Action: PolicySet, Tenant: "own", Policy: &policy.Tenant{LevelRuns: []policy.LevelRun{{Level: 1, Run: testNight}}}}})
	c.apply(&Command{Policy: &PolicyCommand{Action: PolicySet, All: true, Policy: &policy.Tenant{LevelRuns: []policy.LevelRun{{Level: 0, Run: testNight}}}}})
	levels := func(tn string) uint64 {
		all, levels := c.f.st.planner.Hold(tn)
		require.False(t, all, tn)
		require.Equal(t, levels, c.f.st.plannerHeld[tn].levels, tn)
		return levels
	}
	require.Equal(t, uint64(1), levels("a"))
	require.Equal(t, uint64(2), levels("own"))
	c.add("b", 1) // new while level 0 is closed: held there
	require.Equal(t, uint64(1), levels("b"))
	c.now += int64(time.Hour) + 1
	c.add("b", 0)
	for _, tn := range []string{"a", "b", "own"} {
		require.Zero(t, levels(tn), tn)
	}
	require.Empty(t, c.f.st.plannerHeld)
}
