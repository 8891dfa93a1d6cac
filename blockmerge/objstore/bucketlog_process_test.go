//go:build unix

package objstore_test

import (
	"testing"

	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/blockmerge/objstore/versitytest"
	"github.com/compactkit/compactkit/bucketlog/bucketlogtest"
)

// TestS3CoordinatorProcess is the body of a process of
// TestS3ProcessesSIGKILL (it does nothing in a normal run): its bucket is
// on the server the test started.
func TestS3CoordinatorProcess(t *testing.T) {
	bucketlogtest.CoordinatorProcess(t, func(t *testing.T) blockmerge.Store { return versitytest.FromEnv(t, 0) })
}

// Four coordinator processes, then eight serverless worker processes on
// real data, each run on one bucket of a real S3 server (versitygw,
// conditional puts with If-None-Match: *), killed with SIGKILL and
// restarted ten times, one paused past a truncation and resumed: see
// bucketlogtest.RunProcesses for what is checked.
func TestS3ProcessesSIGKILL(t *testing.T) {
	v := versitytest.Start(t)
	bucketlogtest.RunProcesses(t, "TestS3CoordinatorProcess", func(t *testing.T) bucketlogtest.Bucket {
		store, bucket := v.ConditionalStore(t, 0)
		return bucketlogtest.Bucket{Env: []string{v.Env(bucket)}, Store: store}
	})
}
