package planner

import (
	"flag"
	"os"
	"testing"
)

// TestMain runs the property tests with more cases than rapid's default
// (100), unless -rapid.checks is given: the planner's state space is large.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.checks" })
	if !set && !testing.Short() {
		if err := flag.Set("rapid.checks", "300"); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}
