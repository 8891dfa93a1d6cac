package compactkit

import (
	"strconv"

	"github.com/compactkit/compactkit/fencing"
)

// BlockPrefix is the object-key prefix under which every block is stored.
const BlockPrefix = "blocks/"

// ObjectKey returns the object-store key of the block with the given ID.
func ObjectKey(id string) string { return BlockPrefix + id }

// AttemptPrefix returns the object-key prefix under which the attempt of
// job with the given token writes its outputs. Every attempt has its own
// prefix, so the outputs of an attempt that ends without being committed
// (an orphan) can be deleted whole by a [TombstonePrefix] tombstone.
func AttemptPrefix(job string, token fencing.Token) string {
	return BlockPrefix + job + "/" + strconv.FormatUint(uint64(token), 10) + "/"
}

// OutputID returns the ID of the n-th output block of the attempt of job
// with the given token. ObjectKey(OutputID(job, token, n)) lies under
// AttemptPrefix(job, token), and the IDs are deterministic, so a retried
// merge writes the same objects.
func OutputID(job string, token fencing.Token, n int) string {
	return job + "/" + strconv.FormatUint(uint64(token), 10) + "/" + strconv.Itoa(n)
}
