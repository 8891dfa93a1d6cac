package sim_test

import (
	"fmt"

	"github.com/compactkit/compactkit/internal/sim"
)

// Run one seed: faults for a few steps, the invariants after each, then
// liveness. The same seed always runs the same way.
func ExampleRun() {
	rep, err := sim.Run(42, sim.Options{Steps: 60})
	if err != nil {
		fmt.Println("violation:", err)
		return
	}
	again, _ := sim.Run(42, sim.Options{Steps: 60})
	fmt.Println("deterministic:", rep.Digest == again.Digest)
	fmt.Println("reached the fixed point:", rep.LivenessSteps > 0)
	// Output:
	// deterministic: true
	// reached the fixed point: true
}

// A failing seed is replayed with the command its Violation gives.
func ExampleViolation_Replay() {
	v := &sim.Violation{Seed: 7, Disabled: []sim.Fault{sim.FaultLeaderChange}}
	fmt.Println(v.Replay())
	// Output:
	// go test ./internal/sim/ -run 'TestSimulation$' -v -sim.seed=7 -sim.disable=leader-change
}
