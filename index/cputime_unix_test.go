//go:build unix

package index

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user + system) the process has used:
// benchmarks report it per operation, since wall time is inflated when the
// machine is shared.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
