package fencing_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/compactkit/compactkit/fencing"
)

func TestOwns(t *testing.T) {
	tests := []struct {
		name       string
		inProgress bool
		held       fencing.Token
		presented  fencing.Token
		want       bool
	}{
		{"current token", true, 7, 7, true},
		{"older token", true, 7, 6, false},
		{"forged newer token", true, 7, 8, false},
		{"not in progress", false, 7, 7, false},
		{"not in progress, other token", false, 7, 3, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, fencing.Owns(tt.inProgress, tt.held, tt.presented))
		})
	}
}

// TestOwnsMatchesNotOlderForHonestWorkers checks the claim of the package
// documentation: for tokens the scheduler issued (never above the held one),
// equality and "not older than" agree; they differ only on forged tokens.
func TestOwnsMatchesNotOlderForHonestWorkers(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		held := fencing.Token(rapid.Uint64().Draw(t, "held"))
		presented := fencing.Token(rapid.Uint64().Draw(t, "presented"))
		inProgress := rapid.Bool().Draw(t, "inProgress")
		notOlder := inProgress && presented >= held
		if presented <= held {
			require.Equal(t, notOlder, fencing.Owns(inProgress, held, presented))
		} else {
			require.False(t, fencing.Owns(inProgress, held, presented), "a forged larger token must be rejected")
		}
	})
}

func TestGuardZeroValue(t *testing.T) {
	var g fencing.Guard
	_, ok := fencing.Highest(&g, "job-a")
	require.False(t, ok)
	g.Forget("job-a") // forgetting an unknown resource is a no-op
	require.NoError(t, g.Check("job-a", 5))
	h, ok := fencing.Highest(&g, "job-a")
	require.True(t, ok)
	require.Equal(t, fencing.Token(5), h)
}

func TestGuardCheck(t *testing.T) {
	var g fencing.Guard
	require.NoError(t, g.Check("job-a", 10))
	require.NoError(t, g.Check("job-a", 10), "an equal token is accepted")
	require.NoError(t, g.Check("job-a", 12), "a newer token is accepted")

	err := g.Check("job-a", 11)
	require.ErrorIs(t, err, fencing.ErrStaleToken)
	require.Contains(t, err.Error(), `"job-a"`)
	require.Contains(t, err.Error(), "11")
	require.Contains(t, err.Error(), "12")

	h, ok := fencing.Highest(&g, "job-a")
	require.True(t, ok)
	require.Equal(t, fencing.Token(12), h, "a rejected token does not change the highest")

	require.NoError(t, g.Check("job-b", 1), "resources are independent")
}

func TestGuardForget(t *testing.T) {
	var g fencing.Guard
	require.NoError(t, g.Check("job-a", 10))
	require.NoError(t, g.Check("job-b", 20))
	g.Forget("job-a")

	_, ok := fencing.Highest(&g, "job-a")
	require.False(t, ok)
	require.NoError(t, g.Check("job-a", 3), "after Forget an old token is accepted again")

	h, ok := fencing.Highest(&g, "job-b")
	require.True(t, ok)
	require.Equal(t, fencing.Token(20), h, "Forget leaves other resources alone")
}

// TestGuardProperty runs random Check/Forget sequences against a model
// map and checks that, per resource, accepted tokens never decrease and a
// stale token is never accepted after a newer one.
func TestGuardProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var g fencing.Guard
		model := map[string]fencing.Token{}
		// accepted holds the tokens accepted per resource since it was last forgotten.
		accepted := map[string][]fencing.Token{}
		resource := rapid.SampledFrom([]string{"a", "b", "c"})
		token := rapid.Custom(func(t *rapid.T) fencing.Token {
			return fencing.Token(rapid.Uint64Range(0, 20).Draw(t, "token"))
		})

		t.Repeat(map[string]func(*rapid.T){
			"check": func(t *rapid.T) {
				r := resource.Draw(t, "resource")
				tok := token.Draw(t, "token")
				err := g.Check(r, tok)
				if h, ok := model[r]; ok && tok < h {
					require.ErrorIs(t, err, fencing.ErrStaleToken)
					return
				}
				require.NoError(t, err)
				model[r] = max(model[r], tok)
				accepted[r] = append(accepted[r], tok)
			},
			"forget": func(t *rapid.T) {
				r := resource.Draw(t, "resource")
				g.Forget(r)
				delete(model, r)
				delete(accepted, r)
			},
			"highest": func(t *rapid.T) {
				r := resource.Draw(t, "resource")
				h, ok := fencing.Highest(&g, r)
				want, wantOK := model[r]
				require.Equal(t, wantOK, ok)
				require.Equal(t, want, h)
			},
			"": func(t *rapid.T) {
				for r, toks := range accepted {
					for i := 1; i < len(toks); i++ {
						require.LessOrEqual(t, toks[i-1], toks[i], "accepted tokens of %q decreased: %v", r, toks)
					}
				}
			},
		})
	})
}

// TestGuardConcurrent hammers one Guard from many goroutines (run with -race).
// Each goroutine presents tokens in increasing order; a rejection must be
// justified by a newer token recorded by some other goroutine.
func TestGuardConcurrent(t *testing.T) {
	const (
		goroutines = 32
		tokens     = 200
	)
	resources := []string{"job-a", "job-b", "job-c"}
	var g fencing.Guard
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for w := range goroutines {
		wg.Go(func() {
			for i := range tokens {
				r := resources[(w+i)%len(resources)]
				tok := fencing.Token(i*goroutines + w)
				err := g.Check(r, tok)
				if err == nil {
					continue
				}
				if !errors.Is(err, fencing.ErrStaleToken) {
					errs <- fmt.Errorf("unexpected error: %w", err)
					return
				}
				if h, ok := fencing.Highest(&g, r); !ok || h <= tok {
					errs <- fmt.Errorf("token %d for %s rejected, but highest is %d (%v)", tok, r, h, ok)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	// Every resource ends at the largest token any goroutine presented for it.
	for _, r := range resources {
		var want fencing.Token
		for w := range goroutines {
			for i := range tokens {
				if resources[(w+i)%len(resources)] == r {
					want = max(want, fencing.Token(i*goroutines+w))
				}
			}
		}
		h, ok := fencing.Highest(&g, r)
		require.True(t, ok)
		require.Equal(t, want, h, r)
	}
}
