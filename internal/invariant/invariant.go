// Package invariant decides what a broken invariant does. Code that
// believes an error unreachable (Apply's bookkeeping between components
// that checked each other a moment before) reports it here rather than
// discarding it: in test binaries and in builds with the "invariants" tag
// it panics, so that the tests and the simulation stop at the first
// violation; in production it is counted and logged by the caller, and
// the state machine goes on.
package invariant

import "testing"

// Panics reports whether a broken invariant panics: in a test binary, or
// in a build with the "invariants" tag.
func Panics() bool { return enabled || testing.Testing() }
