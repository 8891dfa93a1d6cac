package lease_test

import (
	"math"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/compactkit/compactkit/lease"
)

// edgy draws int64 values with the boundaries over-represented.
var edgy = rapid.OneOf(
	rapid.Int64(),
	rapid.SampledFrom([]int64{math.MinInt64, math.MinInt64 + 1, -1, 0, 1, math.MaxInt64 - 1, math.MaxInt64}),
	rapid.Int64Range(math.MaxInt64-int64(time.Hour), math.MaxInt64),
)

var maxInt64 = big.NewInt(math.MaxInt64)

// addModel is t + max(d, 0), saturating at MaxInt64, computed exactly.
func addModel(t int64, d time.Duration) int64 {
	sum := new(big.Int).Add(big.NewInt(t), big.NewInt(max(int64(d), 0)))
	if sum.Cmp(maxInt64) > 0 {
		return math.MaxInt64
	}
	return sum.Int64()
}

func TestGrant(t *testing.T) {
	require.Equal(t, 1_000+int64(15*time.Second), lease.Grant(1_000, 15*time.Second))
	require.Equal(t, int64(math.MaxInt64), lease.Grant(math.MaxInt64-10, 11), "saturates")
	require.Equal(t, int64(1_000), lease.Grant(1_000, -time.Second), "a negative duration counts as zero")
}

func TestGrantProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		now := edgy.Draw(t, "now")
		d := time.Duration(edgy.Draw(t, "d"))

		deadline := lease.Grant(now, d)
		require.Equal(t, addModel(now, d), deadline)
		require.GreaterOrEqual(t, deadline, now, "a deadline never wraps into the past")
	})
}

func TestExtendProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		deadline := edgy.Draw(t, "deadline")
		now := edgy.Draw(t, "now")
		d := time.Duration(edgy.Draw(t, "d"))

		got := lease.Extend(deadline, now, d)
		require.GreaterOrEqual(t, got, deadline, "extending never shortens")
		require.Equal(t, max(deadline, addModel(now, d)), got)
		require.Equal(t, got, lease.Extend(got, now, d), "extending twice at the same time changes nothing")
	})
}

func TestExtend(t *testing.T) {
	require.Equal(t, int64(25), lease.Extend(20, 10, 15), "a new leader extends by one lease duration")
	require.Equal(t, int64(30), lease.Extend(30, 10, 15), "but never shortens")
	require.Equal(t, int64(math.MaxInt64), lease.Extend(0, math.MaxInt64, time.Hour))
}
