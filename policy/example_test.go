package policy_test

import (
	"fmt"
	"time"

	"github.com/compactkit/compactkit/policy"
)

// Off-peak compaction: new jobs start only between 22:00 and 06:00 at
// UTC+01:00 on working days, and all weekend.
func ExampleRunPolicy() {
	p := policy.RunPolicy{Mode: policy.OnlyIn, Windows: []policy.Window{
		{Days: policy.WorkingDays, Start: 22 * 60, End: 6 * 60, Offset: 60},
		{Days: policy.Saturday | policy.Sunday, Start: 0, End: policy.MinutesPerDay, Offset: 60},
	}}
	if err := p.Validate(); err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range []string{"2026-11-25T12:00:00Z", "2026-11-25T21:30:00Z", "2026-11-28T12:00:00Z"} {
		t, _ := time.Parse(time.RFC3339, s)
		fmt.Println(s, p.MayStart(t.UnixNano()))
	}
	// A freeze that never lifts is refused.
	fmt.Println(policy.RunPolicy{Mode: policy.NeverIn, Windows: []policy.Window{{Days: policy.EveryDay, Start: 0, End: policy.MinutesPerDay}}}.Validate())
	// Output:
	// 2026-11-25T12:00:00Z false
	// 2026-11-25T21:30:00Z true
	// 2026-11-28T12:00:00Z true
	// policy: run policy never-in [Sun,Mon,Tue,Wed,Thu,Fri,Sat 00:00-24:00 UTC+00:00]: no minute of the week lets a job start: policy: work could never start
}

// A tenant's backpressure grade follows its queue, with hysteresis.
func ExampleThresholds_Next() {
	th := policy.Thresholds{
		SlowBlocks: policy.Limit{On: 1000, Off: 800},
		StopBlocks: policy.Limit{On: 5000, Off: 4000},
	}
	g := policy.OK
	for _, queued := range []int64{500, 1200, 900, 6000, 4500, 3000, 700} {
		g = th.Next(g, policy.Load{Blocks: queued}, false)
		fmt.Println(queued, g)
	}
	// Output:
	// 500 ok
	// 1200 slow
	// 900 slow
	// 6000 stop
	// 4500 stop
	// 3000 slow
	// 700 ok
}

func ExampleClass() {
	c, err := policy.ParseClass("low")
	fmt.Println(c, c.Rank(), err)
	// Output: low 2 <nil>
}
