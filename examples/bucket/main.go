// Command bucket runs compactkit with nothing but a directory as its
// bucket: the compaction log is objects created if absent in the same
// directory as the blocks (package bucketlog), served by three
// coordinators at once — no Raft, no election — to workers that merge
// blocks and clean up. With -serverless there are no coordinators: every
// worker follows the log in its own replica and appends its own polls
// (bucketlog.Node); one more node ingests and answers the example's
// queries. It ingests synthetic segments, waits until the queue has
// drained, prints the same summary and verification as examples/demo,
// and exits non-zero if a check fails.
//
//	go run ./examples/bucket [-coordinators 3 | -serverless] [-segments N] [-workers N] [-keep]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/compactkit/compactkit/bucketlog"
	"github.com/compactkit/compactkit/examples/internal/demo"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/worker"
)

type config struct {
	Run demo.Config
	// Coordinators is the number of coordinators appending to the log.
	Coordinators int
	// Serverless runs no coordinator: each worker its own node.
	Serverless bool
}

func main() {
	cfg := config{Run: demo.DefaultConfig()}
	chart := ""
	apply := demo.Flags(flag.CommandLine, &cfg.Run, &chart)
	flag.IntVar(&cfg.Coordinators, "coordinators", 3, "coordinators appending to the bucket log")
	flag.BoolVar(&cfg.Serverless, "serverless", false, "no coordinators: every worker schedules itself through its own replica of the log")
	demo.Main("bucket", &cfg, apply, run)
}

func run(ctx context.Context, cfg config, out io.Writer) (*demo.Report, error) {
	if err := cfg.Run.Validate(); err != nil {
		return nil, err
	}
	if cfg.Coordinators < 1 && !cfg.Serverless {
		return nil, fmt.Errorf("-coordinators %d: want at least 1", cfg.Coordinators)
	}
	dir, store, closeWorkspace, err := cfg.Run.Workspace("compactkit-bucket-")
	if err != nil {
		return nil, err
	}
	defer closeWorkspace()

	var (
		peers []string
		logs  []*bucketlog.Log
		// coordinators are the nodes the run reads the state through.
		coordinators []*leader.Service
		env          = demo.Env{Store: store}
		// closers close the workers' nodes (called one at a time by the run).
		closers []func() error
	)
	defer func() {
		for _, c := range closers {
			_ = c()
		}
	}()
	if cfg.Serverless {
		cfg.Coordinators = 1 // the ingest node: it serves the example's ingest and queries, no worker
	}
	for i := range cfg.Coordinators {
		node, err := bucketlog.OpenNode(ctx, store, "compaction", fmt.Sprintf("coordinator-%d-%d", i, time.Now().UnixNano()),
			bucketlog.NodeConfig{State: demo.StateConfig(), FSMOptions: demo.FSMOptions()})
		if err != nil {
			return nil, err
		}
		defer node.Close()
		srv, err := demo.Serve("127.0.0.1:0", node.Service, nil)
		if err != nil {
			return nil, err
		}
		defer srv.Close()
		peers = append(peers, srv.URL)
		coordinators = append(coordinators, node.Service)
		logs = append(logs, node.Log)
	}
	env.Peers = peers
	env.Nodes = func() []*leader.Service { return coordinators }
	if cfg.Serverless {
		env.WorkerClient = func(i int) (worker.Client, error) {
			node, err := bucketlog.OpenNode(ctx, store, "compaction", fmt.Sprintf("worker-%d-%d", i, time.Now().UnixNano()),
				bucketlog.NodeConfig{State: demo.StateConfig(), FSMOptions: demo.FSMOptions()})
			if err != nil {
				return nil, err
			}
			closers = append(closers, node.Close)
			logs = append(logs, node.Log)
			return node, nil
		}
		fmt.Fprintf(out, "compactkit on a bucket, serverless: %d workers each appending its own polls to one log in %s (no coordinator); the ingest node at %s\n",
			cfg.Run.Workers, dir, peers[0])
	} else {
		fmt.Fprintf(out, "compactkit on a bucket: %d coordinators appending to one log in %s (no Raft); endpoints %v\n", cfg.Coordinators, dir, peers)
	}
	fmt.Fprintf(out, "status page: %s/admin/\n\n", peers[0])
	rep, err := demo.Run(ctx, env, cfg.Run, out)
	if rep == nil {
		return nil, err
	}
	if rep.Verification.Checks != nil {
		var conflicts uint64
		for _, l := range logs {
			conflicts += l.Stats().Conflicts
		}
		demo.WriteSummary(out, rep, [2]string{"bucket log", fmt.Sprintf("%d entries, %d appends lost to another writer and retried", logs[0].Applied(), conflicts)})
	}
	switch {
	case errors.Is(err, demo.ErrVerification):
		fmt.Fprintln(out, "\nverification FAILED")
	case err == nil:
		fmt.Fprintln(out, "\nverification passed: every record exactly once, nothing left behind")
	}
	return rep, err
}
