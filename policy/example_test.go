package policy_test

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/compactkit/compactkit/policy"
)

// Off-peak compaction: new jobs start only between 22:00 and 06:00 at
// UTC+01:00 on working days, and all weekend.
func ExampleRunPolicy() {
	p := policy.RunPolicy{Mode: policy.OnlyIn, Windows: []policy.Window{
		{Days: policy.Days(time.Monday, time.Tuesday, time.Wednesday, time.Thursday, time.Friday), Start: 22 * 60, End: 6 * 60, Offset: 60},
		{Days: policy.Days(time.Saturday, time.Sunday), Start: 0, End: 24 * 60, Offset: 60},
	}}
	if err := (policy.Tenant{Run: p}).Validate(); err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range []string{"2026-11-25T12:00:00Z", "2026-11-25T21:30:00Z", "2026-11-28T12:00:00Z"} {
		t, _ := time.Parse(time.RFC3339, s)
		fmt.Println(s, p.MayStart(t.UnixNano()))
	}
	// A freeze that never lifts is refused.
	freeze := policy.RunPolicy{Mode: policy.NeverIn, Windows: []policy.Window{{Days: policy.EveryDay, Start: 0, End: 24 * 60}}}
	fmt.Println(policy.Tenant{Run: freeze}.Validate())
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

// A policy's JSON form, as the admin API speaks it, and back.
func ExampleTenant_MarshalJSON() {
	p := policy.Tenant{Class: policy.Low, MaxInProgress: 2, StaleAfter: 2 * time.Hour,
		Run: policy.RunPolicy{Mode: policy.OnlyIn, Windows: []policy.Window{{Days: policy.Days(time.Saturday, time.Sunday), Start: 0, End: 24 * 60}}}}
	data, err := json.Marshal(p)
	fmt.Println(string(data), err)
	var back policy.Tenant
	fmt.Println(json.Unmarshal(data, &back), back.Equal(p))
	fmt.Println(json.Unmarshal([]byte(`{"class":"urgent"}`), &back))
	// Output:
	// {"class":"low","max_in_progress":2,"run":{"mode":"only-in","windows":[{"days":["Sun","Sat"],"start":"00:00","end":"24:00","offset_minutes":0}]},"stale_after":"2h0m0s"} <nil>
	// <nil> true
	// class: policy: class "urgent", want high, medium or low: policy: invalid
}
