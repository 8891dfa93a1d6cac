// Command compactctl is a command-line client of compactkit's admin API
// (package admin): it reads the status, jobs, tenants, quarantined blocks,
// scheduling policies and a dry run of the next poll, and issues operator
// commands. Output is human tables by default and JSON with -o json.
//
// Usage:
//
//	compactctl [-addr URL] [-o table|json] [-H 'Header: value'] COMMAND [ARGS]
//
// Commands:
//
//	status                         (with backpressure grades and staleness alarms)
//	jobs [-tenant T] [-level N] [-status S] [-limit N] [-cursor C]
//	job NAME
//	tenants
//	quarantine
//	dry-run [-slots N]
//	pause (-tenant T | -all) [-level N]
//	resume (-tenant T | -all) [-level N]
//	retry [-job NAME]              (without -job: every excluded job)
//	cancel -job NAME
//	requeue BLOCK...               (also clears marks)
//	mark [-reason TEXT] BLOCK...    (do not compact: quarantined until requeued)
//	set-max-failures N
//	fsck
//	fsck-remove KEY...
//	policy list
//	policy set (-tenant T | -all) [-class high|medium|low] [-cap N] [-shard-cap N]
//	    [-only-in HH:MM-HH:MM[,...] | -never-in HH:MM-HH:MM[,...]] [-days Mon,Tue] [-offset MINUTES]
//	    [-not-before RFC3339] [-slow ON/OFF] [-stop ON/OFF] [-slow-ready-batches ON/OFF] [-stop-ready-batches ON/OFF]
//	    [-shard-slow ON/OFF] [-shard-stop ON/OFF]
//	    [-stale DURATION] [-level L:blocks=N,bytes=N,age=DURATION,cross=on|off]...
//	    [-level-only-in L=HH:MM-HH:MM[,...] | -level-never-in L=HH:MM-HH:MM[,...]]...
//	policy clear (-tenant T | -all)
//	compact-now (-tenant T | -all) [-level L]
//
// pause stops new jobs of the tenant (with -all, of every tenant) at every
// level, or at -level N only; jobs in progress run to their end. resume
// undoes a pause: it names the tenant, or -all, and the level as the pause
// did. policy set replaces the whole policy of the tenant (with -all, the
// default policy of every tenant without its own): flags left out take the
// zero policy's value (class medium, no cap, no window, no threshold, no
// alarm). -cap and -shard-cap bound the tenant's jobs in progress, in all
// and on each shard. Windows open on -days (default every day) at -offset
// minutes east of UTC; an end before the start wraps past midnight. -slow
// 100/80 enters "slow" at 100 queued blocks and leaves it below 80;
// -shard-slow and -shard-stop grade each shard of the tenant apart, by its
// queued blocks. -level 0:blocks=40,age=2m gives the tenant's level-0 jobs
// up to 40 blocks and plans partial level-0 batches after 2 minutes
// (settings left out keep the cluster's); repeat it for other levels.
// -level-only-in 1=23:00-05:00 starts the tenant's new level-1 jobs only at
// night, on top of its own windows (-days and -offset apply to these
// windows too). policy clear returns a tenant to the default (with -all,
// resets the default). compact-now plans the tenant's queued blocks without
// waiting for batches to fill or age. -tenant "" names the empty tenant
// (multi-tenant segments).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if errors.Is(err, flag.ErrHelp) { // -h: the usage was asked for, and printed
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "compactctl:", err)
		os.Exit(1)
	}
}
