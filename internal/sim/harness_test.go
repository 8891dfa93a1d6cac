package sim

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/raftfsm"
)

// The tests in this file break the system (or the harness's view of it)
// on purpose, and require the simulation to report the broken invariant:
// the checks can fail, and fail for the right reason.

// tampered runs seeds from 1 until tamper reports it has done its
// damage, and returns that run's violation.
func tampered(t *testing.T, opt Options, tamper func(s *Sim) bool) *Violation {
	t.Helper()
	for seed := uint64(1); seed <= 20; seed++ {
		done := false
		o := opt
		o.tamper = func(s *Sim) {
			if !done {
				done = tamper(s)
			}
		}
		_, err := Run(seed, o)
		if !done {
			continue
		}
		require.Error(t, err, "seed %d: the damage went unnoticed", seed)
		v, ok := err.(*Violation)
		require.True(t, ok, "%v", err)
		t.Logf("seed %d: %v", seed, v)
		return v
	}
	t.Fatal("no seed gave the tamper a chance")
	return nil
}

func TestHarnessCatchesReplicaDivergence(t *testing.T) {
	// A follower silently skips an ingest entry: its state differs from
	// the others' at every later position.
	v := tampered(t, Options{Steps: 150, Disable: []Fault{FaultSnapshotRestore, FaultRebuildReplica}},
		func(s *Sim) bool {
			if s.step < 40 {
				return false
			}
			for _, r := range s.replicas[1:] {
				if r.pos < s.commit && s.log[r.pos].cmd.AddBlocks != nil {
					r.pos++
					return true
				}
			}
			return false
		})
	require.Equal(t, "replica equality", v.Invariant, v.Detail)
}

func TestHarnessCatchesLostBlock(t *testing.T) {
	// The model forgets a queued block and resurrects a removed one of the
	// same level: the counts agree, only the periodic full comparison of
	// the live sets can tell.
	v := tampered(t, Options{Steps: 150}, func(s *Sim) bool {
		m := s.model
		// Just before a full comparison, so that no later entry touches
		// either block first.
		if s.step < 40 || s.step-m.fullAt < fullEvery || s.replicas[0].pos == s.modelPos {
			return false
		}
		queued := func(id string) bool { _, c := m.claimed[id]; return !c && !m.quar[id] }
		for _, x := range slices.Sorted(maps.Keys(m.live)) {
			if !queued(x) {
				continue
			}
			for _, y := range slices.Sorted(maps.Keys(m.blocks)) {
				if !m.live[y] && queued(y) && m.blocks[y].meta.Level == m.blocks[x].meta.Level {
					delete(m.live, x)
					m.live[y] = true
					return true
				}
			}
		}
		return false
	})
	require.Equal(t, "nothing lost, nothing twice", v.Invariant, v.Detail)
	require.Contains(t, v.Detail, "live in the model, not in the index")
}

func TestHarnessCatchesTwoHolders(t *testing.T) {
	// A second worker believes it holds a job's current token.
	v := tampered(t, Options{Steps: 150}, func(s *Sim) bool {
		if len(s.workers) < 2 {
			return false
		}
		f := s.replicas[0].fsm
		for i, w := range s.workers {
			for _, j := range w.jobs {
				js, _, ok := f.Job(j.name)
				if ok && js.Status == ck.StatusInProgress && js.Token == j.token {
					other := s.workers[(i+1)%len(s.workers)]
					cp := *j
					other.jobs = append(other.jobs, &cp)
					return true
				}
			}
		}
		return false
	})
	require.Equal(t, "at most one token", v.Invariant, v.Detail)
}

// stallFleet stalls every worker for a day once faults stop.
func stallFleet(s *Sim) bool {
	if s.phase != "liveness" {
		return false
	}
	for _, w := range s.workers {
		w.stalledUntil = s.now + int64(24*3600e9)
	}
	return true
}

func TestHarnessCatchesNoProgress(t *testing.T) {
	// Once faults stop, the fleet stalls for good.
	v := tampered(t, Options{Steps: 60, LivenessSteps: 100}, stallFleet)
	require.Equal(t, "liveness", v.Invariant, v.Detail)
}

func TestHarnessCatchesStall(t *testing.T) {
	// The same, with a generous bound: the stall watchdog fires first.
	v := tampered(t, Options{Steps: 60, LivenessSteps: 100_000, StallSteps: 50}, stallFleet)
	require.Equal(t, "liveness", v.Invariant, v.Detail)
	require.Contains(t, v.Detail, "no progress in the 50 steps")
}

func TestHarnessCatchesLostRecords(t *testing.T) {
	// A live block's object is overwritten with another live block's
	// bytes: its records are gone and the other's are there twice.
	ctx := context.Background()
	v := tampered(t, Options{Steps: 200, Data: true}, func(s *Sim) bool {
		if s.step < 40 || len(s.model.live) < 2 {
			return false
		}
		ids := slices.Sorted(maps.Keys(s.model.live))
		rc, err := s.store.Get(ctx, ck.ObjectKey(ids[1]))
		if err != nil {
			return false
		}
		b, err := io.ReadAll(rc)
		_ = rc.Close()
		require.NoError(t, err)
		require.NoError(t, s.store.Put(ctx, ck.ObjectKey(ids[0]), bytes.NewReader(b)))
		s.dataVer-- // check the data now
		return true
	})
	require.Equal(t, "records exactly once", v.Invariant, v.Detail)
}

func TestHarnessCatchesStaleRestore(t *testing.T) {
	// A follower is restored from a snapshot of an earlier position but
	// believes it is at the later one: its snapshot bytes differ.
	v := tampered(t, Options{Steps: 150, Disable: []Fault{FaultSnapshotRestore, FaultRebuildReplica}}, func(s *Sim) bool {
		if s.step < 40 {
			return false
		}
		r := s.replicas[1]
		if r.pos == 0 || r.pos+1 > s.commit || s.log[r.pos].cmd.AddBlocks == nil {
			return false // the entry skipped must change the state
		}
		var b bytes.Buffer
		require.NoError(t, r.fsm.Snapshot(&b))
		s.applyNext(r)
		fresh, err := raftfsm.New(s.cfg, r.opts...)
		require.NoError(t, err)
		require.NoError(t, fresh.Restore(&b))
		r.fsm = fresh
		r.gen++
		return true
	})
	require.Equal(t, "replica equality", v.Invariant, v.Detail)
}

// Bucket mode: the same checks hold over the bucket log.
func TestHarnessCatchesTwoHoldersOnBucket(t *testing.T) {
	v := tampered(t, Options{Steps: 150, Bucket: true}, func(s *Sim) bool {
		if len(s.workers) < 2 {
			return false
		}
		f := s.replicas[0].fsm
		for i, w := range s.workers {
			for _, j := range w.jobs {
				if js, _, ok := f.Job(j.name); ok && js.Status == ck.StatusInProgress && js.Token == j.token {
					cp := *j
					s.workers[(i+1)%len(s.workers)].jobs = append(s.workers[(i+1)%len(s.workers)].jobs, &cp)
					return true
				}
			}
		}
		return false
	})
	require.Equal(t, "at most one token", v.Invariant, v.Detail)
}

// A log entry damaged in the bucket after one replica read it: a replica
// that reads it later stops (it never applies other bytes than the
// first), and the run reports it.
func TestHarnessCatchesDamagedBucketEntry(t *testing.T) {
	v := tampered(t, Options{Steps: 150, Bucket: true}, func(s *Sim) bool {
		if s.step < 40 {
			return false
		}
		tip := s.replicas[0].blog.Applied()
		for _, r := range s.replicas[1:] {
			if r.blog.Applied() < tip && r.paused <= s.step {
				key := fmt.Sprintf("%s/log/%020d", bucketPrefix, tip)
				rc, err := s.bucket.mem.Get(context.Background(), key)
				require.NoError(t, err)
				data, err := io.ReadAll(rc)
				require.NoError(t, err)
				data[len(data)/2] ^= 0x40
				require.NoError(t, s.bucket.mem.Put(context.Background(), key, bytes.NewReader(data)))
				return true
			}
		}
		return false
	})
	require.Equal(t, "bucket log", v.Invariant, v.Detail)
	require.Contains(t, v.Detail, "corrupt")
}
