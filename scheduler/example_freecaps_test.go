package scheduler_test

import (
	"fmt"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/scheduler"
)

// With FreeCaps, a poll that completes a capped tenant's job starts the
// tenant's next one: the completion counts off the cap before assignment,
// and Apply, which applies the changes in order, agrees.
func ExampleSchedule_FreeCaps() {
	s, _ := scheduler.New(scheduler.DefaultConfig())
	addJobs(s, 1, "acme-1", "acme-2")
	s.SetLimits("acme", &scheduler.Limits{MaxInProgress: 1})
	sc := s.Schedule(start)
	sc.AssignJob("w1")
	applyUpdate(s, ck.Entry{Index: 2, Time: start}, sc.Update())

	js, _, _ := s.Job("acme-1")
	sc = s.Schedule(start).FreeCaps()
	sc.UpdateJob("w1", &ck.StatusUpdate{Job: "acme-1", Token: js.Token, Status: ck.ReportSuccess,
		Outputs: []ck.BlockMeta{{ID: "acme-1-out", Tenant: "acme", Level: 1}}})
	for sc.AssignJob("w1") {
	}
	fmt.Println("freed:", sc.Freed(), "held:", sc.Held("acme", 0))
	applyUpdate(s, ck.Entry{Index: 3, Time: start}, sc.Update())
	// Output:
	//   assign acme-1: in_progress token=2
	// freed: [acme] held: true
	//   complete acme-1: removed
	//   assign acme-2: in_progress token=3
}
