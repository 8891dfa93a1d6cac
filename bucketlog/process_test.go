//go:build unix

package bucketlog_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/bucketlog/bucketlogtest"
)

// fileStoreEnv gives the coordinator processes their FileStore's
// directory.
const fileStoreEnv = "BUCKETLOG_TEST_FILESTORE"

func fileStore(t testing.TB, dir string) blockmerge.Store {
	s, err := blockmerge.NewFileStore(dir, blockmerge.WithoutSync())
	require.NoError(t, err)
	return s
}

// TestCoordinatorProcess is the body of a coordinator process of
// TestCoordinatorsSIGKILL (it does nothing in a normal run).
func TestCoordinatorProcess(t *testing.T) {
	bucketlogtest.CoordinatorProcess(t, func(t *testing.T) blockmerge.Store { return fileStore(t, os.Getenv(fileStoreEnv)) })
}

// Four coordinator processes on one FileStore directory, killed with
// SIGKILL and restarted ten times, one paused past a truncation and
// resumed: see bucketlogtest.RunCoordinators for what is checked.
func TestCoordinatorsSIGKILL(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bucket")
	bucketlogtest.RunCoordinators(t, bucketlogtest.Coordinators{
		Test:  "TestCoordinatorProcess",
		Env:   []string{fileStoreEnv + "=" + dir},
		Store: fileStore(t, dir),
	})
}

// Eight serverless worker processes — each its own node of the log, no
// coordinator — on one FileStore directory, ingesting and compacting,
// killed with SIGKILL and restarted ten times, one paused past a
// truncation: the same checks as TestCoordinatorsSIGKILL, and the data's
// — real blocks merged by worker.Worker, every record exactly once in the
// final blocks after a drain, nothing left behind.
func TestServerlessWorkersSIGKILL(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bucket")
	bucketlogtest.RunCoordinators(t, bucketlogtest.Coordinators{
		Test:       "TestCoordinatorProcess",
		Env:        []string{fileStoreEnv + "=" + dir},
		Store:      fileStore(t, dir),
		Processes:  8,
		Serverless: true,
		Data:       true,
	})
}
