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

// A policy is encoded as seven items without per-level parts (the bytes
// of the first release with policies) and as eight with them; eight items
// without any are malformed.
func TestPolicyRecordLevels(t *testing.T) {
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
		data, err := codec.Default.Marshal(recordPolicy(&p))
		require.NoError(t, err)
		extras := len(p.Levels) > 0 || len(p.LevelRuns) > 0 || p.ShardPressure != (policy.Thresholds{}) || p.MaxInProgressPerShard > 0
		require.Equal(t, map[bool]byte{false: 0x87, true: 0x88}[extras], data[0], "array of seven or eight items")
		var r policyRec
		require.NoError(t, codec.Default.Unmarshal(data, &r))
		require.True(t, p.Equal(r.policy()), "%+v", r.policy())
	}
	// The seven items are those of policyFields alone.
	rec := recordPolicy(&plain)
	short, err := codec.Default.Marshal(&rec.policyFields)
	require.NoError(t, err)
	data, err := codec.Default.Marshal(recordPolicy(&plain))
	require.NoError(t, err)
	require.Equal(t, short, data)

	f := recordPolicy(&plain).policyFields
	for _, levels := range [][]levelRec{nil, {}} {
		bad, err := codec.Default.Marshal(&policyWithLevels{Class: f.Class, MaxInProgress: f.MaxInProgress, Extras: policyExtras{Levels: levels}})
		require.NoError(t, err)
		var r policyRec
		require.ErrorIs(t, codec.Default.Unmarshal(bad, &r), ck.ErrMalformed)
	}
}

// The planner holds the tenants a policy closes — the default's as well
// as their own — with the blocks they have and those that arrive while
// closed, and releases them when the window opens; a tenant with an open
// policy of its own is never held.
func TestPlannerHoldsClosedTenants(t *testing.T) {
	f, err := New(DefaultConfig())
	require.NoError(t, err)
	now := time.Date(2026, 11, 25, 22, 0, 0, 0, time.UTC).UnixNano()
	index := uint64(0)
	apply := func(c *Command) {
		t.Helper()
		data, err := f.Encode(c, now)
		require.NoError(t, err)
		index++
		_, err = f.Apply(ck.Entry{Index: index, Term: 1, Time: now}, data)
		require.NoError(t, err)
	}
	add := func(tenant string) {
		apply(&Command{AddBlocks: &AddBlocks{Blocks: []ck.BlockMeta{{ID: tenant + "-b" + time.Unix(0, now).Format("150405"), Tenant: tenant,
			MinTime: now, MaxTime: now, Size: 1, Datasets: []ck.DatasetMeta{{Name: "d", Size: 1, Records: 1, MinTime: now, MaxTime: now}}}}}})
	}
	held := func() []string {
		var out []string
		for _, tn := range []string{"a", "b", "c", "own"} {
			if f.st.planner.Held(tn) {
				require.True(t, f.st.plannerHeld[tn].all, tn)
				out = append(out, tn)
			}
		}
		return out
	}
	add("a")
	add("own")
	apply(&Command{Policy: &PolicyCommand{Action: PolicySet, Tenant: "own", Policy: &policy.Tenant{}}})
	// The default closes from 22:00 to 23:00 UTC, now.
	apply(&Command{Policy: &PolicyCommand{Action: PolicySet, All: true, Policy: &policy.Tenant{
		Run: policy.RunPolicy{Mode: policy.NeverIn, Windows: []policy.Window{{Days: policy.EveryDay, Start: 22 * 60, End: 23 * 60}}}}}})
	require.Equal(t, []string{"a"}, held())
	add("b") // new while closed
	require.Equal(t, []string{"a", "b"}, held())
	// c's own policy closes it too; clearing it returns it to the default.
	apply(&Command{Policy: &PolicyCommand{Action: PolicySet, Tenant: "c", Policy: &policy.Tenant{NotBefore: now + int64(2*time.Hour)}}})
	require.Equal(t, []string{"a", "b", "c"}, held())
	apply(&Command{Policy: &PolicyCommand{Action: PolicyClear, Tenant: "c"}})
	require.Equal(t, []string{"a", "b", "c"}, held(), "closed by the default now")
	add("c")
	require.Equal(t, []string{"a", "b", "c"}, held())
	// At 23:00 the window ends: judged at the next entry, everyone is released.
	now += int64(time.Hour) + 1
	add("own")
	require.Empty(t, held())
	require.Empty(t, f.st.plannerHeld)
}

// The planner holds the levels a level window closes, the default's as
// well as a tenant's own, and releases them when the window opens.
func TestPlannerHoldsClosedLevels(t *testing.T) {
	f, err := New(DefaultConfig())
	require.NoError(t, err)
	now := time.Date(2026, 11, 25, 22, 0, 0, 0, time.UTC).UnixNano()
	index := uint64(0)
	apply := func(c *Command) {
		t.Helper()
		data, err := f.Encode(c, now)
		require.NoError(t, err)
		index++
		_, err = f.Apply(ck.Entry{Index: index, Term: 1, Time: now}, data)
		require.NoError(t, err)
	}
	add := func(tenant string, level uint32) {
		id := fmt.Sprintf("%s-%d-%d", tenant, level, index)
		apply(&Command{AddBlocks: &AddBlocks{Blocks: []ck.BlockMeta{{ID: id, Tenant: tenant, Level: level,
			MinTime: now, MaxTime: now, Size: 1, Datasets: []ck.DatasetMeta{{Name: "d", Size: 1, Records: 1, MinTime: now, MaxTime: now}}}}}})
	}
	night := policy.RunPolicy{Mode: policy.NeverIn, Windows: []policy.Window{{Days: policy.EveryDay, Start: 22 * 60, End: 23 * 60}}}
	add("a", 0)
	add("own", 1)
	// own closes its level 1; the default, level 0 of everyone else.
	apply(&Command{Policy: &PolicyCommand{Action: PolicySet, Tenant: "own", Policy: &policy.Tenant{LevelRuns: []policy.LevelRun{{Level: 1, Run: night}}}}})
	apply(&Command{Policy: &PolicyCommand{Action: PolicySet, All: true, Policy: &policy.Tenant{LevelRuns: []policy.LevelRun{{Level: 0, Run: night}}}}})
	levels := func(tn string) uint64 {
		require.False(t, f.st.planner.Held(tn), tn)
		require.Equal(t, f.st.planner.HeldLevels(tn), f.st.plannerHeld[tn].levels, tn)
		return f.st.planner.HeldLevels(tn)
	}
	require.Equal(t, uint64(1), levels("a"))
	require.Equal(t, uint64(2), levels("own"))
	add("b", 1) // new while level 0 is closed: held there
	require.Equal(t, uint64(1), levels("b"))
	now += int64(time.Hour) + 1
	add("b", 0)
	for _, tn := range []string{"a", "b", "own"} {
		require.Zero(t, levels(tn), tn)
	}
	require.Empty(t, f.st.plannerHeld)
}
