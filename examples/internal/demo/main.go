package demo

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
)

// Main is an example's main once its flags are registered on
// flag.CommandLine (bound to *cfg): it parses them, calls apply (what
// Flags returned), and runs run with *cfg on standard output until it
// returns or the process is interrupted. An error is printed as
// "prog: error" and exits with status 1.
func Main[C, R any](prog string, cfg *C, apply func(), run func(context.Context, C, io.Writer) (R, error)) {
	flag.Parse()
	apply()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	_, err := run(ctx, *cfg, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", prog, err)
		os.Exit(1)
	}
}
