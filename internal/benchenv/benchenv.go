// Package benchenv reads the sizes the comparison harness sets for the
// workload benchmarks (W1–W4) from the environment, so that the
// benchmarks of every package read them alike.
package benchenv

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// Sizes returns the comma-separated positive sizes in $VS_SIZES, or def
// when it is unset; a malformed value fails tb.
func Sizes(tb testing.TB, def ...int) []int {
	s := os.Getenv("VS_SIZES")
	if s == "" {
		return def
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			tb.Fatalf("VS_SIZES=%q: %q is not a positive size", s, f)
		}
		out = append(out, n)
	}
	return out
}

// Int returns the positive integer in the environment variable name, or
// def when it is unset; a malformed value fails tb.
func Int(tb testing.TB, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n <= 0 {
		tb.Fatalf("%s=%q is not a positive number", name, s)
	}
	return n
}
