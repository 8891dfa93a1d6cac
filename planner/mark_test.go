package planner_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/internal/ident"
	"github.com/compactkit/compactkit/planner"
)

// TestMark: an operator's mark takes queued blocks out of compaction with
// the operator's reason and no job; marking again changes nothing; a
// claimed block, a final-level block or one held nowhere refuses the whole
// mark; a requeue clears the mark and the blocks are planned again.
func TestMark(t *testing.T) {
	cfg := planner.DefaultConfig()
	cfg.Levels[0].MaxBlocks = 4
	f := newFixture(t, cfg)
	claimedIDs := f.add("t", 1, 0, 4)
	pl := f.mustPoll(nil)
	require.Equal(t, claimedIDs, pl.Sources)
	ids := f.add("t", 2, 0, 6)
	meta := func(id string, shard uint32) ck.BlockMeta { return ck.BlockMeta{ID: id, Tenant: "t", Shard: shard} }

	// Refusals change nothing.
	before := f.snapshot()
	_, err := f.p.Mark(f.entry(), []ck.BlockMeta{meta(ids[0], 2), meta(claimedIDs[2], 1)}, "x")
	require.ErrorContains(t, err, "planner: block claimed")
	require.ErrorContains(t, err, pl.Name, "the error names the job")
	_, err = f.p.Mark(f.entry(), []ck.BlockMeta{{ID: "final", Tenant: "t", Level: cfg.FinalLevel}}, "x")
	require.ErrorContains(t, err, "planner: block at the final level")
	_, err = f.p.Mark(f.entry(), []ck.BlockMeta{meta("nowhere", 2)}, "x")
	require.ErrorIs(t, err, ident.ErrInconsistent)
	_, err = f.p.Mark(f.entry(), []ck.BlockMeta{meta("../bad", 2)}, "x")
	require.ErrorIs(t, err, ident.ErrInvalidID)
	require.Equal(t, before, f.snapshot())

	// Mark two of the six: the four left make a batch without them.
	f.advance(time.Minute)
	n, err := f.p.Mark(f.entry(), []ck.BlockMeta{meta(ids[1], 2), meta(ids[3], 2), meta(ids[1], 2)}, "legal hold")
	require.NoError(t, err)
	require.Equal(t, 2, n)
	items, _ := f.p.Quarantined("", 0)
	require.Len(t, items, 2)
	for _, q := range items {
		require.Empty(t, q.Job, "a mark has no job")
		require.Equal(t, "legal hold", q.Reason)
		require.Equal(t, f.now, q.Since)
	}
	again := f.snapshot()
	n, err = f.p.Mark(f.entry(), []ck.BlockMeta{meta(ids[1], 2)}, "other")
	require.NoError(t, err)
	require.Zero(t, n, "marking again changes nothing")
	require.Equal(t, again, f.snapshot())
	pl2 := f.mustPoll(nil)
	require.Equal(t, []string{ids[0], ids[2], ids[4], ids[5]}, pl2.Sources)

	// A requeue clears the mark.
	n, err = f.p.Requeue([]string{ids[1], ids[3]})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	items, _ = f.p.Quarantined("", 0)
	require.Empty(t, items)
	require.Equal(t, 2, f.p.Stats(0).Levels[0].Queued)
}

// TestClaimsOfLookalikeKeys: the claims of a key are found by the prefix
// its jobs' names start with, which other keys' names may share — a
// tenant that sanitizes like another ("a+b" and "a_b"), one whose name
// continues another's prefix ("a.s1.l0.x" after "a") — and a drop or a
// mark finds the claims of its own key only.
func TestClaimsOfLookalikeKeys(t *testing.T) {
	cfg := planner.DefaultConfig()
	cfg.Levels[0].MaxBlocks = 2
	f := newFixture(t, cfg)
	tenants := []string{"a", "a.s1.l0.x", "a+b", "a_b"}
	ids := map[string][]string{}
	for _, tenant := range tenants {
		ids[tenant] = f.add(tenant, 1, 0, 2)
	}
	jobs := map[string]string{}
	for range tenants {
		pl := f.mustPoll(nil)
		jobs[pl.Tenant] = pl.Name
		require.Equal(t, ids[pl.Tenant], pl.Sources)
	}
	require.Len(t, jobs, len(tenants))
	require.True(t, strings.HasPrefix(jobs["a.s1.l0.x"], "a.s1.l0."), "the names share a prefix: %s", jobs["a.s1.l0.x"])
	require.Equal(t, strings.SplitN(jobs["a+b"], ".", 2)[0], strings.SplitN(jobs["a_b"], ".", 2)[0], "the tenants sanitize alike")
	for _, tenant := range tenants {
		meta := ck.BlockMeta{ID: ids[tenant][1], Tenant: tenant, Shard: 1}
		_, err := f.p.Mark(f.entry(), []ck.BlockMeta{meta}, "x")
		require.ErrorContains(t, err, "by job "+jobs[tenant], "a mark names the job of %s", tenant)
		require.Equal(t, []string{jobs[tenant]}, f.p.Drop([]ck.BlockMeta{meta}), "a drop of a block of %s", tenant)
	}
}
