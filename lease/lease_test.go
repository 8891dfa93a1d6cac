package lease_test

import (
	"math"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/lease"
)

// edgy draws int64 values with the boundaries over-represented.
var edgy = rapid.OneOf(
	rapid.Int64(),
	rapid.SampledFrom([]int64{math.MinInt64, math.MinInt64 + 1, -1, 0, 1, math.MaxInt64 - 1, math.MaxInt64}),
	rapid.Int64Range(math.MaxInt64-int64(time.Hour), math.MaxInt64),
)

var (
	maxInt64 = big.NewInt(math.MaxInt64)
	zero     = big.NewInt(0)
)

// addModel is t + max(d, 0), saturating at MaxInt64, computed exactly.
func addModel(t int64, d time.Duration) int64 {
	sum := new(big.Int).Add(big.NewInt(t), big.NewInt(max(int64(d), 0)))
	if sum.Cmp(maxInt64) > 0 {
		return math.MaxInt64
	}
	return sum.Int64()
}

func TestGrant(t *testing.T) {
	l := lease.Grant(1_000, 7, 15*time.Second)
	require.Equal(t, lease.Lease{Token: 7, Deadline: 1_000 + int64(15*time.Second)}, l)

	require.Equal(t, int64(math.MaxInt64), lease.Grant(math.MaxInt64-10, 1, 11).Deadline, "saturates")
	require.Equal(t, int64(1_000), lease.Grant(1_000, 1, -time.Second).Deadline, "a negative duration counts as zero")
}

func TestGrantProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		now := edgy.Draw(t, "now")
		d := time.Duration(edgy.Draw(t, "d"))
		tok := fencing.Token(rapid.Uint64().Draw(t, "token"))

		l := lease.Grant(now, tok, d)
		require.Equal(t, tok, l.Token)
		require.Equal(t, addModel(now, d), l.Deadline)
		require.GreaterOrEqual(t, l.Deadline, now, "a deadline never wraps into the past")
		require.False(t, l.Expired(now), "a fresh lease holds at the moment it is granted")
	})
}

func TestRenewProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		l := lease.Lease{
			Token:    fencing.Token(rapid.Uint64().Draw(t, "token")),
			Deadline: edgy.Draw(t, "deadline"),
		}
		now := edgy.Draw(t, "now")
		d := time.Duration(edgy.Draw(t, "d"))

		r := l.Renew(now, d)
		require.Equal(t, l.Token, r.Token, "renewal keeps the token")
		require.GreaterOrEqual(t, r.Deadline, l.Deadline, "renewal never shortens")
		require.Equal(t, max(l.Deadline, addModel(now, d)), r.Deadline)
		require.Equal(t, r.Deadline, lease.Extend(l.Deadline, now, d))
		require.Equal(t, r, r.Renew(now, d), "renewing twice at the same time changes nothing")
	})
}

func TestRenewNeverShortens(t *testing.T) {
	l := lease.Grant(0, 3, time.Minute)
	require.Equal(t, l, l.Renew(int64(time.Second), time.Second))
	require.Equal(t, int64(2*time.Minute), l.Renew(int64(time.Minute), time.Minute).Deadline)
}

func TestExpiredBoundary(t *testing.T) {
	l := lease.Lease{Token: 1, Deadline: 100}
	require.False(t, l.Expired(99))
	require.False(t, l.Expired(100), "the lease holds at exactly its deadline")
	require.True(t, l.Expired(101))

	require.False(t, l.ExpiredWithSkew(105, 5))
	require.True(t, l.ExpiredWithSkew(106, 5))
	require.True(t, l.ExpiredWithSkew(101, -5), "a negative skew counts as zero")
	require.False(t, lease.Lease{Deadline: math.MaxInt64}.ExpiredWithSkew(math.MaxInt64, time.Hour))
}

func TestExpiredProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		l := lease.Lease{Deadline: edgy.Draw(t, "deadline")}
		now := edgy.Draw(t, "now")
		skew := time.Duration(edgy.Draw(t, "skew"))

		require.Equal(t, now > l.Deadline, l.Expired(now))
		require.False(t, l.Expired(l.Deadline))
		if l.Deadline < math.MaxInt64 {
			require.True(t, l.Expired(l.Deadline+1))
		}
		require.Equal(t, now > addModel(l.Deadline, skew), l.ExpiredWithSkew(now, skew))
		if l.ExpiredWithSkew(now, skew) {
			require.True(t, l.Expired(now), "skew only ever delays expiry")
		}
	})
}

func TestRemaining(t *testing.T) {
	l := lease.Lease{Deadline: int64(10 * time.Second)}
	require.Equal(t, 4*time.Second, l.Remaining(int64(6*time.Second)))
	require.Equal(t, time.Duration(0), l.Remaining(int64(10*time.Second)))
	require.Equal(t, time.Duration(0), l.Remaining(int64(11*time.Second)))
	require.Equal(t, time.Duration(math.MaxInt64), lease.Lease{Deadline: math.MaxInt64}.Remaining(math.MinInt64))
}

func TestRemainingProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		l := lease.Lease{Deadline: edgy.Draw(t, "deadline")}
		now := edgy.Draw(t, "now")

		want := new(big.Int).Sub(big.NewInt(l.Deadline), big.NewInt(now))
		if want.Cmp(zero) < 0 {
			want = zero
		}
		if want.Cmp(maxInt64) > 0 {
			want = maxInt64
		}
		got := l.Remaining(now)
		require.Equal(t, want.Int64(), int64(got))
		if got > 0 {
			require.False(t, l.Expired(now))
		}
	})
}

func TestExtend(t *testing.T) {
	require.Equal(t, int64(25), lease.Extend(20, 10, 15), "a new leader extends by one lease duration")
	require.Equal(t, int64(30), lease.Extend(30, 10, 15), "but never shortens")
	require.Equal(t, int64(math.MaxInt64), lease.Extend(0, math.MaxInt64, time.Hour))
}
