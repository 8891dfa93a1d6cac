package planner_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/planner"
)

// Priority classes as ranks.
const (
	high   = 0
	medium = 1
	low    = 2
)

// setCursor moves the fairness cursor to tenant by claiming a job of a
// throw-away key of it.
func (f *fixture) setCursor(tenant string) {
	f.t.Helper()
	f.add(tenant, 99, 0, 20)
	pl, ok := f.p.View().Next(f.now, &planner.PlanOptions{Skip: func(tn string, _ uint32) bool { return tn != tenant }})
	require.True(f.t, ok)
	require.Equal(f.t, tenant, pl.Tenant)
	require.Equal(f.t, uint32(99), pl.Shard, "%+v", pl)
	require.NoError(f.t, f.p.Claim(f.entry(), &pl))
}

// TestRankBeforeRotation: with one free slot and ready batches of a Low
// tenant after the cursor and a High tenant further on, the High one is
// planned, wherever the cursor is; the others follow by rank.
func TestRankBeforeRotation(t *testing.T) {
	for _, cursor := range []string{"", "aaa", "api", "batch", "jobs", "web", "zzz"} {
		t.Run("cursor="+cursor, func(t *testing.T) {
			f := newFixture(t, planner.DefaultConfig())
			require.NoError(t, f.p.SetTerms("batch", &planner.Terms{Rank: low}))
			require.NoError(t, f.p.SetTerms("jobs", &planner.Terms{Rank: low}))
			require.NoError(t, f.p.SetTerms("api", &planner.Terms{Rank: medium}))
			require.NoError(t, f.p.SetTerms("web", &planner.Terms{Rank: high}))
			if cursor != "" {
				f.setCursor(cursor)
			}
			for _, tn := range []string{"api", "batch", "jobs", "web"} {
				f.add(tn, 0, 0, 20)
			}
			pl, ok := f.p.View().Next(f.now, nil)
			require.True(t, ok)
			require.Equal(t, "web", pl.Tenant, "the one free slot")
			got := drain(t, f.p.View(), f.now, nil)
			require.Equal(t, "web/0/0", got[0])
			require.Equal(t, "api/0/0", got[1])
			require.ElementsMatch(t, []string{"batch/0/0", "jobs/0/0"}, got[2:])
		})
	}
}

// TestRankLevelFirst: ranks order tenants within a level; a lower level
// is still served first.
func TestRankLevelFirst(t *testing.T) {
	f := newFixture(t, planner.DefaultConfig())
	require.NoError(t, f.p.SetTerms("web", &planner.Terms{Rank: high}))
	require.NoError(t, f.p.SetTerms("batch", &planner.Terms{Rank: low}))
	f.add("web", 0, 1, 10)
	f.add("batch", 0, 0, 20)
	f.add("batch", 1, 1, 10)
	require.Equal(t, []string{"batch/0/0", "web/0/1", "batch/1/1"}, drain(t, f.p.View(), f.now, nil))
}

// TestRankRotation: within a rank, tenants take turns after the cursor
// exactly as without ranks: a planner whose tenants all have one rank
// plans like one without ranks, cursor after cursor.
func TestRankRotation(t *testing.T) {
	tenants := []string{"", "a", "b", "c", "d"}
	for _, cursor := range append([]string{"none"}, tenants...) {
		t.Run("cursor="+cursor, func(t *testing.T) {
			plain := newFixture(t, planner.DefaultConfig())
			ranked := newFixture(t, planner.DefaultConfig())
			require.NoError(t, ranked.p.SetDefaultTerms(planner.Terms{Rank: medium}))
			require.NoError(t, ranked.p.SetTerms("c", &planner.Terms{Rank: medium}))
			for _, f := range []*fixture{plain, ranked} {
				if cursor != "none" {
					f.setCursor(cursor)
				}
				for i, tn := range tenants {
					f.add(tn, 0, 0, 40)
					f.add(tn, 1, 1, 10+i)
					f.add(tn, 2, 0, 3) // ready by age, later
				}
			}
			later := plain.now + int64(time.Minute)
			want := drain(t, plain.p.View(), later, nil)
			require.Len(t, want, 20)
			require.Equal(t, want, drain(t, ranked.p.View(), later, nil))
		})
	}
	// The rotation among the rank-2 tenants, after a rank-0 tenant's turn.
	f := newFixture(t, planner.DefaultConfig())
	require.NoError(t, f.p.SetDefaultTerms(planner.Terms{Rank: low}))
	require.NoError(t, f.p.SetTerms("m", &planner.Terms{Rank: high}))
	f.setCursor("e")
	for _, tn := range []string{"a", "f", "m", "z"} {
		f.add(tn, 0, 0, 20)
	}
	require.Equal(t, []string{"m/0/0", "z/0/0", "a/0/0", "f/0/0"}, drain(t, f.p.View(), f.now, nil))
}

// TestRankAging: a Low tenant's batch that competes at level 0 because of
// aging competes at rank 0, among the High tenants' level-0 batches, in
// turn; until then it waits for the level-0 batches of every rank.
func TestRankAging(t *testing.T) {
	cfg := planner.DefaultConfig() // level 1: 10 blocks, max age 12 min, aging 48 min
	for _, aged := range []bool{false, true} {
		t.Run(fmt.Sprint("aged=", aged), func(t *testing.T) {
			f := newFixture(t, cfg)
			require.NoError(t, f.p.SetTerms("web", &planner.Terms{Rank: high}))
			require.NoError(t, f.p.SetTerms("api", &planner.Terms{Rank: medium}))
			require.NoError(t, f.p.SetTerms("batch", &planner.Terms{Rank: low}))
			f.add("batch", 0, 1, 20) // two full batches (aging index)
			f.add("batch", 1, 1, 3)  // partial, ready by age (timed index)
			f.advance(30 * time.Minute)
			if aged {
				f.advance(time.Hour)
			}
			f.add("api", 0, 0, 20)
			f.add("web", 0, 0, 20)
			got := drain(t, f.p.View(), f.now, nil)
			if !aged {
				require.Equal(t, []string{"web/0/0", "api/0/0", "batch/0/1", "batch/0/1", "batch/1/1"}, got)
				return
			}
			// Rank 0 at level 0: batch (aged), web, in turn; then api.
			require.Equal(t, []string{"batch/0/1", "web/0/0", "batch/0/1", "batch/1/1", "api/0/0"}, got)
			// And poll by poll, one job each, the same.
			var polls []string
			for {
				pl, ok := f.poll(nil)
				if !ok {
					break
				}
				polls = append(polls, fmt.Sprint(pl.Tenant, "/", pl.Shard, "/", pl.Level))
			}
			require.Equal(t, got, polls)
		})
	}
}

// TestRankViews: a view keeps the ranks it was opened with; the planner's
// ranks are its own state, read back by Rank.
func TestRankViews(t *testing.T) {
	f := newFixture(t, planner.DefaultConfig())
	for _, tn := range []string{"a", "b", "c"} {
		f.add(tn, 0, 0, 20)
	}
	open := f.p.View()
	require.NoError(t, f.p.SetTerms("c", &planner.Terms{Rank: high}))
	require.NoError(t, f.p.SetDefaultTerms(planner.Terms{Rank: low}))
	require.NoError(t, f.p.SetTerms("a", &planner.Terms{Rank: medium}))
	ranked := f.p.View()
	require.NoError(t, f.p.SetTerms("a", nil))
	require.NoError(t, f.p.SetTerms("b", &planner.Terms{Rank: high}))
	require.NoError(t, f.p.SetTerms("c", nil))
	require.Equal(t, []string{"a/0/0", "b/0/0", "c/0/0"}, drain(t, open, f.now, nil))
	require.Equal(t, []string{"c/0/0", "a/0/0", "b/0/0"}, drain(t, ranked, f.now, nil))
	require.Equal(t, []string{"b/0/0", "c/0/0", "a/0/0"}, drain(t, f.p.View(), f.now, nil))
	// Forced batches too (a young partial one per tenant): by the ranks
	// each view was opened with.
	for _, tn := range []string{"a", "b", "c"} {
		f.add(tn, 1, 0, 3)
	}
	open = f.p.View()
	require.NoError(t, f.p.SetTerms("c", &planner.Terms{Rank: high}))
	require.NoError(t, f.p.SetTerms("a", &planner.Terms{Rank: medium}))
	ranked = f.p.View()
	require.NoError(t, f.p.SetTerms("a", nil))
	require.NoError(t, f.p.SetTerms("c", &planner.Terms{Rank: low}))
	all := forcing(planner.Force{AllTenants: true, AllLevels: true, Before: f.now})
	require.Equal(t, []string{"b/0/0", "b/1/0", "c/0/0", "a/0/0", "c/1/0", "a/1/0"}, drain(t, open, f.now, all))
	require.Equal(t, []string{"b/0/0", "c/0/0", "b/1/0", "c/1/0", "a/0/0", "a/1/0"}, drain(t, ranked, f.now, all))
	require.Equal(t, []string{"b/0/0", "b/1/0", "c/0/0", "a/0/0", "c/1/0", "a/1/0"}, drain(t, f.p.View(), f.now, all))

	require.NoError(t, f.p.SetTerms("unknown", nil))                  // nothing to clear
	require.NoError(t, f.p.SetDefaultTerms(planner.Terms{Rank: low})) // no change
	// b first; then c and a, in turn after b.
	require.Equal(t, []string{"b/0/0", "c/0/0", "a/0/0"}, drain(t, f.p.View(), f.now, nil))
	require.NoError(t, f.p.SetDefaultTerms(planner.Terms{Rank: high}))
	require.Equal(t, []string{"a/0/0", "b/0/0", "c/0/0"}, drain(t, f.p.View(), f.now, nil))
}

// TestRankNotInSnapshot: ranks change no snapshot byte; a restored planner
// has none, and once given the same ranks it plans exactly like the
// original, poll after poll.
func TestRankNotInSnapshot(t *testing.T) {
	cfg := planner.DefaultConfig()
	cfg.Levels[0].MaxBlocks = 3
	f := newFixture(t, cfg)
	tenants := []string{"", "A", "B", "C", "D"}
	for i, tn := range tenants {
		f.add(tn, uint32(i%2), 0, 7)
		f.add(tn, 0, 1, 2+i)
		f.add(tn, 1, 2, 1)
	}
	before := f.snapshot()
	require.NoError(t, f.p.SetDefaultTerms(planner.Terms{Rank: medium}))
	require.NoError(t, f.p.SetTerms("D", &planner.Terms{Rank: high}))
	require.NoError(t, f.p.SetTerms("", &planner.Terms{Rank: low}))
	require.NoError(t, f.p.SetTerms("A", &planner.Terms{Rank: low}))
	require.NoError(t, f.p.SetTerms("A", nil))
	require.Equal(t, before, f.snapshot(), "ranks are not replicated state of the snapshot")

	r := restored(t, f.snapshot())
	require.NoError(t, r.SetTerms("D", &planner.Terms{Rank: high}))
	require.NoError(t, r.SetTerms("", &planner.Terms{Rank: low}))
	require.NoError(t, r.SetDefaultTerms(planner.Terms{Rank: medium}))

	f.mirror = r
	entry := f.index
	var order []string
	for step := range 40 {
		now := f.now + int64(step)*int64(20*time.Minute)
		if step == 20 {
			for _, p := range []*planner.Planner{f.p, r} {
				require.NoError(t, p.SetTerms("B", &planner.Terms{Rank: high}))
				require.NoError(t, p.SetDefaultTerms(planner.Terms{Rank: low}))
			}
		}
		if step%5 == 0 {
			f.now = now
			for _, tn := range tenants {
				f.add(tn, uint32(step%3), 0, 4)
			}
			entry = f.index
		}
		for {
			pl, ok := nextBoth(t, f.p, r, now, func() ck.Entry {
				entry++
				return ck.Entry{Index: entry, Term: 1, Time: now}
			})
			if !ok {
				break
			}
			order = append(order, pl.Tenant)
		}
		f.index = entry
		require.Equal(t, f.snapshot(), snapshotBytes(t, r))
	}
	require.Greater(t, len(order), 20)
	require.Equal(t, "D", order[0], "the High tenant first")
}

// rankTwins drives a ranked planner through changes and, at each check,
// compares its plans with those of a planner restored from its snapshot
// and ranked afresh (indexes built from scratch).
type rankTwins struct {
	*fixture
	ranks map[string]uint8
}

func (w *rankTwins) check() {
	w.t.Helper()
	r := restored(w.t, w.snapshot())
	for tn, rk := range w.ranks {
		require.NoError(w.t, r.SetTerms(tn, &planner.Terms{Rank: rk}))
	}
	later := w.now + int64(24*time.Hour)
	all := forcing(planner.Force{AllTenants: true, AllLevels: true, Before: w.now})
	for _, opts := range []*planner.PlanOptions{nil, all} {
		got := drain(w.t, w.p.View(), later, opts)
		require.Equal(w.t, drain(w.t, r.View(), later, opts), got)
		require.NotEmpty(w.t, got)
		require.Equal(w.t, "H", got[0][:1], "the High tenant first")
	}
}

// TestRankSurvivesChanges: ranks survive enqueue, claim, return,
// quarantine, re-queue, retention and configuration changes: the planner
// plans like one whose indexes are built afresh with the same ranks.
func TestRankSurvivesChanges(t *testing.T) {
	cfg := planner.DefaultConfig()
	cfg.Levels[0].MaxBlocks = 4
	w := &rankTwins{fixture: newFixture(t, cfg), ranks: map[string]uint8{"H": high, "M": medium, "L": low}}
	for tn, rk := range w.ranks {
		require.NoError(t, w.p.SetTerms(tn, &planner.Terms{Rank: rk}))
	}
	w.add("L", 0, 0, 10)
	w.add("M", 0, 0, 4)
	w.add("H", 0, 0, 10)
	w.add("H", 1, 1, 3)
	w.check()

	plans := nextPlans(t, w.p.View(), w.now, 3)
	require.Equal(t, []string{"H", "H", "M"}, []string{plans[0].Tenant, plans[1].Tenant, plans[2].Tenant})
	w.advance(time.Second)
	dropped := w.add("H", 0, 0, 5)
	w.check()
	for _, pl := range plans {
		require.NoError(t, w.p.Claim(w.entry(), &pl))
	}
	w.check()
	require.NoError(t, w.p.Return(plans[0].Name, plans[0].Sources))
	w.check()
	require.NoError(t, w.p.Quarantine(w.entry(), plans[1].Name, "failed"))
	n, err := w.p.Requeue(plans[1].Sources)
	require.NoError(t, err)
	require.Equal(t, 4, n)
	w.check()
	var drop []ck.BlockMeta
	for _, id := range dropped[1:3] {
		drop = append(drop, ck.BlockMeta{ID: id, Tenant: "H", Shard: 0, Level: 0})
	}
	require.Empty(t, w.p.Drop(drop))
	require.Zero(t, w.p.Stats(0).Counters.MissedRemovals)
	w.check()
	cfg.Levels[0].MaxBlocks = 3
	cfg.Levels[1].MaxAge = time.Second
	require.NoError(t, w.p.SetConfig(cfg))
	w.check()
	// Held and released: its entries come back at its rank.
	w.p.SetHold("H", true, levelsHeld(w.p, "H"))
	require.NoError(t, w.p.SetTerms("H", &planner.Terms{Rank: high})) // no change while held
	w.p.SetHold("H", false, levelsHeld(w.p, "H"))
	w.check()
	// Ranked while held.
	w.p.SetHold("L", true, levelsHeld(w.p, "L"))
	require.NoError(t, w.p.SetTerms("L", &planner.Terms{Rank: medium}))
	w.p.SetHold("L", false, levelsHeld(w.p, "L"))
	w.ranks["L"] = medium
	w.check()
}

// TestRankForceSkipHeld: forced batches compete by rank at their level;
// a skipped or held High tenant lets the next rank go first, and skipping
// a High tenant's level leaves its other levels alone.
func TestRankForceSkipHeld(t *testing.T) {
	f := newFixture(t, planner.DefaultConfig())
	require.NoError(t, f.p.SetTerms("web", &planner.Terms{Rank: high}))
	require.NoError(t, f.p.SetTerms("api", &planner.Terms{Rank: medium}))
	require.NoError(t, f.p.SetTerms("batch", &planner.Terms{Rank: low}))
	for _, tn := range []string{"api", "batch", "web"} {
		f.add(tn, 0, 0, 3) // partial and young: ready only when forced
	}
	f.add("web", 1, 1, 10) // full at level 1
	f.setCursor("aaa")

	forceAll := planner.Force{AllTenants: true, AllLevels: true, Before: f.now}
	require.Equal(t, []string{"web/0/0", "api/0/0", "batch/0/0", "web/1/1"}, drain(t, f.p.View(), f.now, forcing(forceAll)))
	forceLow := planner.Force{Tenant: "batch", Level: 0, Before: f.now}
	require.Equal(t, []string{"batch/0/0", "web/1/1"}, drain(t, f.p.View(), f.now, forcing(forceLow)))

	skipWeb0 := func(tn string, l uint32) bool { return tn == "web" && l == 0 }
	opts := forcing(forceAll)
	opts.Skip = skipWeb0
	require.Equal(t, []string{"api/0/0", "batch/0/0", "web/1/1"}, drain(t, f.p.View(), f.now, opts))

	f.p.SetHold("web", true, levelsHeld(f.p, "web"))
	require.Equal(t, []string{"api/0/0", "batch/0/0"}, drain(t, f.p.View(), f.now, forcing(forceAll)))
	opts.Skip = func(tn string, _ uint32) bool { return tn == "api" }
	require.Equal(t, []string{"batch/0/0"}, drain(t, f.p.View(), f.now, opts))
	f.p.SetHold("web", false, levelsHeld(f.p, "web"))
	require.Equal(t, []string{"web/0/0", "api/0/0", "batch/0/0", "web/1/1"}, drain(t, f.p.View(), f.now, forcing(forceAll)))

	// Full batches and forced ones of one level compete by rank together.
	f.add("batch", 1, 0, 20)
	got := drain(t, f.p.View(), f.now, forcing(forceAll))
	require.Equal(t, []string{"web/0/0", "api/0/0"}, got[:2])
	require.True(t, slices.Equal([]string{"batch/0/0", "batch/1/0"}, got[2:4]) || slices.Equal([]string{"batch/1/0", "batch/0/0"}, got[2:4]), got)
}

// TestRankConcurrentWithViews: views plan on other goroutines while the
// planner ranks tenants, changes the default rank and changes; each view
// plans exactly what a twin view opened at the same moment planned before
// anything changed (run with -race).
func TestRankConcurrentWithViews(t *testing.T) {
	// Meanwhile: rank, clear, change the default, enqueue, claim.
	concurrentViews(t, func(f *fixture, tenants []string, i int) {
		require.NoError(t, f.p.SetTerms(tenants[i%4], &planner.Terms{Rank: uint8(i % 3)}))
		require.NoError(t, f.p.SetDefaultTerms(planner.Terms{Rank: uint8(i % 2)}))
	}, func(f *fixture, tenants []string, i int) {
		require.NoError(t, f.p.SetTerms(tenants[(i+2)%4], nil))
	})
}

// pollAll plans and claims one job per poll, each on a fresh view, until
// none is ready, and returns them as tenant/shard/level.
func (f *fixture) pollAll(opts *planner.PlanOptions) []string {
	f.t.Helper()
	var got []string
	for {
		pl, ok := f.poll(opts)
		if !ok {
			return got
		}
		got = append(got, fmt.Sprint(pl.Tenant, "/", pl.Shard, "/", pl.Level))
	}
}

// TestRankAgingLevel0: a Low tenant's level-0 batch (full, or partial and
// ready by age) ready for longer than level 0's aging threshold competes
// at rank 0 among the High tenants' younger level-0 batches, in turn: with
// one job per poll it is planned within one rotation of the rank-0
// tenants whatever the cursor, and before the High tenants after it in
// the rotation. At exactly the threshold it is not aged: it waits for
// every High batch.
func TestRankAgingLevel0(t *testing.T) {
	cfg := planner.DefaultConfig() // level 0: 20 blocks, max age 36 s, aging 144 s
	highs := []string{"api", "jobs", "web"}
	// The poll at which batch's first job comes, by cursor: after the High
	// tenants between the cursor and it in the rotation.
	wantAt := map[string]int{"none": 2, "aaa": 2, "api": 1, "batch": 4, "jobs": 3, "web": 2, "zzz": 2}
	for _, full := range []bool{true, false} {
		for _, cursor := range []string{"none", "aaa", "api", "batch", "jobs", "web", "zzz"} {
			for _, aged := range []bool{false, true} {
				t.Run(fmt.Sprintf("full=%v/cursor=%s/aged=%v", full, cursor, aged), func(t *testing.T) {
					f := newFixture(t, cfg)
					require.NoError(t, f.p.SetTerms("batch", &planner.Terms{Rank: low}))
					for _, tn := range highs {
						require.NoError(t, f.p.SetTerms(tn, &planner.Terms{Rank: high}))
					}
					if cursor != "none" {
						f.setCursor(cursor)
					}
					readyAt := f.now
					lowJobs := 2
					if full {
						f.add("batch", 0, 0, 40) // two full batches, ready now
					} else {
						f.add("batch", 0, 0, 3) // partial, ready by age
						readyAt += int64(cfg.Levels[0].MaxAge)
						lowJobs = 1
					}
					f.now = readyAt + int64(cfg.Levels[0].AgingThreshold)
					if aged {
						f.now++
					}
					for _, tn := range highs {
						f.add(tn, 0, 0, 40) // two full batches each, younger
					}
					want := drain(t, f.p.View(), f.now, nil) // one view: touched keys
					got := f.pollAll(nil)                    // a view per poll: indexes
					require.Equal(t, want, got)
					require.Len(t, got, 6+lowJobs)
					first := slices.Index(got, "batch/0/0")
					if !aged {
						require.Equal(t, 6, first, "not aged: after every High batch: %v", got)
						return
					}
					require.Equal(t, wantAt[cursor], first+1, "aged: in turn among the High tenants: %v", got)
					// Within one rotation: each High tenant at most once before it.
					before := slices.Clone(got[:first])
					slices.Sort(before)
					require.Len(t, slices.Compact(before), first, got)
					if full {
						// Its second batch is aged too: its next turn comes
						// after one more rotation.
						second := first + 1 + slices.Index(got[first+1:], "batch/0/0")
						require.Equal(t, first+4, second, got)
					}
				})
			}
		}
	}
}

// TestRankAgingLevel0RankZero: tenants of rank 0 plan exactly as if
// level 0 did not age, cursor after cursor, with level-0 batches long
// past the threshold (full and partial), a Medium tenant's young one and
// aged level-1 batches.
func TestRankAgingLevel0RankZero(t *testing.T) {
	noAging := planner.DefaultConfig()
	noAging.Levels[0].AgingThreshold = 0
	tenants := []string{"", "a", "b", "c"}
	for _, cursor := range append([]string{"none"}, tenants...) {
		t.Run("cursor="+cursor, func(t *testing.T) {
			aging := newFixture(t, planner.DefaultConfig())
			plain := newFixture(t, noAging)
			for _, f := range []*fixture{aging, plain} {
				require.NoError(t, f.p.SetTerms("m", &planner.Terms{Rank: medium}))
				if cursor != "none" {
					f.setCursor(cursor)
				}
				for i, tn := range tenants {
					f.add(tn, 0, 0, 40)
					f.add(tn, 1, 0, 1+i) // partial, ready by age
					f.add(tn, 2, 1, 10)
				}
				f.advance(time.Hour)
				f.add("m", 0, 0, 20) // young
			}
			want := plain.pollAll(nil)
			require.Len(t, want, 17)
			require.Equal(t, "m/0/0", want[16], "the young Medium batch after every rank-0 one (aged level 1 included)")
			require.Equal(t, want, aging.pollAll(nil))
		})
	}
}

// TestRankAgingLevel0ForceSkipHeld: an aged Low level-0 batch competes at
// rank 0 next to a forced High one (forced batches compete at their
// tenant's rank, so the Low tenant's next, forced but young, batch comes
// last); skipping or holding the Low tenant passes its aged batch over.
func TestRankAgingLevel0ForceSkipHeld(t *testing.T) {
	cfg := planner.DefaultConfig()
	f := newFixture(t, cfg)
	require.NoError(t, f.p.SetTerms("web", &planner.Terms{Rank: high}))
	require.NoError(t, f.p.SetTerms("api", &planner.Terms{Rank: medium}))
	require.NoError(t, f.p.SetTerms("batch", &planner.Terms{Rank: low}))
	f.add("batch", 0, 0, 20) // full, ready now
	f.advance(cfg.Levels[0].AgingThreshold + time.Second)
	f.add("batch", 0, 0, 3) // its next batch: partial and young
	for _, tn := range []string{"api", "web"} {
		f.add(tn, 0, 0, 3) // partial and young: ready only when forced
	}
	f.setCursor("aaa")

	forceAll := forcing(planner.Force{AllTenants: true, AllLevels: true, Before: f.now})
	require.Equal(t, []string{"batch/0/0", "web/0/0", "api/0/0", "batch/0/0"}, drain(t, f.p.View(), f.now, forceAll))
	require.Equal(t, []string{"batch/0/0"}, drain(t, f.p.View(), f.now, nil), "only the aged batch is ready")

	opts := forcing(planner.Force{AllTenants: true, AllLevels: true, Before: f.now})
	opts.Skip = func(tn string, _ uint32) bool { return tn == "batch" }
	require.Equal(t, []string{"web/0/0", "api/0/0"}, drain(t, f.p.View(), f.now, opts))
	f.p.SetHold("batch", true, levelsHeld(f.p, "batch"))
	require.Equal(t, []string{"web/0/0", "api/0/0"}, drain(t, f.p.View(), f.now, forceAll))
	require.Empty(t, drain(t, f.p.View(), f.now, nil))
	f.p.SetHold("batch", false, levelsHeld(f.p, "batch"))
	require.Equal(t, []string{"batch/0/0"}, drain(t, f.p.View(), f.now, nil), "released: aged again")

	// The cursor on web: batch is next in the rotation of rank 0.
	f.setCursor("web")
	require.Equal(t, []string{"batch/0/0", "web/0/0", "api/0/0", "batch/0/0"}, drain(t, f.p.View(), f.now, forceAll))
	f.setCursor("api")
	require.Equal(t, []string{"batch/0/0", "web/0/0", "api/0/0", "batch/0/0"}, drain(t, f.p.View(), f.now, forceAll))
	// Claimed, the aged batch leaves the young one: forced, at rank 2.
	pl := f.mustPoll(nil)
	require.Equal(t, "batch", pl.Tenant)
	require.Equal(t, []string{"web/0/0", "api/0/0", "batch/0/0"}, drain(t, f.p.View(), f.now, forceAll))
}

// TestRankAgingLevel0Views: a view ages level-0 batches by the ranks it
// was opened with; a restored planner ranked again plans exactly like the
// original, poll after poll, across the threshold.
func TestRankAgingLevel0Views(t *testing.T) {
	cfg := planner.DefaultConfig()
	th := int64(cfg.Levels[0].AgingThreshold)
	f := newFixture(t, cfg)
	require.NoError(t, f.p.SetTerms("a", &planner.Terms{Rank: high}))
	require.NoError(t, f.p.SetTerms("z", &planner.Terms{Rank: high}))
	f.add("m", 0, 0, 20) // full, ready at t0
	f.add("a", 0, 0, 20)
	f.add("z", 0, 0, 20)
	f.setCursor("b")

	before, after := t0+th, t0+th+1
	// Two views per ranking (a view plans once: drained, it is spent).
	unranked := []*planner.View{f.p.View(), f.p.View()} // m at rank 0: no aging entry
	require.NoError(t, f.p.SetTerms("m", &planner.Terms{Rank: low}))
	ranked := []*planner.View{f.p.View(), f.p.View()} // m at rank 2, with its aging entry
	require.NoError(t, f.p.SetTerms("m", &planner.Terms{Rank: high}))
	require.NoError(t, f.p.SetTerms("m", &planner.Terms{Rank: medium})) // the planner moved m's entries twice since
	inTurn := []string{"m/0/0", "z/0/0", "a/0/0"}
	last := []string{"z/0/0", "a/0/0", "m/0/0"}
	require.Equal(t, inTurn, drain(t, unranked[0], before, nil))
	require.Equal(t, inTurn, drain(t, unranked[1], after, nil))
	require.Equal(t, last, drain(t, ranked[0], before, nil))
	require.Equal(t, inTurn, drain(t, ranked[1], after, nil))
	require.Equal(t, last, drain(t, f.p.View(), before, nil))
	require.Equal(t, inTurn, drain(t, f.p.View(), after, nil))
	require.NoError(t, f.p.SetTerms("m", &planner.Terms{Rank: low}))

	// Restored and ranked again: the same plans, poll after poll, from
	// before the threshold to past it, with blocks arriving meanwhile.
	r := restored(t, f.snapshot())
	require.Equal(t, inTurn, drain(t, r.View(), before, nil), "not ranked yet: m at rank 0")
	for tn, rk := range map[string]uint8{"a": high, "z": high, "m": low} {
		require.NoError(t, r.SetTerms(tn, &planner.Terms{Rank: rk}))
	}
	f.mirror = r
	var order []string
	for step := range 12 {
		now := before - int64(10*time.Second) + int64(step)*int64(5*time.Second)
		f.now = now
		for _, tn := range []string{"a", "m", "z"} {
			n := 5
			if tn != "m" {
				n = 20 // a full batch each step: a and z stay ready
			}
			f.add(tn, 0, 0, n)
		}
		pl, ok := nextBoth(t, f.p, r, now, f.entry)
		if !ok {
			continue
		}
		order = append(order, fmt.Sprint(pl.Tenant, "@", step))
		require.Equal(t, f.snapshot(), snapshotBytes(t, r))
	}
	// m's first batch waits while a and z are ready, until it ages (step 3
	// is the first past the threshold); then it takes its turn after a.
	require.Equal(t, []string{"z@0", "a@1", "z@2", "a@3", "m@4"}, order[:5], order)
}
