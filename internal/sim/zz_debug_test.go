package sim

import (
	ck "github.com/compactkit/compactkit"
	"fmt"
	"testing"
)

func TestZZProgress(t *testing.T) {
	seed := *flagSeed
	if seed == 0 {
		t.Skip()
	}
	opt := Options{Data: seed%8 == 0}
	opt.tamper = func(s *Sim) {
		if s.step%250 != 0 {
			return
		}
		st := s.replicas[0].fsm.Stats()
		w := 0
		cap := 0
		for _, x := range s.workers {
			if !x.shutdown {
				w++
				cap += x.capacity
			}
		}
		fmt.Printf("step %d %s: workers %d cap %d queued %d jobs %d claimed %d tomb pend %d rel %d att %d orphans %d completions %d cleanupjobs %d\n",
			s.step, s.phase, w, cap, st.Planner.Queued, st.Scheduler.Jobs, st.Planner.Claimed,
			st.Index.TombstonesPending, st.Index.TombstonesReleasable, st.Index.TombstonesAttached, st.Index.Orphans, s.rep.Completions, s.rep.CleanupJobs)
	}
	rep, err := Run(seed, opt)
	t.Log(rep.LivenessSteps, err)
}

func TestZZPrepare(t *testing.T) {
	seed := *flagSeed
	if seed == 0 {
		t.Skip()
	}
	opt := Options{Data: seed%8 == 0}
	opt.tamper = func(s *Sim) {
		if s.step%500 != 0 || s.phase != "liveness" {
			return
		}
		f := s.leaderReplica().fsm
		iv := f.Index()
		at, ok := iv.OldestUnattachedReleasable(s.leaderClock())
		fmt.Printf("step %d now %d oldest unattached releasable %d ok %t wait %v wm ", s.step, s.leaderClock(), at, ok, float64(s.leaderClock()-at)/1e9)
		fmt.Println(iv.Watermark())
		for _, w := range s.workers {
			fmt.Printf("  worker %s cap %d jobs %d out %v nextPoll %v\n", w.id, w.capacity, len(w.jobs), w.out != nil, float64(w.nextPoll-s.now)/1e9)
		}
		cmd, err := f.Prepare(&ck.PollRequest{WorkerID: "probe", Seq: uint64(s.step), FreeSlots: 1}, s.leaderClock())
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, c := range cmd.Poll.Update.Changes {
			fmt.Printf("  probe change %s %s\n", c.Kind, c.Job)
		}
	}
	_, err := Run(seed, opt)
	t.Log(err)
}
