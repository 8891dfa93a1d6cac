// Command compactctl is a command-line client of compactkit's admin API
// (package admin): it reads the status, jobs, tenants, quarantined blocks
// and a dry run of the next poll, and issues operator commands. Output is
// human tables by default and JSON with -o json.
//
// Usage:
//
//	compactctl [-addr URL] [-o table|json] [-H 'Header: value'] COMMAND [ARGS]
//
// Commands:
//
//	status
//	jobs [-tenant T] [-level N] [-status S] [-limit N] [-cursor C]
//	job NAME
//	tenants
//	quarantine
//	dry-run [-slots N]
//	pause -tenant T [-level N] | pause -level N
//	resume -tenant T [-level N] | resume -level N
//	retry [-job NAME]
//	cancel -job NAME
//	requeue BLOCK...               (also clears marks)
//	mark [-reason TEXT] BLOCK...    (do not compact: quarantined until requeued)
//	set-max-failures N
//	fsck
//	fsck-remove KEY...
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "compactctl:", err)
		os.Exit(1)
	}
}
