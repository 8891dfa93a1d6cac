//go:build !unix

package scheduler

import "time"

// cpuTime is not available here: benchmarks report wall time only.
func cpuTime() (time.Duration, bool) { return 0, false }
