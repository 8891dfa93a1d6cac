// Command bucket runs compactkit with nothing but a directory as its
// bucket: the compaction log is objects created if absent in the same
// directory as the blocks (package bucketlog), served by three
// coordinators at once — no Raft, no election — to workers that merge
// blocks and clean up. It ingests synthetic segments, waits until the
// queue has drained, prints the same summary and verification as the
// quickstart, and exits non-zero if a check fails.
//
//	go run ./examples/bucket [-coordinators 3] [-segments N] [-workers N] [-keep]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/compactkit/compactkit/bucketlog"
	"github.com/compactkit/compactkit/examples/internal/demo"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/raftfsm"
)

type config struct {
	Run demo.Config
	// Coordinators is the number of coordinators appending to the log.
	Coordinators int
	// Dir is the parent of the temporary directory; Keep keeps it.
	Dir  string
	Keep bool
}

func main() {
	cfg := config{Run: demo.DefaultConfig()}
	chart := ""
	apply := demo.Flags(flag.CommandLine, &cfg.Run, &chart)
	flag.IntVar(&cfg.Coordinators, "coordinators", 3, "coordinators appending to the bucket log")
	flag.BoolVar(&cfg.Keep, "keep", false, "keep the bucket directory and print its path")
	flag.StringVar(&cfg.Dir, "dir", "", "parent directory of the bucket (default: the system's temporary directory)")
	flag.Parse()
	apply()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if _, err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bucket:", err)
		os.Exit(1)
	}
}

// backoff spaces the retries of a poll whose append lost a race.
func backoff(attempt int) time.Duration { return time.Duration(attempt%8+1) * time.Millisecond }

func run(ctx context.Context, cfg config, out io.Writer) (*demo.Report, error) {
	if err := cfg.Run.Validate(); err != nil {
		return nil, err
	}
	if cfg.Coordinators < 1 {
		return nil, fmt.Errorf("-coordinators %d: want at least 1", cfg.Coordinators)
	}
	dir, store, closeWorkspace, err := demo.Workspace(cfg.Dir, "compactkit-bucket-", cfg.Keep)
	if err != nil {
		return nil, err
	}
	defer closeWorkspace()

	var (
		peers []string
		logs  []*bucketlog.Log
	)
	for i := range cfg.Coordinators {
		state := demo.StateConfig()
		fsm, err := raftfsm.New(state, demo.FSMOptions()...)
		if err != nil {
			return nil, err
		}
		l, err := bucketlog.Open(ctx, store, "compaction", fsm, fmt.Sprintf("coordinator-%d-%d", i, time.Now().UnixNano()))
		if err != nil {
			return nil, err
		}
		svc := leader.New(l, fsm, leader.WithRetries(64, backoff))
		defer svc.Close()
		srv, err := demo.Serve("127.0.0.1:0", svc, nil)
		if err != nil {
			return nil, err
		}
		defer srv.Close()
		peers = append(peers, srv.URL)
		logs = append(logs, l)
	}
	fmt.Fprintf(out, "compactkit on a bucket: %d coordinators appending to one log in %s (no Raft); endpoints %v\n", cfg.Coordinators, dir, peers)
	fmt.Fprintf(out, "status page: %s/admin/\n\n", peers[0])
	rep, err := demo.Run(ctx, demo.Env{Peers: peers, Store: store}, cfg.Run, out)
	if rep == nil {
		return nil, err
	}
	if rep.Verification.Checks != nil {
		var conflicts uint64
		for _, l := range logs {
			conflicts += l.Stats().Conflicts
		}
		demo.WriteSummary(out, rep, [2]string{"bucket log", fmt.Sprintf("%d entries, %d appends lost to another coordinator and retried", logs[0].Applied(), conflicts)})
	}
	switch {
	case errors.Is(err, demo.ErrVerification):
		fmt.Fprintln(out, "\nverification FAILED")
	case err == nil:
		fmt.Fprintln(out, "\nverification passed: every record exactly once, nothing left behind")
	}
	return rep, err
}
