package sim

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/compactkit/compactkit/raftfsm"
)

var (
	flagSeeds    = flag.Int("sim.seeds", 0, "number of seeds to run (default: $COMPACTKIT_SIM_SEEDS, else the CI count)")
	flagStart    = flag.Uint64("sim.start", 1, "first seed")
	flagSeed     = flag.Uint64("sim.seed", 0, "replay this one seed, with a trace")
	flagDisable  = flag.String("sim.disable", "", "comma-separated faults to disable (see faults.go)")
	flagData     = flag.Int("sim.data", -1, "1: data check on every seed; 0: never; default: one seed in 8")
	flagBucket   = flag.Int("sim.bucket", -1, "1: the bucket log on every seed; 0: never; default: one seed in 4")
	flagSteps    = flag.Int("sim.steps", 0, "steps with faults per seed (default 400)")
	flagParallel = flag.Int("sim.parallel", 0, "seeds run in parallel (default GOMAXPROCS)")
	flagKnown    = flag.String("sim.known", "", "comma-separated known issues whose checks are skipped")
	flagShrink   = flag.Bool("sim.shrink", true, "shrink a failing seed by disabling faults")
	flagTraceLen = flag.Int("sim.tracelen", 400, "events kept in the trace of a replayed seed")
	flagFull     = flag.Bool("sim.full", false, "compare every replica's state and snapshot after every step (slow)")
)

// ciSeeds is the number of seeds `go test` runs by default: about a
// minute on two cores (fewer under -short or -race).
const ciSeeds = 40

func seedCount(t *testing.T) int {
	if *flagSeeds > 0 {
		return *flagSeeds
	}
	if v := os.Getenv("COMPACTKIT_SIM_SEEDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("COMPACTKIT_SIM_SEEDS=%q: want a positive number", v)
		}
		return n
	}
	n := ciSeeds
	if testing.Short() {
		n = 10
	}
	if raceEnabled {
		n = 4
	}
	return n
}

func optionsFor(t *testing.T, seed uint64) Options {
	opt := Options{Steps: *flagSteps, FullReplicaCheck: *flagFull}
	opt.Data = switched(*flagData, seed%8 == 0)
	opt.Bucket = switched(*flagBucket, seed%4 == 3)
	if *flagDisable != "" {
		fs, err := ParseFaults(*flagDisable)
		if err != nil {
			t.Fatal(err)
		}
		opt.Disable = fs
	}
	if *flagKnown != "" {
		opt.KnownIssues = strings.Split(*flagKnown, ",")
	}
	return opt
}

// switched reads a flag that switches a check on every seed (1) or on
// none (0); any other value leaves it to def.
func switched(flag int, def bool) bool {
	switch flag {
	case 1:
		return true
	case 0:
		return false
	}
	return def
}

// TestSimulation runs the deterministic simulation over many seeds: every
// contract of ARCHITECTURE.md after every step, then liveness. A failing
// seed is shrunk (faults disabled while it still fails) and reported with
// the command that replays it and the trace of its last steps.
func TestSimulation(t *testing.T) {
	if *flagSeed != 0 {
		opt := optionsFor(t, *flagSeed)
		if *flagData == -1 {
			opt.Data = *flagSeed%8 == 0
		}
		opt.Trace = true
		opt.TraceLen = *flagTraceLen
		rep, err := Run(*flagSeed, opt)
		if err != nil {
			reportViolation(t, err, opt)
			return
		}
		t.Logf("seed %d: %s", *flagSeed, summary(rep))
		return
	}
	n := seedCount(t)
	// The simulation allocates heavily and keeps little: collecting less
	// often cuts a third of its CPU time, for a few hundred MB per seed in
	// flight.
	// $GOGC, when set, wins.
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(400))
	}
	par := *flagParallel
	if par <= 0 {
		par = runtime.GOMAXPROCS(0)
	}
	start := time.Now()
	var (
		next      atomic.Uint64
		mu        sync.Mutex
		total     Report
		failures  []error
		calmSteps int
		ran       int                   // seeds run (fewer than n if failures stopped the run)
		seedDigs  = make([][32]byte, n) // each seed's digest, by seed

		wg sync.WaitGroup
	)
	next.Store(*flagStart)
	last := *flagStart + uint64(n)
	for range par {
		wg.Go(func() {
			for {
				seed := next.Add(1) - 1
				if seed >= last {
					return
				}
				opt := optionsFor(t, seed)
				rep, err := Run(seed, opt)
				mu.Lock()
				accumulate(&total, rep)
				if rep != nil {
					seedDigs[seed-*flagStart] = rep.Digest
					calmSteps += rep.LivenessSteps
					ran++
				}
				if err != nil {
					failures = append(failures, err)
				}
				stopNow := len(failures) >= 3
				mu.Unlock()
				if stopNow {
					next.Store(last)
				}
			}
		})
	}
	wg.Wait()
	// The range's digest chains the seeds' digests in seed order, however
	// the seeds were spread over the goroutines.
	for _, d := range seedDigs {
		total.Digest = chain(total.Digest, d[:])
	}
	t.Logf("%d seeds from %d in %s: %s, mean liveness steps %d", n, *flagStart, time.Since(start).Round(time.Millisecond), summary(&total), calmSteps/max(ran, 1))
	if testing.Verbose() || n > ciSeeds {
		t.Logf("faults injected: %s", faultCounts(&total))
	}
	for i, err := range failures {
		if i == 0 {
			v, _ := err.(*Violation)
			opt := Options{}
			if v != nil {
				opt = optionsFor(t, v.Seed)
				opt.Data = v.Data
			}
			reportViolation(t, err, opt)
			continue
		}
		t.Errorf("also: %v", err)
	}
}

// reportViolation shrinks the failing run and reports it.
func reportViolation(t *testing.T, err error, opt Options) {
	t.Helper()
	v, ok := err.(*Violation)
	if !ok {
		t.Fatal(err)
	}
	if *flagShrink {
		v = shrink(v, opt)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "VIOLATION %v\n\nreplay: %s\n\ntrace (last events):\n", v, v.Replay())
	for _, line := range v.Trace {
		b.WriteString("  " + line + "\n")
	}
	t.Error(b.String())
}

// shrink disables fault kinds one at a time while the seed still breaks
// the same invariant, then re-runs it with a trace.
func shrink(v *Violation, opt Options) *Violation {
	opt.Trace, opt.TraceLen = true, 200
	best := v
	disabled := append([]Fault(nil), opt.Disable...)
	for f := range NumFaults {
		if containsFault(disabled, f) {
			continue
		}
		try := opt
		try.Disable = append(append([]Fault(nil), disabled...), f)
		_, err := Run(v.Seed, try)
		if nv, ok := err.(*Violation); ok && nv.Invariant == v.Invariant {
			disabled = try.Disable
			best = nv
		}
	}
	if len(best.Trace) == 0 {
		opt.Disable = disabled
		if _, err := Run(v.Seed, opt); err != nil {
			if nv, ok := err.(*Violation); ok {
				best = nv
			}
		}
	}
	return best
}

func containsFault(fs []Fault, f Fault) bool {
	for _, x := range fs {
		if x == f {
			return true
		}
	}
	return false
}

func accumulate(total, rep *Report) {
	if rep == nil {
		return
	}
	total.Steps += rep.Steps
	total.LivenessSteps = max(total.LivenessSteps, rep.LivenessSteps)
	total.Entries += rep.Entries
	for f := range NumFaults {
		total.Faults[f] += rep.Faults[f]
	}
	total.Blocks += rep.Blocks
	total.Upgrades += rep.Upgrades
	total.Completions += rep.Completions
	total.Refusals += rep.Refusals
	total.Evictions += rep.Evictions
	total.Quarantined += rep.Quarantined
	total.CleanupJobs += rep.CleanupJobs
	total.DataChecks += rep.DataChecks
	total.PolicyStarts += rep.PolicyStarts
}

func summary(r *Report) string {
	return fmt.Sprintf("steps %d, entries %d, blocks %d, completions %d, refusals %d, evictions %d, cleanup jobs %d, data checks %d, upgrades %d, policy-bound starts %d, max liveness steps %d, digest %x",
		r.Steps, r.Entries, r.Blocks, r.Completions, r.Refusals, r.Evictions, r.CleanupJobs, r.DataChecks, r.Upgrades, r.PolicyStarts, r.LivenessSteps, r.Digest)
}

func faultCounts(r *Report) string {
	var b strings.Builder
	for f := range NumFaults {
		fmt.Fprintf(&b, "%s=%d ", f, r.Faults[f])
	}
	return b.String()
}

func TestDigestFollowsBehaviour(t *testing.T) {
	opt := Options{Steps: 60}
	rep, err := Run(5, opt)
	require.NoError(t, err)
	require.NotEqual(t, [32]byte{}, rep.Digest)
	again, err := Run(5, opt)
	require.NoError(t, err)
	require.Equal(t, rep.Digest, again.Digest, "the same seed, the same digest")

	// One more command, whose only effect is its own result and the
	// reader watermark it leaves in the state: the counts of the summary
	// cannot tell, the digest does.
	opt.tamper = func(s *Sim) {
		if s.step == 30 {
			s.propose(&raftfsm.Command{Watermark: &raftfsm.Watermark{OldestReader: t0}}, nil)
		}
	}
	other, err := Run(5, opt)
	require.NoError(t, err)
	require.NotEqual(t, rep.Digest, other.Digest)

	other, err = Run(6, Options{Steps: 60})
	require.NoError(t, err)
	require.NotEqual(t, rep.Digest, other.Digest)
}
