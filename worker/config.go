package worker

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"time"

	"github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
)

// Client is the worker's transport to the leader: one poll request, one
// response. The examples use HTTP; tests use an in-process fake.
//
// An error means the request may or may not have reached the leader: the
// worker retries the same request (same sequence number, same content),
// which the state machine answers with its recorded response if it already
// applied it. The exception is an error wrapping [compactkit.ErrRejected]: the leader
// refused the request as invalid without applying it. Poll must not modify req, and must return promptly once ctx is
// done.
type Client interface {
	Poll(ctx context.Context, req *compactkit.PollRequest) (*compactkit.PollResponse, error)
}

// ClientFunc adapts a function to [Client].
type ClientFunc func(ctx context.Context, req *compactkit.PollRequest) (*compactkit.PollResponse, error)

// Poll calls f.
func (f ClientFunc) Poll(ctx context.Context, req *compactkit.PollRequest) (*compactkit.PollResponse, error) {
	return f(ctx, req)
}

// Defaults of [Config].
const (
	// defaultMaxReports is the state machine's default limit
	// (raftfsm.DefaultLimits.MaxReports).
	defaultMaxReports      = 1024
	defaultPollInterval    = time.Second
	defaultRetryBackoff    = 100 * time.Millisecond
	defaultCleanupTimeout  = time.Minute
	defaultShutdownTimeout = 10 * time.Second
)

// Config configures a [Worker]. The zero value is usable: every zero field
// takes its default.
type Config struct {
	// ID identifies the worker to the leader. It must be unique per
	// process incarnation: the state machine records responses by (worker
	// ID, sequence number) and sequence numbers restart at 1 with every
	// Worker, so a restarted worker reusing an old ID would be answered its
	// predecessor's recorded responses. Empty means NewID("worker"); use
	// [NewID] for a readable unique ID.
	ID string
	// Concurrency is the number of jobs run at once (default
	// runtime.GOMAXPROCS(0)). Free slots are Concurrency minus the jobs in
	// progress.
	Concurrency int
	// MaxReports is the most status updates one poll carries (default
	// 1024, the state machine's default limit; set it to the
	// cluster's limit if that was changed). A worker holding more jobs
	// reports them over successive polls, sent at once: final reports
	// first, then the jobs reported longest ago.
	MaxReports int
	// PollInterval is how often the worker polls when nothing else makes
	// it poll (default a second). It also polls at once when a
	// job ends and whenever a lease needs renewing (every half lease), so
	// leases are kept whatever the interval.
	PollInterval time.Duration
	// RetryBackoff is the wait before retrying a request that failed in
	// transport (default 100 ms); it doubles after each
	// further failure, up to the larger of RetryBackoff and PollInterval.
	// It is also the keeper's first wait after a failed renewal.
	RetryBackoff time.Duration
	// CleanupTimeout bounds the deletion of a job's tombstones (default
	// a minute). A job whose deletions do not finish in time
	// reports a failure.
	CleanupTimeout time.Duration
	// ShutdownTimeout bounds each phase of a shutdown: waiting for the
	// cancelled jobs to stop, then getting the final poll answered
	// (default 10 s).
	ShutdownTimeout time.Duration
	// MergeOptions are passed to [blockmerge.Merge] (a dataset merger, the
	// index's metadata of the sources) by the default runner.
	MergeOptions []blockmerge.Option
	// Runner merges a job's sources in the host's block format (default:
	// blockmerge.Merge with MergeOptions). See [Runner] for what it must
	// do.
	Runner Runner
	// Layout says which objects make up a block, for deleting the blocks
	// that tombstones name (default blockmerge.ObjectLayout, blockmerge's
	// format). A Runner that writes several objects per block sets
	// blockmerge.PrefixLayout.
	Layout blockmerge.Layout
	// Logger receives the worker's reports of polls, jobs and leases
	// (default: none are logged).
	Logger *slog.Logger
}

// Errors of the worker.
var (
	// ErrInvalidConfig reports an invalid configuration or argument to
	// [New].
	ErrInvalidConfig = errors.New("worker: invalid configuration")
	// ErrAlreadyStarted reports a second call to [Worker.Run].
	ErrAlreadyStarted = errors.New("worker: already started")
	// ErrShutdown is the cause with which the contexts of the jobs in
	// progress are cancelled when the worker shuts down, and what the error
	// of a shutdown that did not complete in time wraps: jobs still
	// running, or the final poll not answered. The leader then reassigns
	// the jobs once their leases expire.
	ErrShutdown = errors.New("worker: shutting down")
)

// NewID returns a worker ID unique to this call: name (default "worker"),
// a dash and a random suffix of 26 base-32 characters. Use it once per
// process incarnation (see [Config.ID]).
func NewID(name string) string {
	if name == "" {
		name = "worker"
	}
	suffix := "-" + rand.Text()
	if len(name)+len(suffix) > compactkit.MaxNameLen {
		name = name[:compactkit.MaxNameLen-len(suffix)]
	}
	return name + suffix
}

// withDefaults returns cfg with its zero fields defaulted, or an error
// naming the first invalid one.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.ID == "" {
		cfg.ID = NewID("worker")
	}
	probe := compactkit.PollRequest{WorkerID: cfg.ID, Seq: 1}
	if err := probe.Validate(); err != nil {
		return cfg, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if cfg.Concurrency < 0 || cfg.Concurrency > 1<<20 {
		return cfg, fmt.Errorf("%w: concurrency %d", ErrInvalidConfig, cfg.Concurrency)
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = runtime.GOMAXPROCS(0)
	}
	if cfg.MaxReports < 0 {
		return cfg, fmt.Errorf("%w: max reports %d", ErrInvalidConfig, cfg.MaxReports)
	}
	if cfg.MaxReports == 0 {
		cfg.MaxReports = defaultMaxReports
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"poll interval", &cfg.PollInterval, defaultPollInterval},
		{"retry backoff", &cfg.RetryBackoff, defaultRetryBackoff},
		{"cleanup timeout", &cfg.CleanupTimeout, defaultCleanupTimeout},
		{"shutdown timeout", &cfg.ShutdownTimeout, defaultShutdownTimeout},
	} {
		if *d.v < 0 {
			return cfg, fmt.Errorf("%w: %s %v", ErrInvalidConfig, d.name, *d.v)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.MergeOptions = append([]blockmerge.Option(nil), cfg.MergeOptions...)
	if cfg.Layout > blockmerge.PrefixLayout {
		return cfg, fmt.Errorf("%w: layout %d", ErrInvalidConfig, cfg.Layout)
	}
	return cfg, nil
}
