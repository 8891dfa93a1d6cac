// Command demo runs compactkit end to end in one process, with everything
// the quickstart leaves out: a single-node hashicorp/raft (in-memory
// stores) hosting the state machine through hraft, a filesystem object
// store in a temporary directory, synthetic ingest of small level-0
// segments across tenants and shards, and several workers compacting them
// over the worker protocol (package rpc), one of them cut off from the
// leader halfway through. It shows progress bars and serves the status page and
// Prometheus metrics while it runs, then prints a summary table and the
// full verification of the final state, writes a chart, and exits non-zero
// if any check fails. With -serve it keeps serving the status page, the
// metrics and the admin API after the run until interrupted, for
// compactctl and a browser to look at the final state.
//
//	go run ./examples/demo
//	go run ./examples/demo -serve
//	go run ./examples/demo -segments 2000 -tenants 12 -workers 8
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/examples/internal/demo"
	"github.com/compactkit/compactkit/leader"
	"github.com/compactkit/compactkit/metrics/prom"
	"github.com/compactkit/compactkit/raftfsm/hraft/hraftnode"
)

// config is the demo's configuration: the run's and where things go.
type config struct {
	Run demo.Config
	// Chart is the chart's path (.png or .svg); "" writes none.
	Chart string
	// Serve keeps the endpoints up after the run, until ctx is done.
	Serve bool
	// Store, if set, replaces the filesystem store in a temporary
	// directory (the tests run the demo on a real S3 server).
	Store blockmerge.Store
}

func main() {
	cfg := config{Run: demo.DefaultConfig(), Chart: filepath.Join(os.TempDir(), "compactkit-demo.png")}
	apply := demo.Flags(flag.CommandLine, &cfg.Run, &cfg.Chart)
	flag.BoolVar(&cfg.Serve, "serve", false, "after the run, keep serving the status page, metrics and admin API until interrupted")
	demo.Main("demo", &cfg, apply, run)
}

// run runs the demo and prints its summary to out. An error wrapping
// demo.ErrVerification means a check failed (the report says which).
func run(ctx context.Context, cfg config, out io.Writer) (rep *demo.Report, err error) {
	if err := cfg.Run.Validate(); err != nil {
		return nil, err
	}
	var store blockmerge.Store = cfg.Store
	where := "the given store"
	if store == nil {
		dir, fs, closeWorkspace, err := cfg.Run.Workspace("compactkit-demo-")
		if err != nil {
			return nil, err
		}
		defer closeWorkspace()
		store, where = fs, filepath.Join(dir, "objects")
	}

	// One raft node, in-memory log, stable store, snapshots and transport.
	state := demo.StateConfig()
	_, trans := raft.NewInmemTransport("")
	node, err := hraftnode.New(hraftnode.Config{ID: "node-1", Transport: trans, State: &state, FSMOptions: demo.FSMOptions()})
	if err != nil {
		return nil, err
	}
	defer node.Shutdown()
	if err := node.Bootstrap(); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = node.WaitServing(wctx)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("waiting for the raft node to lead: %w", err)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(prom.NewFSMCollector(node.State.Stats, prom.WithClock(time.Now)), prom.NewLeaderCollector(node.Service.Metrics))
	srv, err := demo.Serve("127.0.0.1:0", node.Service.Service, reg)
	if err != nil {
		return nil, err
	}
	defer srv.Close()

	fmt.Fprintf(out, "compactkit demo: single-node hashicorp/raft (in-memory stores), leader endpoints at %s (metrics: %s/metrics)\n", srv.URL, srv.URL)
	fmt.Fprintf(out, "status page: %s/admin/ (go run ./cmd/compactctl -addr %s/admin/ status)\n", srv.URL, srv.URL)
	fmt.Fprintf(out, "object store: %s\n\n", where)
	rep, err = demo.Run(ctx, demo.Env{Peers: []string{srv.URL}, Nodes: func() []*leader.Service { return []*leader.Service{node.Service.Service} },
		Store: store, Metrics: reg}, cfg.Run, out)
	if rep == nil {
		return nil, err
	}
	if rep.Verification.Checks != nil {
		idx, _, _ := node.State.LastApplied()
		demo.WriteSummary(out, rep, [2]string{"raft log", fmt.Sprintf("%d entries applied", idx)})
	}
	kept := ""
	if cfg.Run.Keep {
		kept = "object store kept at " + where
	}
	demo.Conclude(out, cfg.Chart, "compactkit demo: blocks queued per level, jobs, deletions pending", rep.Samples, nil, kept,
		"verification passed: every record exactly once, nothing left behind", err)
	if cfg.Serve {
		fmt.Fprintf(out, "\nserving the final state until interrupted (Ctrl-C): status page %s/admin/, metrics %s/metrics\n", srv.URL, srv.URL)
		fmt.Fprintf(out, "  go run ./cmd/compactctl -addr %s/admin/ status\n", srv.URL)
		<-ctx.Done()
	}
	return rep, err
}
