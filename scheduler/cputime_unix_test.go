//go:build unix

package scheduler

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time (user + system) the process has used so far,
// and true. Benchmarks report it per operation next to ns/op: on a shared
// machine the wall clock also counts the time other processes held the CPU.
func cpuTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
