package lease

import (
	"math"
	"time"
)

// Grant returns the deadline of a lease granted at log time now for d: the
// last instant, in log time (Unix nanoseconds), at which the lease still
// holds. It is now + d, saturating at [math.MaxInt64] instead of
// overflowing. A negative d is treated as zero, so a granted lease never
// ends before now.
func Grant(now int64, d time.Duration) int64 {
	return addNonNegative(now, d)
}

// Extend returns the later of deadline and now + d (saturating, with a
// negative d treated as zero): a renewal at now for d never shortens a
// lease. The scheduler renews leases with it, and a new leader extends
// every in-progress lease by one lease duration with it when it takes
// office.
func Extend(deadline, now int64, d time.Duration) int64 {
	return max(deadline, addNonNegative(now, d))
}

// addNonNegative returns t + d, treating a negative d as zero and saturating
// at math.MaxInt64.
func addNonNegative(t int64, d time.Duration) int64 {
	if d <= 0 {
		return t
	}
	if t > math.MaxInt64-int64(d) {
		return math.MaxInt64
	}
	return t + int64(d)
}
