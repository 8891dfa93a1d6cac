package sim

import "testing"

// Bucket mode exercises what it claims to: races lost and won, unknown
// outcomes, lease extensions on a time step, restarts from checkpoints,
// and replicas paused behind a truncation that restore a checkpoint.
func TestBucketModeCoverage(t *testing.T) {
	var behind, extensions, conflicts int
	var faults [NumFaults]int
	for seed := uint64(3); seed < 9; seed++ {
		s := newSim(seed, Options{Bucket: true})
		s.run()
		behind += s.bucket.behind
		for _, r := range s.replicas {
			st := r.blog.Stats()
			extensions += int(st.Extensions)
			conflicts += int(st.Conflicts)
		}
		for f, n := range s.rep.Faults {
			faults[f] += n
		}
	}
	t.Logf("behind the mark %d, extensions %d, conflicts %d, faults %v", behind, extensions, conflicts, faults)
	for _, f := range []Fault{FaultBucketRace, FaultBucketPutFail, FaultBucketLostAck, FaultBucketExistsAck, FaultBucketReadFail,
		FaultBucketRestart, FaultBucketTruncate, FaultBucketStoreClock, FaultBucketPause} {
		if faults[f] == 0 {
			t.Errorf("fault %s never injected", f)
		}
	}
	if behind == 0 || extensions == 0 || conflicts == 0 {
		t.Errorf("behind the mark %d, extensions %d, conflicts %d: want each above 0", behind, extensions, conflicts)
	}
}
