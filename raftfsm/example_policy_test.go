package raftfsm_test

import (
	"fmt"
	"slices"
	"strings"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/policy"
	"github.com/compactkit/compactkit/raftfsm"
)

// cluster is the examples' log: one replica, commands applied in order at
// the log's clock.
type cluster struct {
	fsm   *raftfsm.FSM
	now   int64
	index uint64
	seq   map[string]uint64
	n     int
}

// newCluster starts a log on 2026-11-25 (a Wednesday) at 12:00 UTC.
func newCluster() *cluster {
	fsm, err := raftfsm.New(raftfsm.DefaultConfig())
	if err != nil {
		panic(err)
	}
	return &cluster{fsm: fsm, now: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC).UnixNano(), seq: map[string]uint64{}}
}

func (c *cluster) apply(cmd *raftfsm.Command) (*raftfsm.Result, error) {
	data, err := c.fsm.Encode(cmd, c.now)
	if err != nil {
		return nil, err
	}
	c.index++
	return c.fsm.Apply(ck.Entry{Index: c.index, Term: 1, Time: c.now}, data)
}

func (c *cluster) policy(p raftfsm.PolicyCommand) {
	if _, err := c.apply(&raftfsm.Command{Policy: &p}); err != nil {
		panic(err)
	}
}

// add adds n level-0 blocks of a tenant: a full batch is 20 by default.
func (c *cluster) add(tenant string, n int) *raftfsm.Result {
	var bs []ck.BlockMeta
	for range n {
		c.n++
		bs = append(bs, ck.BlockMeta{ID: fmt.Sprintf("b%03d", c.n), Tenant: tenant, MinTime: c.now, MaxTime: c.now, Size: 10,
			Datasets: []ck.DatasetMeta{{Name: "cpu", Size: 10, Records: 1, MinTime: c.now, MaxTime: c.now}}})
	}
	res, err := c.apply(&raftfsm.Command{AddBlocks: &raftfsm.AddBlocks{Blocks: bs}})
	if err != nil {
		panic(err)
	}
	return res
}

// pollResult is a worker's poll with free slots.
func (c *cluster) pollResult(worker string, slots int32) *ck.PollResponse {
	c.seq[worker]++
	cmd, err := c.fsm.Prepare(&ck.PollRequest{WorkerID: worker, Seq: c.seq[worker], FreeSlots: slots}, c.now)
	if err != nil {
		panic(err)
	}
	res, err := c.apply(cmd)
	if err != nil {
		panic(err)
	}
	return res.Poll
}

// poll is a worker's poll with free slots: it returns the tenants of the
// jobs assigned, in order.
func (c *cluster) poll(worker string, slots int32) string {
	var got []string
	for _, j := range c.pollResult(worker, slots).Jobs {
		if j.Outcome == ck.OutcomeAssigned {
			got = append(got, j.Plan.Tenant)
		}
	}
	if len(got) == 0 {
		return "nothing"
	}
	return strings.Join(got, " ")
}

// A priority class orders tenants at the same level, and a cap bounds a
// tenant's jobs in progress: the rest of its jobs wait, and its blocks
// are not even planned, while other tenants go on.
func ExamplePolicyCommand() {
	c := newCluster()
	c.policy(raftfsm.PolicyCommand{Action: raftfsm.PolicySet, Tenant: "batch",
		Policy: &policy.Tenant{Class: policy.Low, MaxInProgress: 1}})
	c.policy(raftfsm.PolicyCommand{Action: raftfsm.PolicySet, Tenant: "web",
		Policy: &policy.Tenant{Class: policy.High}})
	c.add("batch", 60) // three full batches
	c.add("web", 20)
	fmt.Println(c.poll("w1", 4))
	// Output:
	// web batch
}

// A cap per shard bounds a tenant's jobs in progress on each of its
// shards: a busy shard's next batch waits while its other shards go on.
func ExamplePolicyCommand_shardCap() {
	c := newCluster()
	c.policy(raftfsm.PolicyCommand{Action: raftfsm.PolicySet, Tenant: "acme",
		Policy: &policy.Tenant{MaxInProgressPerShard: 1}})
	var bs []ck.BlockMeta
	for i, shard := range slices.Repeat([]uint32{1, 1, 2}, 20) { // two full batches on shard 1, one on 2
		bs = append(bs, ck.BlockMeta{ID: fmt.Sprintf("b%03d", i), Tenant: "acme", Shard: shard, MinTime: c.now, MaxTime: c.now, Size: 10,
			Datasets: []ck.DatasetMeta{{Name: "cpu", Size: 10, Records: 1, MinTime: c.now, MaxTime: c.now}}})
	}
	if _, err := c.apply(&raftfsm.Command{AddBlocks: &raftfsm.AddBlocks{Blocks: bs}}); err != nil {
		panic(err)
	}
	for _, j := range c.pollResult("w1", 4).Jobs {
		fmt.Println("shard", j.Plan.Shard, j.Outcome)
	}
	fmt.Println("then:", c.poll("w2", 4))
	// Output:
	// shard 1 assigned
	// shard 2 assigned
	// then: nothing
}

// A run window: the tenant's new jobs start only from 22:00 to 06:00 UTC.
// It is judged in log time at the first entry past its edge.
func ExamplePolicyCommand_runWindow() {
	c := newCluster()
	c.policy(raftfsm.PolicyCommand{Action: raftfsm.PolicySet, Tenant: "acme", Policy: &policy.Tenant{
		Run: policy.RunPolicy{Mode: policy.OnlyIn, Windows: []policy.Window{{Days: policy.EveryDay, Start: 22 * 60, End: 6 * 60}}}}})
	c.add("acme", 20)
	fmt.Println("12:00", c.poll("w1", 1))
	for range 10 * 60 { // the log's clock moves on: one entry a minute
		c.now += int64(time.Minute)
		c.policy(raftfsm.PolicyCommand{Action: raftfsm.PolicyClear, Tenant: "nobody"})
	}
	fmt.Println("22:00", c.poll("w1", 1))
	// Output:
	// 12:00 nothing
	// 22:00 acme
}

// Not before: a tenant's new jobs wait until a log time.
func ExamplePolicyCommand_notBefore() {
	c := newCluster()
	c.policy(raftfsm.PolicyCommand{Action: raftfsm.PolicySet, Tenant: "acme",
		Policy: &policy.Tenant{NotBefore: c.now + int64(time.Hour)}})
	c.add("acme", 20)
	fmt.Println("now:", c.poll("w1", 1))
	c.now += int64(time.Hour)
	c.poll("w1", 1) // the first entry past the time opens it
	fmt.Println("an hour later:", c.poll("w1", 1))
	// Output:
	// now: nothing
	// an hour later: acme
}

// Compact now: the blocks queued so far are planned without waiting for
// their batch to fill or age.
func ExamplePolicyCommand_compactNow() {
	c := newCluster()
	c.add("acme", 3) // a batch of 3: not full, not old
	fmt.Println("before:", c.poll("w1", 1))
	c.policy(raftfsm.PolicyCommand{Action: raftfsm.PolicyCompactNow, Tenant: "acme", By: "alice"})
	fmt.Println("after:", c.poll("w1", 1))
	fmt.Println("requests left:", len(c.fsm.Policies().CompactNow))
	// Output:
	// before: nothing
	// after: acme
	// requests left: 0
}

// Backpressure: the result of adding blocks tells the host's ingest how
// the tenant's backlog stands, with hysteresis. It advises; every block is
// queued.
func ExampleBlockResult_pressure() {
	c := newCluster()
	c.policy(raftfsm.PolicyCommand{Action: raftfsm.PolicySet, Tenant: "acme", Policy: &policy.Tenant{
		Pressure: policy.Thresholds{SlowBlocks: policy.Limit{On: 50, Off: 30}, StopBlocks: policy.Limit{On: 100, Off: 80}}}})
	for _, n := range []int{40, 20, 50} {
		res := c.add("acme", n)
		fmt.Println(c.fsm.Stats().Planner.Queued, res.Blocks[0].Queued, res.Blocks[0].Pressure)
	}
	// Output:
	// 40 true ok
	// 60 true slow
	// 110 true stop
}

// Staleness alarms: a tenant's level whose oldest queued block has waited
// longer than its policy allows is in alarm, since that block's arrival
// plus the threshold.
func ExampleStats_alarms() {
	c := newCluster()
	c.policy(raftfsm.PolicyCommand{Action: raftfsm.PolicySet, Tenant: "acme",
		Policy: &policy.Tenant{StaleAfter: 5 * time.Minute}})
	c.add("acme", 3)
	c.now += int64(10 * time.Minute)
	c.poll("w1", 0) // the log's clock moves with an entry
	for _, a := range c.fsm.Stats().Alarms {
		fmt.Println(a.Tenant, a.Level, time.Unix(0, a.Since).UTC().Format(time.Kitchen))
	}
	// Output:
	// acme 0 12:05PM
}

// Level overrides: one tenant's level-0 jobs take batches of 5 blocks,
// where the cluster's take 20; a partial batch of another tenant waits for
// 5 minutes instead of the cluster's 36 seconds.
func ExamplePolicyCommand_levels() {
	c := newCluster()
	var seen []string
	c.policy(raftfsm.PolicyCommand{Action: raftfsm.PolicySet, Tenant: "small",
		Policy: &policy.Tenant{Levels: []policy.Level{{Level: 0, MaxBlocks: 5}}}})
	c.policy(raftfsm.PolicyCommand{Action: raftfsm.PolicySet, Tenant: "patient",
		Policy: &policy.Tenant{Levels: []policy.Level{{Level: 0, MaxAge: 5 * time.Minute}}}})
	c.add("small", 10)  // two full batches of 5
	c.add("patient", 3) // a partial batch
	c.add("other", 3)   // a partial batch
	// Each poll prints the tenants of the jobs it creates.
	planned := func() string {
		var got []string
		for _, j := range c.pollResult("w1", 4).Jobs {
			if j.Outcome == ck.OutcomeAssigned && !slices.Contains(seen, j.Plan.Name) {
				seen = append(seen, j.Plan.Name)
				got = append(got, j.Plan.Tenant)
			}
		}
		return strings.Join(got, " ")
	}
	fmt.Println("now:", planned())
	c.now += int64(time.Minute)
	fmt.Println("a minute later:", planned())
	c.now += int64(5 * time.Minute)
	fmt.Println("six minutes later:", planned())
	// Output:
	// now: small small
	// a minute later: other
	// six minutes later: patient
}

// A level's run window: level-1 jobs start only at night (22:00 to 06:00
// UTC) for every tenant without its own policy, while level 0 runs all
// day. At noon the level-0 batch is planned and the level-1 batch waits;
// at night the level-1 batch is planned.
func ExamplePolicyCommand_levelWindow() {
	c := newCluster()
	c.policy(raftfsm.PolicyCommand{Action: raftfsm.PolicySet, All: true, Policy: &policy.Tenant{
		LevelRuns: []policy.LevelRun{{Level: 1, Run: policy.RunPolicy{Mode: policy.OnlyIn,
			Windows: []policy.Window{{Days: policy.EveryDay, Start: 22 * 60, End: 6 * 60}}}}}}})
	c.add("acme", 20) // a full level-0 batch
	var bs []ck.BlockMeta
	for i := range 10 { // a full level-1 batch
		bs = append(bs, ck.BlockMeta{ID: fmt.Sprintf("l1-%d", i), Tenant: "acme", Level: 1, MinTime: c.now, MaxTime: c.now, Size: 10,
			Datasets: []ck.DatasetMeta{{Name: "cpu", Size: 10, Records: 1, MinTime: c.now, MaxTime: c.now}}})
	}
	if _, err := c.apply(&raftfsm.Command{AddBlocks: &raftfsm.AddBlocks{Blocks: bs}}); err != nil {
		panic(err)
	}
	var seen []string
	planned := func(worker string) []uint32 { // the levels of the jobs a poll creates
		var out []uint32
		for _, j := range c.pollResult(worker, 4).Jobs {
			if !slices.Contains(seen, j.Plan.Name) {
				seen = append(seen, j.Plan.Name)
				out = append(out, j.Plan.Level)
			}
		}
		return out
	}
	fmt.Println("noon:", planned("w1"))
	for range 10 * 60 { // the log's clock moves on: one entry a minute
		c.now += int64(time.Minute)
		c.policy(raftfsm.PolicyCommand{Action: raftfsm.PolicyClear, Tenant: "nobody"})
	}
	fmt.Println("22:00:", planned("w2"))
	// Output:
	// noon: [0]
	// 22:00: [1]
}

// Backpressure per shard: each shard of the tenant is graded apart, so an
// ingest path that writes one shard can slow down alone. The result of
// adding a block says the higher of the tenant's and its shard's grade.
func ExampleFSM_Pressure() {
	c := newCluster()
	c.policy(raftfsm.PolicyCommand{Action: raftfsm.PolicySet, Tenant: "acme", Policy: &policy.Tenant{
		ShardPressure: policy.Thresholds{SlowBlocks: policy.Limit{On: 10, Off: 5}}}})
	add := func(shard uint32, n int) policy.Grade {
		var bs []ck.BlockMeta
		for range n {
			c.n++
			bs = append(bs, ck.BlockMeta{ID: fmt.Sprintf("b%03d", c.n), Tenant: "acme", Shard: shard, MinTime: c.now, MaxTime: c.now, Size: 10,
				Datasets: []ck.DatasetMeta{{Name: "cpu", Size: 10, Records: 1, MinTime: c.now, MaxTime: c.now}}})
		}
		res, err := c.apply(&raftfsm.Command{AddBlocks: &raftfsm.AddBlocks{Blocks: bs}})
		if err != nil {
			panic(err)
		}
		return res.Blocks[0].Pressure
	}
	fmt.Println("shard 1:", add(1, 12))
	fmt.Println("shard 2:", add(2, 3))
	one, two := uint32(1), uint32(2)
	fmt.Println("grades:", c.fsm.Pressure("acme", &one), c.fsm.Pressure("acme", &two), c.fsm.Pressure("acme", nil))
	// Output:
	// shard 1: slow
	// shard 2: ok
	// grades: slow ok ok
}
