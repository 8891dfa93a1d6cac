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

// Renew returns the lease renewed at log time now for a duration d: its
// deadline becomes the later of the current deadline and now + d (saturating,
// with a negative d treated as zero). Renew never shortens a lease and keeps
// its token.
func (l Lease) Renew(now int64, d time.Duration) Lease {
	l.Deadline = Extend(l.Deadline, now, d)
	return l
}

// Expired reports whether the lease has expired at log time now, that is
// whether now is strictly after the deadline. At exactly the deadline the
// lease still holds.
func (l Lease) Expired(now int64) bool {
	return now > l.Deadline
}

// ExpiredWithSkew reports whether the lease has expired at log time now
// allowing a tolerance of skew past the deadline: it is true iff
// now > Deadline + skew (saturating). A negative skew is treated as zero, so
// ExpiredWithSkew never judges a lease expired earlier than [Lease.Expired].
func (l Lease) ExpiredWithSkew(now int64, skew time.Duration) bool {
	return now > addNonNegative(l.Deadline, skew)
}

// Remaining returns how long the lease still holds at log time now: the
// deadline minus now, or 0 once the lease has expired. It is also 0 at
// exactly the deadline, the last instant at which the lease holds. The result
// saturates at the largest [time.Duration].
func (l Lease) Remaining(now int64) time.Duration {
	if now >= l.Deadline {
		return 0
	}
	r := l.Deadline - now
	if r < 0 { // the subtraction overflowed: the true value exceeds MaxInt64
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(r)
}

// Extend returns the later of deadline and now + d (saturating, with a
// negative d treated as zero). It is the deadline arithmetic of
// [Lease.Renew], exposed for callers that keep deadlines rather than leases;
// a new leader uses it to extend every in-progress lease by one lease
// duration when it takes office.
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
