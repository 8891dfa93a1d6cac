package demo

import (
	"flag"
	"log/slog"
	"os"

	"golang.org/x/term"
)

// Flags registers on fs the flags the examples share: the scale of the
// data, the workers, the pacing, the chart, the temporary directory, and
// the output (progress bars, worker logs). It returns a function to call after fs.Parse, which
// applies the output flags to cfg.
func Flags(fs *flag.FlagSet, cfg *Config, chart *string) (apply func()) {
	d := &cfg.Data
	fs.IntVar(&d.Segments, "segments", d.Segments, "level-0 segments to ingest")
	fs.IntVar(&d.Tenants, "tenants", d.Tenants, "tenants")
	fs.IntVar(&d.Shards, "shards", d.Shards, "shards")
	fs.IntVar(&d.Records, "records", d.Records, "records per dataset per segment")
	fs.IntVar(&cfg.Workers, "workers", cfg.Workers, "workers")
	fs.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "jobs per worker")
	fs.IntVar(&cfg.PartitionWorkers, "cut", cfg.PartitionWorkers, "workers cut off from the leader halfway through the ingest (their jobs are reassigned)")
	fs.DurationVar(&cfg.FlushInterval, "flush", cfg.FlushInterval, "pause between ingest ticks (one segment per shard each)")
	fs.DurationVar(&cfg.DrainTimeout, "timeout", cfg.DrainTimeout, "how long to wait for compaction to finish after the ingest")
	fs.StringVar(chart, "chart", *chart, "chart file, .png or .svg (empty: no chart)")
	fs.StringVar(&cfg.Dir, "dir", cfg.Dir, "parent directory of the temporary directory (default: the system's)")
	fs.BoolVar(&cfg.Keep, "keep", cfg.Keep, "keep the temporary directory (the object store, and the raft or bucket log) and print its path")
	quiet := fs.Bool("quiet", !term.IsTerminal(int(os.Stdout.Fd())), "no progress bars (default when the output is not a terminal)")
	verbose := fs.Bool("v", false, "log the workers to stderr")
	return func() {
		cfg.Progress = !*quiet
		if *verbose {
			cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
		}
	}
}
