package prom_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/compactkit/compactkit/metrics/prom"
	"github.com/compactkit/compactkit/policy"
	"github.com/compactkit/compactkit/raftfsm"
)

func (n *node) policy(cmd raftfsm.PolicyCommand) *raftfsm.Result {
	n.t.Helper()
	return n.apply(&raftfsm.Command{Policy: &cmd})
}

// A state machine with policies: t1's four blocks reach its stop
// threshold, t2's two its slow one, t3 has none; t1's level 0 is in a
// staleness alarm from t0+60 s.
func policyScenario(t *testing.T) *node {
	n := newNode(t)
	n.policy(raftfsm.PolicyCommand{Action: raftfsm.PolicySet, Tenant: "t1", Policy: &policy.Tenant{
		Pressure: policy.Thresholds{StopBlocks: policy.Limit{On: 3, Off: 2}}, StaleAfter: time.Minute}})
	n.policy(raftfsm.PolicyCommand{Action: raftfsm.PolicySet, Tenant: "t2", Policy: &policy.Tenant{
		Pressure: policy.Thresholds{SlowBlocks: policy.Limit{On: 2, Off: 1}}, ShardPressure: policy.Thresholds{StopBlocks: policy.Limit{On: 2, Off: 1}}}})
	n.addBlocks(blocks("a", "t1", 1, 4, 100)...)
	n.addBlocks(blocks("b", "t2", 1, 2, 50)...)
	n.addBlocks(blocks("c", "t3", 1, 1, 10)...)
	n.advance(90 * time.Second)
	n.apply(&raftfsm.Command{Watermark: &raftfsm.Watermark{OldestReader: t0}}) // an entry at the new time
	return n
}

const policyMetrics = `
# HELP compactkit_shard_pressure Backpressure grade of a shard of a tenant whose grade is not ok (the policy's shard thresholds): 1 slow, 2 stop. Shard 4294967295 holds the keys of levels compacted across shards. Shards graded ok have no series.
# TYPE compactkit_shard_pressure gauge
compactkit_shard_pressure{shard="1",tenant="t2"} 2
# HELP compactkit_stale_alarm_seconds Seconds since a staleness alarm began, at the log's time: the tenant's level has had a block queued for longer than its policy's stale_after. Only levels in alarm have a series.
# TYPE compactkit_stale_alarm_seconds gauge
compactkit_stale_alarm_seconds{level="0",tenant="t1"} 30
# HELP compactkit_tenant_pressure Backpressure grade of a tenant whose grade is not ok: 1 slow (ingest should slow down), 2 stop (ingest should hold back what it can). Tenants graded ok have no series.
# TYPE compactkit_tenant_pressure gauge
compactkit_tenant_pressure{tenant="t1"} 2
compactkit_tenant_pressure{tenant="t2"} 1
`

// The grades that are not ok and the alarms in force, from the state
// machine's replicated state, at the log's time even with a clock.
func TestFSMCollectorPolicies(t *testing.T) {
	n := policyScenario(t)
	st := n.f.Stats()
	require.Len(t, st.Pressure, 2)
	require.Len(t, st.Alarms, 1)
	require.Equal(t, t0+int64(time.Minute), st.Alarms[0].Since)

	c := prom.NewFSMCollector(n.f.Stats)
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(policyMetrics), "compactkit_tenant_pressure", "compactkit_shard_pressure", "compactkit_stale_alarm_seconds"))
	later := prom.NewFSMCollector(n.f.Stats, prom.WithClock(func() time.Time { return time.Unix(0, t0).Add(time.Hour) }))
	require.NoError(t, testutil.CollectAndCompare(later, strings.NewReader(policyMetrics), "compactkit_tenant_pressure", "compactkit_shard_pressure", "compactkit_stale_alarm_seconds"),
		"alarms are judged at the log's time")
	problems, err := testutil.CollectAndLint(c)
	require.NoError(t, err)
	require.Empty(t, problems)

	// Clearing t2's policy takes its thresholds, and its series, away;
	// t1's policy set again a minute later keeps its grade, and its alarm
	// is a minute older.
	n.policy(raftfsm.PolicyCommand{Action: raftfsm.PolicyClear, Tenant: "t2"})
	n.advance(time.Minute)
	n.policy(raftfsm.PolicyCommand{Action: raftfsm.PolicySet, Tenant: "t1", Policy: &policy.Tenant{
		Pressure: policy.Thresholds{StopBlocks: policy.Limit{On: 3, Off: 2}}, StaleAfter: time.Minute}})
	reg, mfs := gather(t, c)
	count, err := testutil.GatherAndCount(reg, "compactkit_tenant_pressure", "compactkit_shard_pressure")
	require.NoError(t, err)
	require.Equal(t, 1, count)
	require.Equal(t, 2.0, value(t, mfs, "compactkit_tenant_pressure", "tenant=t1"))
	require.Equal(t, 90.0, value(t, mfs, "compactkit_stale_alarm_seconds", "level=0", "tenant=t1"))

	// Without policies, neither metric has a series.
	reg, _ = gather(t, prom.NewFSMCollector(newNode(t).f.Stats))
	count, err = testutil.GatherAndCount(reg, "compactkit_tenant_pressure", "compactkit_stale_alarm_seconds")
	require.NoError(t, err)
	require.Zero(t, count)
}

// Repeated entries in the stats make one series each (the highest grade,
// the earliest alarm), so the scrape never fails on duplicates; an OK
// grade makes none.
func TestFSMCollectorPoliciesMerged(t *testing.T) {
	st := raftfsm.Stats{
		Now:      t0 + int64(100*time.Second),
		Pressure: []raftfsm.TenantPressure{{Tenant: "a", Grade: policy.Slow}, {Tenant: "a", Grade: policy.Stop}, {Tenant: "b", Grade: policy.OK}},
		ShardPressure: []raftfsm.ShardPressure{{Tenant: "a", Shard: 3, Grade: policy.Stop}, {Tenant: "a", Shard: 3, Grade: policy.Slow},
			{Tenant: "a", Shard: 4, Grade: policy.OK}},
		Alarms: []raftfsm.StaleAlarm{
			{Tenant: "a", Level: 1, Since: t0 + int64(40*time.Second)}, {Tenant: "a", Level: 1, Since: t0 + int64(10*time.Second)},
			{Tenant: "", Level: 0, Since: t0 + int64(200*time.Second)},
		},
	}
	reg, mfs := gather(t, prom.NewFSMCollector(func() raftfsm.Stats { return st }))
	require.Equal(t, 2.0, value(t, mfs, "compactkit_tenant_pressure", "tenant=a"))
	require.Equal(t, 90.0, value(t, mfs, "compactkit_stale_alarm_seconds", "level=1", "tenant=a"))
	require.Equal(t, 0.0, value(t, mfs, "compactkit_stale_alarm_seconds", "level=0", "tenant="), "an alarm after the log's time reads 0, not negative")
	count, err := testutil.GatherAndCount(reg, "compactkit_tenant_pressure")
	require.NoError(t, err)
	require.Equal(t, 1, count)
	require.Equal(t, 2.0, value(t, mfs, "compactkit_shard_pressure", "shard=3", "tenant=a"))
	count, err = testutil.GatherAndCount(reg, "compactkit_shard_pressure")
	require.NoError(t, err)
	require.Equal(t, 1, count)
}
