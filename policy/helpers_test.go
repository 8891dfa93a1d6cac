package policy_test

import (
	"time"

	"github.com/compactkit/compactkit/policy"
)

// The package checks a tenant's policy as a whole (Tenant.Validate); these
// check one part of it, in a policy that holds nothing else.

func windowErr(w policy.Window) error {
	return policy.Tenant{Run: policy.RunPolicy{Mode: policy.OnlyIn, Windows: []policy.Window{w}}}.Validate()
}

func runErr(p policy.RunPolicy) error { return policy.Tenant{Run: p}.Validate() }

func levelsErr(ls []policy.Level) error { return policy.Tenant{Levels: ls}.Validate() }

func thresholdsErr(th policy.Thresholds) error { return policy.Tenant{Pressure: th}.Validate() }

// contains reports whether the window holds log time t.
func contains(w policy.Window, t int64) bool {
	return policy.RunPolicy{Mode: policy.OnlyIn, Windows: []policy.Window{w}}.MayStart(t)
}

// has reports whether the set holds the day.
func has(w policy.Weekdays, d time.Weekday) bool { return w&policy.Days(d) != 0 }

// mayStartLevel reports whether the tenant's new jobs at the level may
// start at log time now.
func mayStartLevel(p policy.Tenant, now int64, level uint32) bool {
	return p.MayStart(now) && policy.ClosedLevels(p.LevelRuns, now)&(1<<level) == 0
}
