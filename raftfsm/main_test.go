package raftfsm_test

import (
	"flag"
	"os"
	"testing"
)

// TestMain runs the whole-state-machine property test with 40 cases rather
// than rapid's default 100 unless -rapid.checks is given: each case drives
// two replicas through dozens of entries and compares their snapshots after
// every step, and the default test run must stay quick. Run it longer with
// -rapid.checks=1000.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.checks" })
	if !set {
		if err := flag.Set("rapid.checks", "40"); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}
