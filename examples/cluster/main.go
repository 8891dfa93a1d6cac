// Command cluster runs compactkit on a three-node hashicorp/raft cluster
// in one process: nodes over loopback TCP with raft-boltdb stores in a
// temporary directory, each serving the HTTP endpoints, a shared
// filesystem object store, and workers as goroutines that follow the
// leader. Halfway through the ingest the leader is shut down, twice, and
// restarted as a follower. It reports the leader changes and the jobs
// reassigned, runs examples/demo's verification, and compares the three
// replicas' snapshots byte for byte. It exits non-zero if any check fails.
//
//	go run ./examples/cluster
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/compactkit/compactkit/examples/internal/demo"
)

// config is the cluster example's configuration.
type config struct {
	Run demo.Config
	// Kills is the number of times the leader is shut down and restarted;
	// Down how long it stays down.
	Kills int
	Down  time.Duration
	// Sync makes BoltDB fsync (off by default: a demo on a laptop).
	Sync bool
	// Chart is the chart's path (.png or .svg); "" writes none.
	Chart string
}

func defaultConfig() config {
	cfg := config{Run: demo.DefaultConfig(), Kills: 2, Down: time.Second,
		Chart: filepath.Join(os.TempDir(), "compactkit-cluster.png")}
	cfg.Run.PartitionWorkers = 0
	cfg.Run.FlushInterval = 30 * time.Millisecond
	return cfg
}

func main() {
	cfg := defaultConfig()
	apply := demo.Flags(flag.CommandLine, &cfg.Run, &cfg.Chart)
	flag.IntVar(&cfg.Kills, "kills", cfg.Kills, "times the leader is shut down and restarted during the ingest")
	flag.DurationVar(&cfg.Down, "down", cfg.Down, "how long a shut-down leader stays down")
	flag.BoolVar(&cfg.Sync, "sync", false, "fsync the raft logs")
	demo.Main("cluster", &cfg, apply, run)
}

// result is what the cluster example reports beyond the run's report.
type result struct {
	*demo.Report
	// Leaders is the sequence of leaders seen; Events the shutdowns,
	// elections and restarts.
	Leaders []string
	Events  []string
	// SnapshotsEqual reports that the three replicas' snapshots are
	// byte-identical.
	SnapshotsEqual bool
}

// run runs the cluster example and prints its summary to out.
func run(ctx context.Context, cfg config, out io.Writer) (*result, error) {
	if err := cfg.Run.Validate(); err != nil {
		return nil, err
	}
	if cfg.Kills < 0 {
		return nil, fmt.Errorf("kills %d: want 0 or more", cfg.Kills)
	}
	dir, store, closeWorkspace, err := cfg.Run.Workspace("compactkit-cluster-")
	if err != nil {
		return nil, err
	}
	defer closeWorkspace()

	cl, err := newCluster(dir, 3, !cfg.Sync)
	if err != nil {
		return nil, err
	}
	defer cl.shutdown()
	fmt.Fprintf(out, "compactkit cluster: 3 hashicorp/raft nodes on loopback TCP, raft-boltdb stores in %s\n", dir)
	for _, m := range cl.members {
		fmt.Fprintf(out, "  %s  raft %s  http %s (status page: http://%s/admin/, metrics: /metrics)\n", m.id, m.raftAddr, "http://"+m.httpAddr, m.httpAddr)
	}
	fmt.Fprintf(out, "leader: %s; the leader is shut down %d times during the ingest\n\n", cl.leader().id, cfg.Kills)

	env := demo.Env{Peers: cl.peers(), Nodes: cl.services, Store: store}
	for range cfg.Kills {
		env.Disruptions = append(env.Disruptions, func(ctx context.Context) error { return cl.killLeader(ctx, cfg.Down) })
	}
	cl.start = time.Now()
	rep, err := demo.Run(ctx, env, cfg.Run, out)
	res := &result{Report: rep}
	close(cl.stopW)
	<-cl.doneW
	cl.mu.Lock()
	res.Leaders, res.Events = append([]string(nil), cl.leaders...), append([]string(nil), cl.events...)
	marks := append([]float64(nil), cl.marks...)
	cl.mu.Unlock()
	if rep == nil {
		return nil, err
	}

	if err == nil || errors.Is(err, demo.ErrVerification) {
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		ok, detail, serr := cl.compareSnapshots(sctx)
		cancel()
		if serr != nil {
			err = errors.Join(err, serr)
		} else {
			res.SnapshotsEqual = ok
			rep.Verification.Checks = append(rep.Verification.Checks, demo.Check{Name: "replicas identical", OK: ok, Detail: detail})
			if !ok && err == nil {
				err = fmt.Errorf("%w: replicas' snapshots differ", demo.ErrVerification)
			}
		}
	}
	if rep.Verification.Checks != nil {
		demo.WriteSummary(out, rep,
			[2]string{"leader changes", fmt.Sprintf("%d (%s)", max(len(res.Leaders)-1, 0), strings.Join(res.Leaders, " → "))},
			[2]string{"jobs reassigned", fmt.Sprintf("%d after a lost lease (an election extends every lease, so healthy jobs keep theirs)", rep.Scheduler.Reassigned)})
		fmt.Fprintln(out, "\nevents")
		for _, e := range res.Events {
			fmt.Fprintln(out, "  "+e)
		}
	}
	kept := ""
	if cfg.Run.Keep {
		kept = "raft directories and object store kept in " + dir
	}
	demo.Conclude(out, cfg.Chart, "compactkit cluster: blocks queued per level (dashed red: leader shut down)", rep.Samples, marks, kept,
		"verification passed: every record exactly once, nothing left behind, replicas identical", err)
	return res, err
}
