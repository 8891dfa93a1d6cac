package blockmerge

import (
	"time"

	"github.com/compactkit/compactkit"
)

// Option configures [Merge], [WriteBlock], [NewMemStore] and
// [NewFileStore]. Options that do not apply to a function are ignored by
// it.
type Option func(*options)

type options struct {
	pageSize int // tests only: see export_test.go
	merger   DatasetMerger
	sources  []compactkit.BlockMeta
	noSync   bool             // FileStore
	clock    func() time.Time // NewMemStore
}

func buildOptions(opts []Option) options {
	o := options{pageSize: defaultPageSize}
	for _, f := range opts {
		f(&o)
	}
	if o.merger == nil {
		o.merger = MergeRecords
	}
	if o.clock == nil {
		o.clock = time.Now
	}
	o.pageSize = min(max(o.pageSize, minPageSize), maxPageSize)
	return o
}

// withPageSize sets the bound on the payload of the pages written
// (default [defaultPageSize], clamped to [minPageSize, maxPageSize]). The
// page size is part of the output bytes; only the tests change it.
func withPageSize(n int) Option { return func(o *options) { o.pageSize = n } }

// WithDatasetMerger sets the merger of datasets (default [MergeRecords]).
func WithDatasetMerger(m DatasetMerger) Option { return func(o *options) { o.merger = m } }

// WithSources gives [Merge] the metadata the index holds for the job's
// sources. Merge then checks each source's footer against it before
// writing anything: the block's tenant, shard, level, time range and size,
// and every dataset's tenant, name, size, record count and time range. A
// dataset the index lists but the block lacks is an error wrapping
// [ErrNotFound]; any other difference wraps compactkit.ErrInconsistent;
// both name the object and the dataset. Sources without metadata here are
// not checked; metadata of a block that is not a source of the plan is an
// error.
func WithSources(metas ...compactkit.BlockMeta) Option {
	return func(o *options) { o.sources = append(o.sources, metas...) }
}

// WithoutSync turns off a [FileStore]'s fsync of files and directories:
// faster, and still atomic for readers, but committed objects may be lost
// in a crash. For tests and scratch stores only.
func WithoutSync() Option { return func(o *options) { o.noSync = true } }

// WithMemClock sets the clock that stamps the modification times of a
// [NewMemStore] store ([Timestamper]; default time.Now): a simulation gives the
// store its simulated clock.
func WithMemClock(clock func() time.Time) Option { return func(o *options) { o.clock = clock } }
