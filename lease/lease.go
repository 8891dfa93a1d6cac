package lease

import (
	"math"
	"time"

	"github.com/compactkit/compactkit/fencing"
)

// Lease is a lease on a job, judged on log time.
type Lease struct {
	// Token is the fencing token of the assignment the lease protects.
	Token fencing.Token
	// Deadline is the last instant, in log time (Unix nanoseconds), at which
	// the lease still holds.
	Deadline int64
}

// Grant returns a lease for token that runs for d from the log time now:
// its deadline is now + d, saturating at [math.MaxInt64] instead of
// overflowing. A negative d is treated as zero, so a granted lease never ends
// before now.
func Grant(now int64, token fencing.Token, d time.Duration) Lease {
	return Lease{Token: token, Deadline: addNonNegative(now, d)}
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
