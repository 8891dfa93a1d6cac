package blockmerge

import (
	"log/slog"

	"github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/fencing"
)

// Option configures [Merge], [NewWriter] and [WriteBlock]. Options that do
// not apply to a function are ignored by it.
type Option func(*options)

type options struct {
	pageSize int
	logger   *slog.Logger
	merger   DatasetMerger
	tempDir  string
	guard    *fencing.Guard
	sources  []compactkit.BlockMeta
}

func buildOptions(opts []Option) options {
	o := options{pageSize: DefaultPageSize}
	for _, f := range opts {
		f(&o)
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	if o.merger == nil {
		o.merger = RecordMerger{}
	}
	o.pageSize = min(max(o.pageSize, MinPageSize), MaxPageSize)
	return o
}

// WithPageSize sets the bound on the payload of the pages written
// (default [DefaultPageSize], clamped to [MinPageSize, MaxPageSize]). A
// merge's memory is about one page per source plus one. The page size is
// part of the output bytes: use the same one everywhere when outputs must
// be byte-identical.
func WithPageSize(n int) Option { return func(o *options) { o.pageSize = n } }

// WithLogger sets the logger of a merge (default: discard).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithDatasetMerger sets the merger of datasets (default [RecordMerger]).
func WithDatasetMerger(m DatasetMerger) Option { return func(o *options) { o.merger = m } }

// WithTempDir sets the directory of the staging files used to write
// outputs to stores that cannot stream a write themselves (see
// [CreateObject]); default: the system's temporary directory.
func WithTempDir(dir string) Option { return func(o *options) { o.tempDir = dir } }

// WithGuard makes [Merge] write through a [FencedStore] checking the
// attempt's token with g (resource: the job name).
func WithGuard(g *fencing.Guard) Option { return func(o *options) { o.guard = g } }

// WithSources gives [Merge] the metadata the index holds for the job's
// sources. Merge then checks each source's footer against it before
// writing anything: the block's tenant, shard, level, time range and size,
// and every dataset's tenant, name, size, record count and time range. A
// dataset the index lists but the block lacks is an error wrapping
// [ErrNoDataset]; any other difference wraps compactkit.ErrInconsistent;
// both name the object and the dataset. Sources without metadata here are
// not checked; metadata of a block that is not a source of the plan is an
// error.
func WithSources(metas ...compactkit.BlockMeta) Option {
	return func(o *options) { o.sources = append(o.sources, metas...) }
}
