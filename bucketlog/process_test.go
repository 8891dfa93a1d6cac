//go:build unix

package bucketlog_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/bucketlog/bucketlogtest"
)

// fileStoreEnv gives the processes their FileStore's directory.
const fileStoreEnv = "BUCKETLOG_TEST_FILESTORE"

// TestCoordinatorProcess is the body of a process of
// TestProcessesSIGKILL (it does nothing in a normal run).
func TestCoordinatorProcess(t *testing.T) {
	bucketlogtest.CoordinatorProcess(t, func(t *testing.T) blockmerge.Store { return newFileStore(t, os.Getenv(fileStoreEnv)) })
}

// Four coordinator processes, then eight serverless worker processes on
// real data, each run on one FileStore directory, killed with SIGKILL and
// restarted ten times, one paused past a truncation and resumed: see
// bucketlogtest.RunProcesses for what is checked.
func TestProcessesSIGKILL(t *testing.T) {
	bucketlogtest.RunProcesses(t, "TestCoordinatorProcess", func(t *testing.T) bucketlogtest.Bucket {
		dir := filepath.Join(t.TempDir(), "bucket")
		return bucketlogtest.Bucket{Env: []string{fileStoreEnv + "=" + dir}, Store: newFileStore(t, dir)}
	})
}
