package raftfsm_test

// The state machine's workloads of the side-by-side comparison with
// Pyroscope v2 (BENCHMARKS.md; the comparison harness defines them in its
// compactkit/raftfsm/vs_bench_test.go as
// BenchmarkVsPoll and BenchmarkVsCycle). The definitions here are the
// same; only the names differ, and the identifiers are distinct from the
// harness's (benchenv.Sizes, not vsSizes; no pollBench.cycleRequest), so that the
// harness's copy still compiles beside this file.
//
//   W2 BenchmarkW2Poll/jobs=J  one poll, Prepare + Apply, J jobs in progress
//   W4 BenchmarkW4Cycle        2,000 polls in a steady state
//
// VS_SIZES (comma-separated) picks W2's J (default 1,000, 10,000 and
// 100,000) and VS_CYCLE_JOBS W4's jobs in progress (default 10,000), as the
// harness's run.sh sets them. VS_QUEUED sets the blocks queued in W2's and
// W4's states (default 1,000,000; W4's 2,000 polls take 640,000 of them),
// to see what the state's size costs a poll; the harness leaves it unset.

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/internal/benchenv"
	"github.com/compactkit/compactkit/policy"
	"github.com/compactkit/compactkit/raftfsm"
)

// BenchmarkW2Poll (W2): Prepare + Apply of one poll — 16 renewals, 16
// completions of 20 sources each, 32 free slots — with J jobs in progress
// for 10 other workers, 4,000 jobs released, 2,000 held by the worker and
// 1,000,000 blocks queued (5 datasets a block). J=10000 is
// BenchmarkPoll/prepare+apply's state. The code is the harness's
// BenchmarkVsPoll, with the release split into polls of at most 1,024
// reports (Limits.MaxReports, which the harness's single release poll of
// 4,000 reports now exceeds).
//
// The harness describes the poll as 16 unassigned jobs plus 16 new ones;
// that is not what its state gives. The worker's 2,000 jobs are assigned
// from the 4,000 released, so 2,000 stay unassigned: the first 62 polls
// assign 32 of those and create no job, the 63rd creates 16, and every
// later poll creates 32 jobs and assigns them. adds/poll reports the mean
// number of jobs a poll created, so each figure says which mix it measured
// (-benchtime 300x, as the harness runs it: 25.4).
//
// Each poll is prepared on the state the previous poll left, then
// applied: ns/prepare and ns/apply are the two halves' means (ns/op is
// their sum). The state is built once per size (the testing package calls
// a sub-benchmark first with b.N = 1, and the timed run continues from the
// state that call left).
func BenchmarkW2Poll(b *testing.B) { benchW2(b, 4_000, false) }

// BenchmarkW2MixedPoll is W2 at J jobs in progress with the mix the
// harness describes: before each poll (untimed), another worker takes 16
// new jobs and releases them, so that the poll's 32 free slots take those
// 16 waiting jobs and 16 new ones (adds/poll 16), as Pyroscope's poll
// assigns 16 jobs an earlier poll created and creates 16. The state is
// W2's without its 2,000 waiting jobs. The harness runs BenchmarkW2Poll,
// not this.
func BenchmarkW2MixedPoll(b *testing.B) { benchW2(b, 2_000, true) }

// benchW2 runs W2's polls at each size J: J jobs in progress, pool jobs
// released, 2,000 of them taken by the benchmark worker, and mixed as in
// pollBench.
func benchW2(b *testing.B, pool int, mixed bool) {
	for _, jobs := range benchenv.Sizes(b, 1_000, 10_000, 100_000) {
		var pb *pollBench
		b.Run(fmt.Sprintf("jobs=%d", jobs), func(b *testing.B) {
			if pb == nil {
				pb = newPollBenchSized(b, jobs, pool, 2_000)
				pb.mixed = mixed
			}
			b.ResetTimer()
			pb.run(b, false)
		})
		pb = nil
		runtime.GC()
	}
}

// BenchmarkW2PollTenants is W2 at 10,000 jobs in progress with 9,999 more
// tenants (tenants=10000), each with a policy of class High and a cap of
// one job in progress, one job in progress and one job waiting — at the
// head of the ready order, by its class, but held by the cap — against
// the same state without them (tenants=1), whose index holds as many
// more blocks (at the final level, so that they are not queued), as the
// capped tenants' jobs claim. Issue 20's budget: the policies must not
// make a poll's cost grow with the number of tenants; Prepare may grow
// by at most 10 %.
//
// closed=10000 is the same with the 9,999 High tenants closed by their
// own run window instead of capped, two full level-0 batches queued each:
// the planner holds them, so planning does not pass over each of them per
// job it plans. defclosed=10000 closes them by the default policy instead
// (the ten tenants of W2's own jobs have open policies of their own), and
// levelclosed=10000 by the default's run window for level 0 alone.
func BenchmarkW2PollTenants(b *testing.B) {
	for _, c := range []struct {
		name  string
		setup func(*node)
	}{
		{"tenants=1", func(n *node) { coldBlocks(b, n, 9_999) }},
		{"tenants=10000", func(n *node) { cappedTenants(b, n, 9_999) }},
		{"closed=10000", func(n *node) { closedTenants(b, n, 9_999) }},
		{"defclosed=10000", func(n *node) { defaultClosedTenants(b, n, 9_999, false) }},
		{"levelclosed=10000", func(n *node) { defaultClosedTenants(b, n, 9_999, true) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			pb := newPollBenchWith(b, 10_000, 4_000, 2_000, c.setup)
			b.ResetTimer()
			pb.run(b, false)
		})
	}
}

// closedTenants gives the node k tenants of class High whose own run
// window closes them (never-in 20:00-08:00 UTC, around t0), each with two
// full level-0 batches queued.
func closedTenants(b *testing.B, n *node, k int) {
	name := func(i int) string { return fmt.Sprintf("closed-%05d", i) }
	night := policy.RunPolicy{Mode: policy.NeverIn, Windows: []policy.Window{{Days: policy.EveryDay, Start: 20 * 60, End: 8 * 60}}}
	var bs []ck.BlockMeta
	for i := range k {
		n.mustApply(&raftfsm.Command{Policy: &raftfsm.PolicyCommand{Action: raftfsm.PolicySet, Tenant: name(i),
			Policy: &policy.Tenant{Class: policy.High, Run: night}}})
		bs = append(bs, cappedBlocks(n, i, name(i), 0)...)
		if len(bs) >= 10_000 || i == k-1 {
			n.mustApply(addBlocks(bs))
			bs = nil
		}
	}
	ps := n.f.Policies()
	require.Len(b, ps.Tenants, k)
	require.False(b, ps.Tenants[0].Open, "closed at t0")
}

// defaultClosedTenants gives the node k tenants without a policy of their
// own, closed by the default's run window (never-in 20:00-08:00 UTC,
// around t0; for level 0 alone with level), each with two full level-0
// batches queued; W2's own tenants (tenant-0 to tenant-9) get open
// policies of their own.
func defaultClosedTenants(b *testing.B, n *node, k int, level bool) {
	for i := range 10 {
		n.mustApply(&raftfsm.Command{Policy: &raftfsm.PolicyCommand{Action: raftfsm.PolicySet, Tenant: fmt.Sprintf("tenant-%d", i),
			Policy: &policy.Tenant{}}})
	}
	night := policy.RunPolicy{Mode: policy.NeverIn, Windows: []policy.Window{{Days: policy.EveryDay, Start: 20 * 60, End: 8 * 60}}}
	def := &policy.Tenant{Class: policy.High, Run: night}
	if level {
		def = &policy.Tenant{Class: policy.High, LevelRuns: []policy.LevelRun{{Level: 0, Run: night}}}
	}
	n.mustApply(&raftfsm.Command{Policy: &raftfsm.PolicyCommand{Action: raftfsm.PolicySet, All: true, Policy: def}})
	var bs []ck.BlockMeta
	for i := range k {
		bs = append(bs, cappedBlocks(n, i, fmt.Sprintf("dclosed-%05d", i), 0)...)
		if len(bs) >= 10_000 || i == k-1 {
			n.mustApply(addBlocks(bs))
			bs = nil
		}
	}
	dp := n.f.Policies().Default
	require.False(b, dp.MayStart(n.now) && policy.ClosedLevels(dp.LevelRuns, n.now)&1 == 0, "closed at t0")
}

// perCapped is the number of blocks each capped tenant's jobs claim: two
// full level-0 batches.
func perCapped(n *node) int { return n.f.Config().Planner.Levels[0].MaxBlocks * 2 }

// cappedBlocks returns the blocks of tenant i of the capped ones, at the
// level given.
func cappedBlocks(n *node, i int, tenant string, level uint32) []ck.BlockMeta {
	var bs []ck.BlockMeta
	for j := range perCapped(n) {
		minT := t0 + int64(j)*int64(time.Millisecond)
		bs = append(bs, ck.BlockMeta{ID: fmt.Sprintf("c%05d-%03d", i, j), Tenant: tenant, Shard: 1, Level: level,
			MinTime: minT, MaxTime: minT + int64(time.Second), Size: 5000,
			Datasets: []ck.DatasetMeta{{Name: "service-0", Size: 5000, Records: 100, MinTime: minT, MaxTime: minT + int64(time.Second)}}})
	}
	return bs
}

// coldBlocks adds as many blocks as k capped tenants' jobs claim, at the
// final level: in the index, not queued.
func coldBlocks(b *testing.B, n *node, k int) {
	var bs []ck.BlockMeta
	for i := range k {
		bs = append(bs, cappedBlocks(n, i, "cold", n.f.Config().Planner.FinalLevel)...)
		if len(bs) >= 10_000 || i == k-1 {
			n.mustApply(addBlocks(bs))
			bs = nil
		}
	}
}

// cappedTenants gives the node k tenants of class High, each capped at
// one job in progress, with one job in progress and one waiting.
func cappedTenants(b *testing.B, n *node, k int) {
	set := func(tenant string, limit uint32) {
		n.mustApply(&raftfsm.Command{Policy: &raftfsm.PolicyCommand{Action: raftfsm.PolicySet, Tenant: tenant,
			Policy: &policy.Tenant{Class: policy.High, MaxInProgress: limit}}})
	}
	name := func(i int) string { return fmt.Sprintf("capped-%05d", i) }
	for i := range k {
		set(name(i), 2)
	}
	// Two full level-0 batches each.
	var bs []ck.BlockMeta
	for i := range k {
		bs = append(bs, cappedBlocks(n, i, name(i), 0)...)
		if len(bs) >= 10_000 || i == k-1 {
			n.mustApply(addBlocks(bs))
			bs = nil
		}
	}
	// Both jobs of every tenant in progress (polls of 256 slots: a poll
	// passes over the tenants it capped itself, per job it plans), then
	// one of each released, then the cap lowered to one: each tenant is at
	// its cap with a job waiting.
	seen := map[string]bool{}
	var rel []ck.StatusUpdate
	seq := uint64(1)
	for got := 0; got < 2*k; seq++ {
		resp := n.poll(&ck.PollRequest{WorkerID: "capper", Seq: seq, FreeSlots: 256})
		require.NotEmpty(b, resp.Jobs)
		got += len(resp.Jobs)
		for _, j := range resp.Jobs {
			if !seen[j.Plan.Tenant] {
				seen[j.Plan.Tenant] = true
				rel = append(rel, ck.StatusUpdate{Job: j.Job, Token: j.Token, Status: ck.ReportReleased})
			}
		}
	}
	for ; len(rel) > 0; seq++ {
		m := min(len(rel), raftfsm.DefaultLimits.MaxReports)
		n.poll(&ck.PollRequest{WorkerID: "capper", Seq: seq, Updates: rel[:m]})
		rel = rel[m:]
	}
	for i := range k {
		set(name(i), 1)
	}
	st := n.f.Stats()
	require.Equal(b, k, st.Scheduler.CappedTenants, "every tenant at its cap")
}

// BenchmarkW4Cycle (W4): 2,000 polls of the benchmark worker in a steady
// state: 10,000 jobs in progress for other workers (VS_CYCLE_JOBS), 2,000
// held, no unassigned pool, 1,000,000 blocks queued (VS_QUEUED). Each poll: 16
// renewals, 16 completions (20 sources each), 16 free slots, filled by 16
// new jobs assigned in the same poll. One op is 2,000 polls on a freshly
// built state (untimed); ns/poll and polls/s count the timed polls only
// (Prepare + Apply), not the worker's bookkeeping; ns/prepare and ns/apply
// are the two halves' means per poll.
func BenchmarkW4Cycle(b *testing.B) {
	const polls = 2000
	jobs := benchenv.Int(b, "VS_CYCLE_JOBS", 10_000)
	b.ReportAllocs()
	var prep, appl time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		pb := newPollBenchSized(b, jobs, 0, 2_000)
		b.StartTimer()
		for p := 0; p < polls; p++ {
			b.StopTimer()
			req := pb.request()
			req.FreeSlots = 16
			pb.n.advance(time.Millisecond)
			b.StartTimer()
			_, dp, da := pb.step(b, req, 16)
			prep += dp
			appl += da
		}
		b.StopTimer()
		pb = nil
		runtime.GC() // not the next op's to collect
		b.StartTimer()
	}
	perPoll := float64(b.Elapsed().Nanoseconds()) / float64(b.N*polls)
	b.ReportMetric(perPoll, "ns/poll")
	b.ReportMetric(1e9/perPoll, "polls/s")
	b.ReportMetric(float64(prep.Nanoseconds())/float64(b.N*polls), "ns/prepare")
	b.ReportMetric(float64(appl.Nanoseconds())/float64(b.N*polls), "ns/apply")
}
