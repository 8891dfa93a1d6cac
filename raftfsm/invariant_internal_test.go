package raftfsm

import (
	"errors"
	"testing"
)

// An error Apply believes unreachable panics in tests (and under the
// "invariants" build tag); nil is no violation.
func TestBrokenInvariantPanicsInTests(t *testing.T) {
	st := &state{}
	st.invariant(nil, "nothing")
	defer func() {
		if recover() == nil {
			t.Fatal("a broken invariant did not panic in a test binary")
		}
		if st.broken != 0 {
			t.Fatalf("counted %d: a panicking build does not count", st.broken)
		}
	}()
	st.invariant(errors.New("claim without a job"), "claim of j1")
}
