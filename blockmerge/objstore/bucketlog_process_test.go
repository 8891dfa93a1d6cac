//go:build unix

package objstore_test

import (
	"testing"

	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/blockmerge/objstore/versitytest"
	"github.com/compactkit/compactkit/bucketlog/bucketlogtest"
)

// TestS3CoordinatorProcess is the body of a coordinator process of
// TestS3CoordinatorsSIGKILL (it does nothing in a normal run): its bucket
// is on the server the test started.
func TestS3CoordinatorProcess(t *testing.T) {
	bucketlogtest.CoordinatorProcess(t, func(t *testing.T) blockmerge.Store { return versitytest.FromEnv(t, 0) })
}

// Four coordinator processes on one bucket of a real S3 server (versitygw,
// conditional puts with If-None-Match: *), killed with SIGKILL and
// restarted ten times, one paused past a truncation and resumed: see
// bucketlogtest.RunCoordinators for what is checked.
func TestS3CoordinatorsSIGKILL(t *testing.T) {
	v := versitytest.Start(t)
	store, bucket := v.ConditionalStore(t, 0)
	bucketlogtest.RunCoordinators(t, bucketlogtest.Coordinators{
		Test:  "TestS3CoordinatorProcess",
		Env:   []string{v.Env(bucket)},
		Store: store,
	})
}

// Eight serverless worker processes — each its own node of the log, no
// coordinator — on one bucket of the S3 server, ingesting and compacting,
// killed with SIGKILL and restarted ten times, one paused past a
// truncation: the same checks as TestS3CoordinatorsSIGKILL, and the
// data's, as in the FileStore test.
func TestS3ServerlessWorkersSIGKILL(t *testing.T) {
	v := versitytest.Start(t)
	store, bucket := v.ConditionalStore(t, 0)
	bucketlogtest.RunCoordinators(t, bucketlogtest.Coordinators{
		Test:       "TestS3CoordinatorProcess",
		Env:        []string{v.Env(bucket)},
		Store:      store,
		Processes:  8,
		Serverless: true,
		Data:       true,
	})
}
