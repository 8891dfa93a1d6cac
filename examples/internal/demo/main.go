package demo

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
)

// Main is an example's main after its flags are registered on
// flag.CommandLine: it parses them, calls apply (what Flags returned), and
// runs run on standard output until it returns or the process is
// interrupted. An error is printed as "prog: error" and exits with
// status 1.
func Main(prog string, apply func(), run func(ctx context.Context, out io.Writer) error) {
	flag.Parse()
	apply()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", prog, err)
		os.Exit(1)
	}
}
