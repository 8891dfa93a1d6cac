package planner

import ck "github.com/compactkit/compactkit"

// CleanupPlan plans a cleanup-only job: it pulls up to n tombstones from
// next (the releasable objects not attached to any job, from the index's
// view; n is at most 1024, the bound of Config.TombstonesPerJob) and
// returns a plan with no sources that carries them, or false if next
// yields none. The job is named by the planning time and the tombstones
// (see the package documentation on job names).
//
// n counts objects. The index hands out a tombstone record (the sources of
// one replacement) as its objects one after the other; when the job is
// admitted, the index attaches every record one of the pulled objects
// belongs to whole, so the admitted plan lists all of its sources even if
// n cut it short here.
//
// The planner keeps no state for cleanup-only jobs: the state machine's
// Prepare calls CleanupPlan when released tombstones have waited too long
// for a compaction job to carry them, and Apply admits a tombstone into
// one job only.
func CleanupPlan(next func() (ck.Tombstone, bool), n int, now int64) (ck.JobPlan, bool) {
	n = min(n, maxTombstonesPerJob)
	var ts []ck.Tombstone
	for len(ts) < n {
		t, ok := next()
		if !ok {
			break
		}
		ts = append(ts, t)
	}
	if len(ts) == 0 {
		return ck.JobPlan{}, false
	}
	return ck.JobPlan{Name: cleanupName(now, ts), Tombstones: ts}, true
}
