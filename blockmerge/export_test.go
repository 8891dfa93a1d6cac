package blockmerge

import "github.com/compactkit/compactkit"

// The limits of the format, for the tests.
const (
	DefaultPageSize = defaultPageSize
	MinPageSize     = minPageSize
	MaxKeySize      = maxKeySize
)

// SortRecords is sortRecords, for the tests.
var SortRecords = sortRecords

// DatasetInfo is one entry of a block's dataset index: the dataset's
// metadata (Tenant as stored) and where its section lies.
type DatasetInfo struct {
	compactkit.DatasetMeta
	Offset int64
	CRC    uint32
}

// Datasets returns r's dataset index, in (tenant, name) order.
func Datasets(r *Reader) []DatasetInfo {
	out := make([]DatasetInfo, len(r.meta.Datasets))
	for i, d := range r.meta.Datasets {
		out[i] = DatasetInfo{DatasetMeta: d, Offset: r.sections[i].Offset, CRC: r.sections[i].CRC}
	}
	return out
}

// DatasetAt is r.datasetAt, for the tests.
var DatasetAt = (*Reader).datasetAt

// NewWriter is newWriter, for the tests.
var NewWriter = newWriter

// WithPageSize is withPageSize, for the tests.
var WithPageSize = withPageSize
